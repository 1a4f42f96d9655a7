package promotion

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/outcome"
)

const (
	stepSuccess    = appstudio.PromotionRunEnvironmentStatusSuccess
	stepFailed     = appstudio.PromotionRunEnvironmentStatusFailed
	stepInProgress = appstudio.PromotionRunEnvironmentStatusInProgress
)

func envStep(n int, env string, st appstudio.PromotionRunEnvironmentStatusField, display string) appstudio.PromotionRunEnvironmentStatus {
	return appstudio.PromotionRunEnvironmentStatus{Step: n, EnvironmentName: env, Status: st, DisplayStatus: display}
}

// clock returns a Reconciler whose clock reads *now.
func clock(now *time.Time) *Reconciler {
	return &Reconciler{Now: func() time.Time { return *now }, Timeout: 10 * time.Minute}
}

func errorCond(status appstudio.PromotionRunConditionStatus, reason appstudio.PromotionRunReasonType, msg string, probe, transition time.Time) appstudio.PromotionRunCondition {
	p, tr := metav1.NewTime(probe), metav1.NewTime(transition)
	return appstudio.PromotionRunCondition{Type: appstudio.PromotionRunConditionErrorOccurred, Status: status, Reason: reason, Message: msg,
		LastProbeTime: &p, LastTransitionTime: &tr}
}

func TestSetErrorKeepsTheErrorOccurredConditionOfAPromotionRun(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Minute)
	const trueS, falseS = appstudio.PromotionRunConditionStatusTrue, appstudio.PromotionRunConditionStatusFalse
	const occurred, resolved = appstudio.PromotionRunReasonErrorOccurred, appstudio.PromotionRunReasonErrorOccurredResolved
	missing := outcome.StalledError("SnapshotNotFound", `Snapshot "s1" does not exist`)
	ready := appstudio.PromotionRunCondition{Type: "Ready", Status: falseS, Reason: "WaitingToStart"}
	tests := []struct {
		name   string
		before []appstudio.PromotionRunCondition
		err    error
		want   []appstudio.PromotionRunCondition // nil: no condition at all
	}{
		{
			// A run that never failed shows no ErrorOccurred condition at all.
			name: "no error and no condition", err: nil, want: nil,
		},
		{
			name: "a first error raises the condition", err: missing,
			want: []appstudio.PromotionRunCondition{errorCond(trueS, occurred, `Snapshot "s1" does not exist`, t1, t1)},
		},
		{
			// The same error again is no change: the times stay, so that no status write is needed.
			name:   "the same error keeps its times",
			before: []appstudio.PromotionRunCondition{errorCond(trueS, occurred, `Snapshot "s1" does not exist`, t0, t0)},
			err:    missing,
			want:   []appstudio.PromotionRunCondition{errorCond(trueS, occurred, `Snapshot "s1" does not exist`, t0, t0)},
		},
		{
			// Still True: probed again, but no transition.
			name:   "another error is probed, not a transition",
			before: []appstudio.PromotionRunCondition{errorCond(trueS, occurred, `Snapshot "s1" does not exist`, t0, t0)},
			err:    outcome.StalledError("EnvironmentNotFound", `Environment "prod" does not exist`),
			want:   []appstudio.PromotionRunCondition{errorCond(trueS, occurred, `Environment "prod" does not exist`, t1, t0)},
		},
		{
			name:   "an error after a resolved one is a transition",
			before: []appstudio.PromotionRunCondition{errorCond(falseS, resolved, "", t0, t0)},
			err:    missing,
			want:   []appstudio.PromotionRunCondition{errorCond(trueS, occurred, `Snapshot "s1" does not exist`, t1, t1)},
		},
		{
			// Details of internal errors go to the log only.
			name: "an internal error shows the generic message", err: errors.New("etcdserver: request timed out"),
			want: []appstudio.PromotionRunCondition{errorCond(trueS, occurred, outcome.InternalMessage, t1, t1)},
		},
		{
			name:   "success resolves an earlier error",
			before: []appstudio.PromotionRunCondition{errorCond(trueS, occurred, `Snapshot "s1" does not exist`, t0, t0)},
			err:    nil,
			want:   []appstudio.PromotionRunCondition{errorCond(falseS, resolved, "", t1, t1)},
		},
		{
			name:   "a resolved error stays resolved with its times",
			before: []appstudio.PromotionRunCondition{errorCond(falseS, resolved, "", t0, t0)},
			err:    nil,
			want:   []appstudio.PromotionRunCondition{errorCond(falseS, resolved, "", t0, t0)},
		},
		{
			// The other conditions (kstatus ones, written by outcome) are left alone.
			name:   "other conditions are kept",
			before: []appstudio.PromotionRunCondition{ready},
			err:    missing,
			want:   []appstudio.PromotionRunCondition{ready, errorCond(trueS, occurred, `Snapshot "s1" does not exist`, t1, t1)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			now := t1
			run := &appstudio.PromotionRun{}
			for _, c := range tt.before {
				run.Status.Conditions = append(run.Status.Conditions, *c.DeepCopy())
			}
			clock(&now).setError(run, tt.err)
			if tt.want == nil {
				g.Expect(run.Status.Conditions).To(BeEmpty())
				return
			}
			g.Expect(run.Status.Conditions).To(HaveLen(len(tt.want)))
			for i, w := range tt.want {
				got := run.Status.Conditions[i]
				g.Expect(got.Type).To(Equal(w.Type))
				g.Expect(got.Status).To(Equal(w.Status))
				g.Expect(got.Reason).To(Equal(w.Reason))
				g.Expect(got.Message).To(Equal(w.Message))
				if w.LastProbeTime != nil {
					g.Expect(got.LastProbeTime.Time).To(BeTemporally("==", w.LastProbeTime.Time), "last probe time")
					g.Expect(got.LastTransitionTime.Time).To(BeTemporally("==", w.LastTransitionTime.Time), "last transition time")
				}
			}
		})
	}
}

func TestCompleteEndsAManualRunWithEveryStep(t *testing.T) {
	tests := []struct {
		name       string
		result     appstudio.PromotionRunCompleteResult
		stepStatus appstudio.PromotionRunEnvironmentStatusField
		msg        string
	}{
		{"success", appstudio.PromotionRunCompleteResultSuccess, stepSuccess, "All components are synced and healthy"},
		{"failure", appstudio.PromotionRunCompleteResultFailure, stepFailed, "Not all components were synced and healthy within 10m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			run := &appstudio.PromotionRun{Status: appstudio.PromotionRunStatus{State: appstudio.PromotionRunStateActive,
				EnvironmentStatus: []appstudio.PromotionRunEnvironmentStatus{envStep(1, "staging", stepInProgress, msgWaiting)}}}
			(&Reconciler{}).complete(run, tt.result, tt.stepStatus, tt.msg)
			g.Expect(run.Status.State).To(Equal(appstudio.PromotionRunStateComplete))
			g.Expect(run.Status.CompletionResult).To(Equal(tt.result))
			g.Expect(run.Status.EnvironmentStatus).To(Equal([]appstudio.PromotionRunEnvironmentStatus{envStep(1, "staging", tt.stepStatus, tt.msg)}))
		})
	}
}

func TestCompleteAutomatedMarksOnlyTheStepsInProgress(t *testing.T) {
	steps := func() []appstudio.PromotionRunEnvironmentStatus {
		return []appstudio.PromotionRunEnvironmentStatus{
			envStep(1, "dev", stepSuccess, msgDeployed),
			envStep(2, "stage-a", stepInProgress, msgWaiting),
			envStep(2, "stage-b", stepInProgress, msgWaiting),
		}
	}
	tests := []struct {
		name   string
		result appstudio.PromotionRunCompleteResult
		msg    string
		want   []appstudio.PromotionRunEnvironmentStatus
	}{
		{
			// Earlier successful steps keep their Success: only what was running failed.
			name: "failure", result: appstudio.PromotionRunCompleteResultFailure, msg: "timed out",
			want: []appstudio.PromotionRunEnvironmentStatus{
				envStep(1, "dev", stepSuccess, msgDeployed),
				envStep(2, "stage-a", stepFailed, "timed out"),
				envStep(2, "stage-b", stepFailed, "timed out"),
			},
		},
		{
			// On success the caller has already marked the steps; nothing is rewritten.
			name: "success", result: appstudio.PromotionRunCompleteResultSuccess, msg: "ignored",
			want: steps(),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			run := &appstudio.PromotionRun{Status: appstudio.PromotionRunStatus{State: appstudio.PromotionRunStateActive, EnvironmentStatus: steps()}}
			(&Reconciler{}).completeAutomated(run, tt.result, tt.msg)
			g.Expect(run.Status.State).To(Equal(appstudio.PromotionRunStateComplete))
			g.Expect(run.Status.CompletionResult).To(Equal(tt.result))
			g.Expect(run.Status.EnvironmentStatus).To(Equal(tt.want))
		})
	}
}

func TestCurrentStepOfAnAutomatedRun(t *testing.T) {
	tests := []struct {
		name      string
		steps     []appstudio.PromotionRunEnvironmentStatus
		wantStep  int
		wantNames []string
	}{
		{"nothing recorded", nil, 0, nil},
		{"first step", []appstudio.PromotionRunEnvironmentStatus{envStep(1, "dev", stepInProgress, "")}, 1, []string{"dev"}},
		{"every Environment of the depth in progress", []appstudio.PromotionRunEnvironmentStatus{
			envStep(1, "dev", stepSuccess, ""), envStep(2, "stage-a", stepInProgress, ""), envStep(2, "stage-b", stepInProgress, "")},
			2, []string{"stage-a", "stage-b"}},
		// A finished Environment of the same depth is not waited for again.
		{"a finished Environment of the depth is left out", []appstudio.PromotionRunEnvironmentStatus{
			envStep(1, "dev", stepSuccess, ""), envStep(2, "stage-a", stepSuccess, ""), envStep(2, "stage-b", stepInProgress, "")},
			2, []string{"stage-b"}},
		// Only one step runs at a time: the first in progress wins.
		{"the first step in progress", []appstudio.PromotionRunEnvironmentStatus{
			envStep(2, "stage", stepInProgress, ""), envStep(3, "prod", stepInProgress, "")},
			2, []string{"stage"}},
		{"all done", []appstudio.PromotionRunEnvironmentStatus{envStep(1, "dev", stepSuccess, ""), envStep(2, "prod", stepFailed, "")}, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			step, names := currentStep(&appstudio.PromotionRun{Status: appstudio.PromotionRunStatus{EnvironmentStatus: tt.steps}})
			g.Expect(step).To(Equal(tt.wantStep))
			g.Expect(names).To(Equal(tt.wantNames))
		})
	}
}

// The automated walk ends as failed, without looking at any binding, when its status names no
// step in progress or a step's Environment is gone.
func TestAutomatedStepFailsWithoutAStepToWaitFor(t *testing.T) {
	tests := []struct {
		name      string
		steps     []appstudio.PromotionRunEnvironmentStatus
		envs      []string
		wantSteps []appstudio.PromotionRunEnvironmentStatus
	}{
		{
			name:      "no step in progress",
			steps:     []appstudio.PromotionRunEnvironmentStatus{envStep(1, "dev", stepSuccess, msgDeployed)},
			envs:      []string{"dev"},
			wantSteps: []appstudio.PromotionRunEnvironmentStatus{envStep(1, "dev", stepSuccess, msgDeployed)},
		},
		{
			name:  "the Environment of the step was deleted",
			steps: []appstudio.PromotionRunEnvironmentStatus{envStep(1, "dev", stepSuccess, msgDeployed), envStep(2, "staging", stepInProgress, msgWaiting)},
			envs:  []string{"dev"},
			wantSteps: []appstudio.PromotionRunEnvironmentStatus{envStep(1, "dev", stepSuccess, msgDeployed),
				envStep(2, "staging", stepFailed, `Environment "staging" does not exist`)},
		},
		{
			// One missing Environment fails its whole depth.
			name:  "one of several Environments of the step is gone",
			steps: []appstudio.PromotionRunEnvironmentStatus{envStep(1, "qa", stepInProgress, msgWaiting), envStep(1, "uat", stepInProgress, msgWaiting)},
			envs:  []string{"qa"},
			wantSteps: []appstudio.PromotionRunEnvironmentStatus{envStep(1, "qa", stepFailed, `Environment "uat" does not exist`),
				envStep(1, "uat", stepFailed, `Environment "uat" does not exist`)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			start := metav1.NewTime(now)
			run := &appstudio.PromotionRun{
				Spec: appstudio.PromotionRunSpec{Snapshot: "s1", Application: "app",
					AutomatedPromotion: &appstudio.AutomatedPromotionConfiguration{InitialEnvironment: tt.steps[0].EnvironmentName}},
				Status: appstudio.PromotionRunStatus{State: appstudio.PromotionRunStateActive, PromotionStartTime: &start, EnvironmentStatus: tt.steps},
			}
			envs := map[string]bool{}
			var all []appstudio.Environment
			for _, e := range tt.envs {
				envs[e] = true
				all = append(all, env(e, "", appstudio.DeploymentStrategyAppStudioAutomated))
			}
			res, err := clock(&now).automatedStep(context.Background(), run, all, envs, false)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.RequeueAfter).To(BeZero(), "a completed run is not looked at again")
			g.Expect(run.Status.State).To(Equal(appstudio.PromotionRunStateComplete))
			g.Expect(run.Status.CompletionResult).To(Equal(appstudio.PromotionRunCompleteResultFailure))
			g.Expect(run.Status.EnvironmentStatus).To(Equal(tt.wantSteps))
		})
	}
}

// A run that sets neither kind of promotion (the CRD refuses it; one stored before that rule
// may exist) is a user error, decided before anything is read.
func TestAdvanceRefusesARunWithoutAPromotion(t *testing.T) {
	g := NewWithT(t)
	run := &appstudio.PromotionRun{Spec: appstudio.PromotionRunSpec{Snapshot: "s1", Application: "app"}}
	_, err := (&Reconciler{}).advance(context.Background(), run)
	e := outcome.As(err)
	g.Expect(e).NotTo(BeNil())
	g.Expect(e.Kind).To(Equal(outcome.User))
	g.Expect(e.Reason).To(Equal("InvalidSpec"))
	g.Expect(e.Message).To(Equal("exactly one of spec.manualPromotion and spec.automatedPromotion must be set"))
	g.Expect(run.Status.State).To(BeEmpty(), "the run does not start")
}

func TestGeneratedBindingName(t *testing.T) {
	// The package documentation fixes the name: "<application>-<environment>-generated-binding".
	NewWithT(t).Expect(GeneratedBindingName("loan-app", "staging")).To(Equal("loan-app-staging-generated-binding"))
}

func TestNowDefaultsToTheWallClock(t *testing.T) {
	g := NewWithT(t)
	fixed := time.Date(2030, 5, 6, 7, 8, 9, 0, time.UTC)
	g.Expect((&Reconciler{Now: func() time.Time { return fixed }}).now()).To(Equal(fixed))
	before := time.Now()
	got := (&Reconciler{}).now()
	g.Expect(got).To(BeTemporally(">=", before))
	g.Expect(got).To(BeTemporally("<=", time.Now()))
}

// RunConditions keeps kstatus conditions in the PromotionRun's own condition shape: the times
// say when a condition was last looked at (probe) and last changed status (transition).
func TestRunConditionsSetKeepsTimesAsDocumented(t *testing.T) {
	t0, t1 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 1, 1, 0, 5, 0, 0, time.UTC)
	tests := []struct {
		name           string
		set            outcome.Condition
		wantProbe      time.Time
		wantTransition time.Time
	}{
		{"unchanged: no write", outcome.Condition{Type: "Ready", Status: "False", Reason: "Promoting", Message: "m"}, t0, t0},
		{"new message", outcome.Condition{Type: "Ready", Status: "False", Reason: "Promoting", Message: "m2"}, t1, t0},
		{"new reason", outcome.Condition{Type: "Ready", Status: "False", Reason: "WaitingToStart", Message: "m"}, t1, t0},
		{"new status", outcome.Condition{Type: "Ready", Status: "True", Reason: "PromotionSucceeded", Message: "done"}, t1, t1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var list []appstudio.PromotionRunCondition
			conds := RunConditions{List: &list}
			conds.Set(outcome.Condition{Type: "Ready", Status: "False", Reason: "Promoting", Message: "m"}, metav1.NewTime(t0))
			conds.Set(tt.set, metav1.NewTime(t1))
			g.Expect(list).To(HaveLen(1))
			got, ok := conds.Get("Ready")
			g.Expect(ok).To(BeTrue())
			g.Expect(got).To(Equal(tt.set))
			g.Expect(list[0].LastProbeTime.Time).To(Equal(tt.wantProbe))
			g.Expect(list[0].LastTransitionTime.Time).To(Equal(tt.wantTransition))
		})
	}
}

func TestRunConditionsRemoveKeepsTheOthers(t *testing.T) {
	g := NewWithT(t)
	now := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	list := []appstudio.PromotionRunCondition{{Type: appstudio.PromotionRunConditionErrorOccurred, Status: appstudio.PromotionRunConditionStatusTrue}}
	conds := RunConditions{List: &list}
	conds.Set(outcome.Condition{Type: outcome.TypeReady, Status: "False"}, now)
	conds.Set(outcome.Condition{Type: outcome.TypeReconciling, Status: "True"}, now)
	conds.Remove(outcome.TypeReconciling)
	conds.Remove("NotThere")
	var types []appstudio.PromotionRunConditionType
	for _, c := range list {
		types = append(types, c.Type)
	}
	// The ErrorOccurred condition, which setError owns, is never touched by outcome.
	g.Expect(types).To(Equal([]appstudio.PromotionRunConditionType{appstudio.PromotionRunConditionErrorOccurred, outcome.TypeReady}))
	_, ok := conds.Get(outcome.TypeReconciling)
	g.Expect(ok).To(BeFalse())
}
