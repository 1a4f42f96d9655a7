package outcome

import (
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/statuspatch"
)

func TestErrorConstructorsSetKindReasonAndRetry(t *testing.T) {
	tests := []struct {
		name      string
		err       error
		wantKind  Kind
		wantMsg   string
		wantRetry time.Duration
	}{
		// A user error is not retried on a timer: only a change of the object helps.
		{"user error", UserError("InvalidPath", "path %q is absolute", "/x"), User, `path "/x" is absolute`, 0},
		// Stalled errors are looked at again after StalledRetry, in case the change is not watched.
		{"stalled error", StalledError("EnvironmentNotFound", "environment %s not found", "prod"), Stalled, "environment prod not found", StalledRetry},
		{"transient error keeps its own retry", TransientError("AgentBusy", 3*time.Second, "waiting for %d operations", 2), Transient, "waiting for 2 operations", 3 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := As(tt.err)
			if e == nil {
				t.Fatalf("As(%v) = nil", tt.err)
			}
			if e.Kind != tt.wantKind || e.Message != tt.wantMsg || e.RetryAfter != tt.wantRetry || e.Err != nil {
				t.Errorf("got %+v, want kind %d message %q retry %s", e, tt.wantKind, tt.wantMsg, tt.wantRetry)
			}
			if tt.err.Error() != tt.wantMsg {
				t.Errorf("Error() = %q, want the message %q", tt.err.Error(), tt.wantMsg)
			}
		})
	}
}

func TestErrorMessageAndCause(t *testing.T) {
	cause := errors.New("dial tcp: connection refused")
	e := &Error{Kind: Stalled, Reason: "Unreachable", Message: "the cluster is unreachable", Err: cause}
	// The cause is logged with the message, but only Message goes into the condition.
	if got := e.Error(); got != "the cluster is unreachable: dial tcp: connection refused" {
		t.Errorf("Error() = %q", got)
	}
	if !errors.Is(e, cause) {
		t.Error("the cause is not in the error's chain")
	}
	p, err := Summarize(Progress{}, e)
	if err != nil || p.Message != "the cluster is unreachable" {
		t.Errorf("Summarize = %+v, %v; want the message without its cause and no error", p, err)
	}
}

func TestAsAndIsUser(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		wantAs   bool
		wantUser bool
	}{
		{"nil", nil, false, false},
		{"plain error is internal", errors.New("boom"), false, false},
		{"user", UserError("R", "m"), true, true},
		{"stalled counts as user: shown and not retried with backoff", StalledError("R", "m"), true, true},
		{"transient is retried, not a user error", TransientError("R", time.Second, "m"), true, false},
		{"internal kind of Error", &Error{Kind: Internal, Message: "m"}, true, false},
		{"wrapped twice", fmt.Errorf("a: %w", fmt.Errorf("b: %w", UserError("R", "m"))), true, true},
		{"joined with an internal error", errors.Join(errors.New("x"), StalledError("R", "m")), true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := As(tt.err) != nil; got != tt.wantAs {
				t.Errorf("As != nil is %v, want %v", got, tt.wantAs)
			}
			if got := IsUser(tt.err); got != tt.wantUser {
				t.Errorf("IsUser = %v, want %v", got, tt.wantUser)
			}
		})
	}
}

func TestProgressConstructorsMapToKstatus(t *testing.T) {
	tests := []struct {
		name string
		got  Progress
		want Progress
	}{
		{"done is Ready", Done("Synced", "ok"), Progress{Ready: "True", Reason: "Synced", Message: "ok"}},
		{"working is in progress", Working("Syncing", "s", false), Progress{Ready: "False", Reason: "Syncing", Message: "s", Reconciling: true}},
		{"working and pending keeps the generation unobserved", Working("Syncing", "s", true),
			Progress{Ready: "False", Reason: "Syncing", Message: "s", Reconciling: true, Pending: true}},
		// A manual deployment waiting for a SyncRun is neither in progress nor failed.
		{"waiting is neither Reconciling nor Stalled", Waiting("OutOfSync", "w"), Progress{Ready: "False", Reason: "OutOfSync", Message: "w"}},
		{"failed is Stalled", Failed("Degraded", "d"), Progress{Ready: "False", Reason: "Degraded", Message: "d", Stalled: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %+v, want %+v", tt.got, tt.want)
			}
		})
	}
}

func TestSummarizeKeepsTheProgressOfAReconcileWithoutError(t *testing.T) {
	// RequeueAfter and an explicit Unknown survive; only an empty Ready becomes True.
	in := Progress{Ready: metav1.ConditionUnknown, Reason: "Probing", RequeueAfter: time.Minute, Reconciling: true}
	got, err := Summarize(in, nil)
	if err != nil || got != in {
		t.Errorf("Summarize = %+v, %v; want %+v unchanged", got, err, in)
	}
}

func TestSummarizeAnErrorReplacesTheProgress(t *testing.T) {
	// The reconcile's own view (Ready, a requeue) does not leak into a failure's report.
	progress := Progress{Ready: "True", Reason: "Synced", Message: "ok", RequeueAfter: time.Hour}
	tests := []struct {
		name string
		err  error
		want Progress
	}{
		{"user", UserError("BadSpec", "bad"), Progress{Ready: "False", Reason: "BadSpec", Message: "bad", Stalled: true}},
		{"stalled", StalledError("NoEnv", "no env"), Progress{Ready: "False", Reason: "NoEnv", Message: "no env", Stalled: true, RequeueAfter: StalledRetry}},
		{"transient", TransientError("Wait", 2*time.Second, "wait"),
			Progress{Ready: "False", Reason: "Wait", Message: "wait", Reconciling: true, Pending: true, RequeueAfter: 2 * time.Second}},
		{"internal", &Error{Kind: Internal, Reason: "X", Message: "secret"},
			Progress{Ready: "False", Reason: ReasonInternalError, Message: InternalMessage, Reconciling: true, Pending: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := Summarize(progress, tt.err)
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestOutcomeOf(t *testing.T) {
	tests := []struct {
		name     string
		p        Progress
		internal bool
		want     string
	}{
		{"internal wins over everything", Failed("X", ""), true, "internal_error"},
		{"stalled", Failed("Degraded", ""), false, "stalled"},
		{"working", Working("Syncing", "", true), false, "working"},
		{"ready", Done("Synced", ""), false, "ready"},
		{"waiting", Waiting("OutOfSync", ""), false, "waiting"},
		{"unknown is waiting", Progress{Ready: metav1.ConditionUnknown}, false, "waiting"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := outcomeOf(tt.p, tt.internal); got != tt.want {
				t.Errorf("outcomeOf = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestEventsAreRecordedForNewsOnly(t *testing.T) {
	internal, _ := Summarize(Progress{}, errors.New("boom"))
	tests := []struct {
		name        string
		p           Progress
		wantWorthy  bool
		wantType    string
		wantMessage string
	}{
		{"becoming Ready is news", Done("Synced", "all synced"), true, corev1.EventTypeNormal, "all synced"},
		{"Ready without a message says so", Done("Synced", ""), true, corev1.EventTypeNormal, "Ready is True: Synced"},
		{"stalling is a warning", Failed("Degraded", "pod crashes"), true, corev1.EventTypeWarning, "pod crashes"},
		{"an internal error is a warning with the generic message", internal, true, corev1.EventTypeWarning, InternalMessage},
		// Steps of work in progress are only in the conditions.
		{"working is not news", Working("Syncing", "s", true), false, corev1.EventTypeNormal, "s"},
		{"waiting is not news", Waiting("OutOfSync", ""), false, corev1.EventTypeNormal, "Ready is False: OutOfSync"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := eventWorthy(tt.p); got != tt.wantWorthy {
				t.Errorf("eventWorthy = %v, want %v", got, tt.wantWorthy)
			}
			if got := eventType(tt.p); got != tt.wantType {
				t.Errorf("eventType = %q, want %q", got, tt.wantType)
			}
			if got := eventMessage(tt.p); got != tt.wantMessage {
				t.Errorf("eventMessage = %q, want %q", got, tt.wantMessage)
			}
		})
	}
}

func TestPatchResultNamesTheStatusWrite(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{fmt.Errorf("patching status: %w: conflict", statuspatch.ErrStale), "stale"},
		{fmt.Errorf("patching status: %w: not found", statuspatch.ErrGone), "gone"},
		{errors.New("patching status: timeout"), "failed"},
	}
	for _, tt := range tests {
		if got := patchResult(tt.err); got != tt.want {
			t.Errorf("patchResult(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

func TestKindOfNamesTheObjectsKind(t *testing.T) {
	env := &v1.GitOpsDeploymentManagedEnvironment{}
	if got := kindOf(cp.Client.Scheme(), env); got != "GitOpsDeploymentManagedEnvironment" {
		t.Errorf("kindOf = %q", got)
	}
	// A kind the scheme does not know is counted, not an error.
	if got := kindOf(runtime.NewScheme(), env); got != "unknown" {
		t.Errorf("kindOf with an empty scheme = %q, want unknown", got)
	}
}

func TestWithStatusOf(t *testing.T) {
	start := &v1.GitOpsDeploymentManagedEnvironment{ObjectMeta: metav1.ObjectMeta{Name: "env", ResourceVersion: "1"}}
	start.Status.ObservedGeneration = 1

	t.Run("an unchanged status needs no write", func(t *testing.T) {
		obj := start.DeepCopy()
		obj.ResourceVersion = "2" // metadata does not count
		if orig, changed, err := withStatusOf(obj, start); err != nil || changed || orig != nil {
			t.Errorf("got %v, %v, %v; want no change", orig, changed, err)
		}
	})
	t.Run("an empty and a nil list are the same status", func(t *testing.T) {
		obj := start.DeepCopy()
		obj.Status.Conditions = []metav1.Condition{}
		if _, changed, _ := withStatusOf(obj, start); changed {
			t.Error("an empty condition list counted as a change")
		}
	})
	t.Run("a changed status is patched against the start's status and the current metadata", func(t *testing.T) {
		obj := start.DeepCopy()
		obj.ResourceVersion = "7"
		obj.Status.ObservedGeneration = 2
		orig, changed, err := withStatusOf(obj, start)
		if err != nil || !changed {
			t.Fatalf("got %v, %v; want a change", changed, err)
		}
		o := orig.(*v1.GitOpsDeploymentManagedEnvironment)
		// The optimistic lock must use the resourceVersion obj was read with.
		if o.ResourceVersion != "7" || o.Status.ObservedGeneration != 1 {
			t.Errorf("orig has resourceVersion %q and observedGeneration %d, want 7 and 1", o.ResourceVersion, o.Status.ObservedGeneration)
		}
		if obj.Status.ObservedGeneration != 2 {
			t.Errorf("withStatusOf changed obj's status to %d", obj.Status.ObservedGeneration)
		}
	})
	t.Run("a kind without a status is an error", func(t *testing.T) {
		cm := &corev1.ConfigMap{}
		if _, _, err := withStatusOf(cm, cm.DeepCopy()); err == nil {
			t.Error("no error for a ConfigMap")
		}
	})
}

func TestMetaConditionsGetSetRemove(t *testing.T) {
	var list []metav1.Condition
	conds := MetaConditions{List: &list, Generation: 4}
	if _, ok := conds.Get(TypeReady); ok {
		t.Fatal("Get found a condition in an empty list")
	}
	t0, t1 := metav1.NewTime(time.Unix(100, 0)), metav1.NewTime(time.Unix(200, 0))
	conds.Set(Condition{Type: TypeReady, Status: "False", Reason: "A", Message: "a"}, t0)
	conds.Set(Condition{Type: TypeReady, Status: "False", Reason: "B", Message: "b"}, t1)
	got, ok := conds.Get(TypeReady)
	if !ok || got != (Condition{Type: TypeReady, Status: "False", Reason: "B", Message: "b"}) {
		t.Fatalf("Get = %+v, %v", got, ok)
	}
	if !list[0].LastTransitionTime.Equal(&t0) || list[0].ObservedGeneration != 4 {
		t.Errorf("a new reason moved the transition time to %v (observedGeneration %d)", list[0].LastTransitionTime, list[0].ObservedGeneration)
	}
	conds.Set(Condition{Type: TypeReady, Status: "True", Reason: "C"}, t1)
	if !list[0].LastTransitionTime.Equal(&t1) {
		t.Errorf("a new status kept the transition time %v", list[0].LastTransitionTime)
	}
	conds.Remove(TypeReady)
	conds.Remove(TypeStalled) // absent: nothing happens
	if len(list) != 0 {
		t.Errorf("after Remove: %+v", list)
	}
}

func TestGitOpsConditionsKeepTheCoreAPIShape(t *testing.T) {
	t0, t1, t2 := metav1.NewTime(time.Unix(100, 0)), metav1.NewTime(time.Unix(200, 0)), metav1.NewTime(time.Unix(300, 0))
	list := []v1.GitOpsDeploymentCondition{{Type: "ErrorOccurred", Status: "True", Reason: "X"}}
	conds := GitOpsConditions{List: &list}

	conds.Set(Condition{Type: TypeReady, Status: "False", Reason: "Syncing", Message: "s"}, t0)
	c, ok := conds.Get(TypeReady)
	if !ok || c != (Condition{Type: TypeReady, Status: "False", Reason: "Syncing", Message: "s"}) {
		t.Fatalf("Get = %+v, %v", c, ok)
	}
	ready := &list[1]
	if !ready.LastProbeTime.Equal(&t0) || !ready.LastTransitionTime.Equal(&t0) {
		t.Errorf("a new condition has probe %v and transition %v, want both %v", ready.LastProbeTime, ready.LastTransitionTime, t0)
	}

	// The same condition again is no change: neither time moves, so no status write.
	conds.Set(Condition{Type: TypeReady, Status: "False", Reason: "Syncing", Message: "s"}, t1)
	if !ready.LastProbeTime.Equal(&t0) || !ready.LastTransitionTime.Equal(&t0) {
		t.Errorf("an unchanged condition moved its times: probe %v, transition %v", ready.LastProbeTime, ready.LastTransitionTime)
	}
	// A new message with the same status is probed, not a transition.
	conds.Set(Condition{Type: TypeReady, Status: "False", Reason: "Syncing", Message: "s2"}, t1)
	if !ready.LastProbeTime.Equal(&t1) || !ready.LastTransitionTime.Equal(&t0) || ready.Message != "s2" {
		t.Errorf("new message: %+v", ready)
	}
	// A new status is a transition.
	conds.Set(Condition{Type: TypeReady, Status: "True", Reason: "Synced"}, t2)
	if !ready.LastTransitionTime.Equal(&t2) || ready.Status != "True" || ready.Reason != "Synced" || ready.Message != "" {
		t.Errorf("new status: %+v", ready)
	}

	conds.Remove(TypeReady)
	if len(list) != 1 || list[0].Type != "ErrorOccurred" {
		t.Errorf("Remove took other conditions with it: %+v", list)
	}
	if _, ok := conds.Get(TypeReady); ok {
		t.Error("Get found a removed condition")
	}
}

func TestApplyOnTheCoreAPIShape(t *testing.T) {
	var list []v1.GitOpsDeploymentCondition
	conds := GitOpsConditions{List: &list}
	now := metav1.NewTime(time.Unix(100, 0))
	Apply(conds, Failed("Degraded", "pod crashes"), now)
	want := map[string]Condition{
		TypeReady:   {Type: TypeReady, Status: "False", Reason: "Degraded", Message: "pod crashes"},
		TypeStalled: {Type: TypeStalled, Status: "True", Reason: "Degraded", Message: "pod crashes"},
	}
	if len(list) != len(want) {
		t.Fatalf("conditions %+v, want %v", list, want)
	}
	for typ, w := range want {
		if got, ok := conds.Get(typ); !ok || got != w {
			t.Errorf("%s = %+v, want %+v", typ, got, w)
		}
	}
	Apply(conds, Working("Syncing", "", false), now)
	if _, ok := conds.Get(TypeStalled); ok {
		t.Error("Stalled stayed after the object started working again")
	}
	if c, ok := conds.Get(TypeReconciling); !ok || c.Status != "True" || c.Reason != "Syncing" {
		t.Errorf("Reconciling = %+v, %v", c, ok)
	}
}
