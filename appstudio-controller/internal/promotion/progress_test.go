package promotion

import (
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/outcome"
)

func TestProgress(t *testing.T) {
	const success, failed, inProgress = appstudio.PromotionRunEnvironmentStatusSuccess, appstudio.PromotionRunEnvironmentStatusFailed,
		appstudio.PromotionRunEnvironmentStatusInProgress
	run := func(state appstudio.PromotionRunState, result appstudio.PromotionRunCompleteResult, steps ...appstudio.PromotionRunEnvironmentStatus) *appstudio.PromotionRun {
		return &appstudio.PromotionRun{Spec: appstudio.PromotionRunSpec{Snapshot: "s1"},
			Status: appstudio.PromotionRunStatus{State: state, CompletionResult: result, EnvironmentStatus: steps}}
	}
	step := func(n int, env string, st appstudio.PromotionRunEnvironmentStatusField, display string) appstudio.PromotionRunEnvironmentStatus {
		return appstudio.PromotionRunEnvironmentStatus{Step: n, EnvironmentName: env, Status: st, DisplayStatus: display}
	}
	for name, tc := range map[string]struct {
		run  *appstudio.PromotionRun
		want outcome.Progress
	}{
		"new": {run("", ""), outcome.Working(appstudio.PromotionRunReasonWaitingToStart, "The promotion has not started yet", true)},
		"waiting": {run(appstudio.PromotionRunStateWaiting, ""),
			outcome.Working(appstudio.PromotionRunReasonWaitingToStart, "The promotion has not started yet", true)},
		"active": {run(appstudio.PromotionRunStateActive, "", step(1, "dev", success, ""), step(2, "stage-a", inProgress, ""), step(2, "stage-b", inProgress, "")),
			outcome.Working(appstudio.PromotionRunReasonPromoting, "Promoting Snapshot s1 to stage-a, stage-b: waiting for all components to be synced and healthy", false)},
		"succeeded": {run(appstudio.PromotionRunStateComplete, appstudio.PromotionRunCompleteResultSuccess, step(1, "dev", success, ""), step(2, "prod", success, "")),
			outcome.Done(EventPromotionSucceeded, "Snapshot s1 is deployed to dev, prod")},
		"failed": {run(appstudio.PromotionRunStateComplete, appstudio.PromotionRunCompleteResultFailure, step(1, "dev", success, ""), step(2, "prod", failed, "timed out")),
			outcome.Failed(EventPromotionFailed, "The promotion failed: prod: timed out")},
		"failed without a step": {run(appstudio.PromotionRunStateComplete, appstudio.PromotionRunCompleteResultFailure),
			outcome.Failed(EventPromotionFailed, "The promotion failed")},
	} {
		t.Run(name, func(t *testing.T) {
			if got := Progress(tc.run); got != tc.want {
				t.Errorf("progress %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestByDeadline(t *testing.T) {
	for name, tc := range map[string]struct {
		err      error
		deadline time.Duration
		want     time.Duration
	}{
		"the deadline comes first":           {outcome.StalledError("MultipleBindings", "two"), time.Minute, time.Minute},
		"the retry comes first":              {outcome.TransientError("Wait", time.Second, "wait"), time.Minute, time.Second},
		"a user error comes by the deadline": {outcome.UserError("InvalidSpec", "bad"), time.Minute, time.Minute},
		"no deadline":                        {outcome.StalledError("MultipleBindings", "two"), 0, outcome.StalledRetry},
	} {
		t.Run(name, func(t *testing.T) {
			if got := outcome.As(byDeadline(tc.err, tc.deadline)).RetryAfter; got != tc.want {
				t.Errorf("retry after %s, want %s", got, tc.want)
			}
		})
	}
	boom := errors.New("boom")
	if got := byDeadline(boom, time.Minute); !errors.Is(got, boom) || outcome.As(got) != nil {
		t.Errorf("an internal error became %v", got)
	}
}

func TestRunConditions(t *testing.T) {
	var list []appstudio.PromotionRunCondition
	conds := RunConditions{List: &list}
	t0, t1 := metav1.NewTime(time.Unix(100, 0)), metav1.NewTime(time.Unix(200, 0))
	outcome.Apply(conds, outcome.Working(appstudio.PromotionRunReasonPromoting, "promoting", false), t0)
	if got, ok := conds.Get(outcome.TypeReconciling); !ok || got.Status != "True" || got.Reason != appstudio.PromotionRunReasonPromoting {
		t.Fatalf("Reconciling %+v %v", got, ok)
	}
	// An unchanged condition keeps its times (no status write).
	outcome.Apply(conds, outcome.Working(appstudio.PromotionRunReasonPromoting, "promoting", false), t1)
	if !list[0].LastProbeTime.Equal(&t0) {
		t.Errorf("an unchanged condition was probed again at %v", list[0].LastProbeTime)
	}
	outcome.Apply(conds, outcome.Failed(EventPromotionFailed, "timed out"), t1)
	if _, ok := conds.Get(outcome.TypeReconciling); ok {
		t.Error("Reconciling stayed")
	}
	ready, _ := conds.Get(outcome.TypeReady)
	if ready != (outcome.Condition{Type: outcome.TypeReady, Status: "False", Reason: EventPromotionFailed, Message: "timed out"}) {
		t.Errorf("Ready %+v", ready)
	}
	if !list[0].LastTransitionTime.Equal(&t0) || !list[0].LastProbeTime.Equal(&t1) {
		t.Errorf("Ready stayed False: transition %v (want %v), probe %v (want %v)", list[0].LastTransitionTime, t0, list[0].LastProbeTime, t1)
	}
	outcome.Apply(conds, outcome.Done(EventPromotionSucceeded, "deployed"), t1)
	if len(list) != 1 || list[0].Status != appstudio.PromotionRunConditionStatusTrue || !list[0].LastTransitionTime.Equal(&t1) {
		t.Errorf("after success: %+v", list)
	}
}
