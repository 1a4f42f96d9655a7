package outcome

import (
	"errors"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSummarize(t *testing.T) {
	boom := errors.New("connection refused")
	for name, tc := range map[string]struct {
		progress Progress
		err      error
		want     Progress
		wantErr  bool
	}{
		"done": {progress: Done("Synced", "ok"),
			want: Progress{Ready: "True", Reason: "Synced", Message: "ok"}},
		"zero progress is ready": {
			want: Progress{Ready: "True"}},
		"working": {progress: Working("Progressing", "waiting for Argo CD", true),
			want: Progress{Ready: "False", Reason: "Progressing", Message: "waiting for Argo CD", Reconciling: true, Pending: true}},
		"user error stalls and is not retried": {progress: Done("Synced", ""), err: UserError("InvalidPath", "bad path"),
			want: Progress{Ready: "False", Reason: "InvalidPath", Message: "bad path", Stalled: true}},
		"wrapped user error": {err: fmt.Errorf("validating: %w", UserError("InvalidPath", "bad path")),
			want: Progress{Ready: "False", Reason: "InvalidPath", Message: "bad path", Stalled: true}},
		"stalled error is looked at again later": {err: StalledError("EnvironmentNotFound", "not found"),
			want: Progress{Ready: "False", Reason: "EnvironmentNotFound", Message: "not found", Stalled: true, RequeueAfter: StalledRetry}},
		"transient error keeps the generation pending": {err: TransientError("AgentBusy", time.Second, "waiting"),
			want: Progress{Ready: "False", Reason: "AgentBusy", Message: "waiting", Reconciling: true, Pending: true, RequeueAfter: time.Second}},
		"internal error hides its message and goes to the workqueue": {err: boom, wantErr: true,
			want: Progress{Ready: "False", Reason: ReasonInternalError, Message: InternalMessage, Reconciling: true, Pending: true}},
		"internal kind of Error hides its message": {err: &Error{Kind: Internal, Reason: "X", Message: "secret detail"}, wantErr: true,
			want: Progress{Ready: "False", Reason: ReasonInternalError, Message: InternalMessage, Reconciling: true, Pending: true}},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := Summarize(tc.progress, tc.err)
			if got != tc.want {
				t.Errorf("progress %+v, want %+v", got, tc.want)
			}
			if (err != nil) != tc.wantErr {
				t.Errorf("error %v, want one: %v", err, tc.wantErr)
			}
		})
	}
}

func TestApplyKeepsReconcilingAndStalledOnlyWhileTrue(t *testing.T) {
	var list []metav1.Condition
	conds := MetaConditions{List: &list, Generation: 3}
	t0 := metav1.NewTime(time.Unix(100, 0))
	Apply(conds, Working("Progressing", "wait", true), t0)
	if got := types(list); fmt.Sprint(got) != "[Ready/False Reconciling/True]" {
		t.Fatalf("working: %v", got)
	}
	Apply(conds, Failed("Degraded", "pod crashes"), metav1.NewTime(time.Unix(200, 0)))
	if got := types(list); fmt.Sprint(got) != "[Ready/False Stalled/True]" {
		t.Fatalf("failed: %v", got)
	}
	if !list[0].LastTransitionTime.Equal(&t0) {
		t.Errorf("Ready stayed False but its transition time moved to %v", list[0].LastTransitionTime)
	}
	if list[0].ObservedGeneration != 3 {
		t.Errorf("observedGeneration %d, want 3", list[0].ObservedGeneration)
	}
	Apply(conds, Done("Synced", ""), metav1.NewTime(time.Unix(300, 0)))
	if got := types(list); fmt.Sprint(got) != "[Ready/True]" {
		t.Fatalf("done: %v", got)
	}
}

func types(list []metav1.Condition) []string {
	var out []string
	for _, c := range list {
		out = append(out, c.Type+"/"+string(c.Status))
	}
	return out
}
