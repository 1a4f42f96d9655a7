package promotion

import (
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/outcome"
	"github.com/gitops-service/gitops-service/backend-shared/testenv"
)

func manualRun() *appstudio.PromotionRun {
	return &appstudio.PromotionRun{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "promote-s1"},
		Spec: appstudio.PromotionRunSpec{Snapshot: "s1", Application: "app",
			ManualPromotion: &appstudio.ManualPromotionConfiguration{TargetEnvironment: "staging"}},
	}
}

func automatedRun() *appstudio.PromotionRun {
	return &appstudio.PromotionRun{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "s1-dev-automated"},
		Spec: appstudio.PromotionRunSpec{Snapshot: "s1", Application: "app",
			AutomatedPromotion: &appstudio.AutomatedPromotionConfiguration{InitialEnvironment: "dev"}},
	}
}

// withStatus returns run with st as its status.
func withStatus(run *appstudio.PromotionRun, st appstudio.PromotionRunStatus) *appstudio.PromotionRun {
	run.Status = st
	return run
}

func TestRecordTransitionsRecordsOneEventPerVisibleChange(t *testing.T) {
	const waiting, active, complete = appstudio.PromotionRunStateWaiting, appstudio.PromotionRunStateActive, appstudio.PromotionRunStateComplete
	const success, failure = appstudio.PromotionRunCompleteResultSuccess, appstudio.PromotionRunCompleteResultFailure
	inTurn := outcome.TransientError(reasonInProgress, TurnRetry, `PromotionRun "first" of application "app" is in progress; this one starts when it completes`)
	noSnapshot := outcome.StalledError("SnapshotNotFound", `Snapshot "s1" does not exist`)
	tests := []struct {
		name string
		run  *appstudio.PromotionRun
		// before is the status at the start of the reconcile; the run's own status is after it.
		before appstudio.PromotionRunStatus
		// beforeErr, when set, raised the ErrorOccurred condition in an earlier reconcile.
		beforeErr error
		err       error
		want      []string
	}{
		{
			name:   "a manual run starts",
			run:    withStatus(manualRun(), appstudio.PromotionRunStatus{State: active}),
			before: appstudio.PromotionRunStatus{State: waiting},
			want:   []string{"Normal PromotionStarted Promoting Snapshot s1 of application app to Environment staging"},
		},
		{
			name:   "an automated run starts",
			run:    withStatus(automatedRun(), appstudio.PromotionRunStatus{State: active}),
			before: appstudio.PromotionRunStatus{},
			want:   []string{"Normal PromotionStarted Promoting Snapshot s1 of application app, starting with Environment dev"},
		},
		{
			name: "a manual run succeeds",
			run: withStatus(manualRun(), appstudio.PromotionRunStatus{State: complete, CompletionResult: success,
				EnvironmentStatus: []appstudio.PromotionRunEnvironmentStatus{envStep(1, "staging", stepSuccess, msgDeployed)}}),
			before: appstudio.PromotionRunStatus{State: active},
			want:   []string{"Normal PromotionSucceeded Snapshot s1 is deployed to staging"},
		},
		{
			// A binding that already deploys the Snapshot: the run starts and completes in one
			// reconcile, and both are told.
			name: "a run that starts and completes at once",
			run: withStatus(manualRun(), appstudio.PromotionRunStatus{State: complete, CompletionResult: success,
				EnvironmentStatus: []appstudio.PromotionRunEnvironmentStatus{envStep(1, "staging", stepSuccess, msgDeployed)}}),
			before: appstudio.PromotionRunStatus{State: waiting},
			want: []string{
				"Normal PromotionStarted Promoting Snapshot s1 of application app to Environment staging",
				"Normal PromotionSucceeded Snapshot s1 is deployed to staging",
			},
		},
		{
			name: "a run times out",
			run: withStatus(manualRun(), appstudio.PromotionRunStatus{State: complete, CompletionResult: failure,
				EnvironmentStatus: []appstudio.PromotionRunEnvironmentStatus{envStep(1, "staging", stepFailed, "Not all components were synced and healthy within 10m0s")}}),
			before: appstudio.PromotionRunStatus{State: active},
			want:   []string{"Warning PromotionFailed The promotion failed: staging: Not all components were synced and healthy within 10m0s"},
		},
		{
			name:   "nothing changed",
			run:    withStatus(manualRun(), appstudio.PromotionRunStatus{State: active}),
			before: appstudio.PromotionRunStatus{State: active},
			want:   nil,
		},
		{
			// Waiting for an earlier run is no failure: a Normal Event.
			name:   "a run waits its turn",
			run:    withStatus(manualRun(), appstudio.PromotionRunStatus{State: waiting}),
			before: appstudio.PromotionRunStatus{State: waiting},
			err:    inTurn,
			want:   []string{`Normal PromotionInProgress PromotionRun "first" of application "app" is in progress; this one starts when it completes`},
		},
		{
			name:   "a user error",
			run:    withStatus(manualRun(), appstudio.PromotionRunStatus{State: waiting}),
			before: appstudio.PromotionRunStatus{State: waiting},
			err:    noSnapshot,
			want:   []string{`Warning SnapshotNotFound Snapshot "s1" does not exist`},
		},
		{
			name:   "an internal error hides its details",
			run:    withStatus(manualRun(), appstudio.PromotionRunStatus{State: waiting}),
			before: appstudio.PromotionRunStatus{State: waiting},
			err:    errors.New("etcdserver: leader changed"),
			want:   []string{"Warning ErrorOccurred " + outcome.InternalMessage},
		},
		{
			name:      "the same error again is not repeated",
			run:       withStatus(manualRun(), appstudio.PromotionRunStatus{State: waiting}),
			before:    appstudio.PromotionRunStatus{State: waiting},
			beforeErr: noSnapshot,
			err:       noSnapshot,
			want:      nil,
		},
		{
			name:      "a changed error is told",
			run:       withStatus(manualRun(), appstudio.PromotionRunStatus{State: waiting}),
			before:    appstudio.PromotionRunStatus{State: waiting},
			beforeErr: noSnapshot,
			err:       outcome.StalledError("EnvironmentNotFound", `Environment "staging" does not exist`),
			want:      []string{`Warning EnvironmentNotFound Environment "staging" does not exist`},
		},
		{
			name:      "an error resolved while the run keeps waiting",
			run:       withStatus(manualRun(), appstudio.PromotionRunStatus{State: waiting}),
			before:    appstudio.PromotionRunStatus{State: waiting},
			beforeErr: inTurn,
			want:      []string{"Normal ErrorOccurredResolved The PromotionRun's earlier error is resolved"},
		},
		{
			// The run starting says enough: no separate "resolved" Event.
			name:      "an error resolved by the run starting",
			run:       withStatus(manualRun(), appstudio.PromotionRunStatus{State: active}),
			before:    appstudio.PromotionRunStatus{State: waiting},
			beforeErr: inTurn,
			want:      []string{"Normal PromotionStarted Promoting Snapshot s1 of application app to Environment staging"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			rec := record.NewFakeRecorder(10)
			r := clock(&now)
			r.Recorder = rec
			// Conditions as the reconciles left them: before, then after this reconcile.
			if tt.beforeErr != nil {
				beforeRun := &appstudio.PromotionRun{}
				r.setError(beforeRun, tt.beforeErr)
				tt.before.Conditions = beforeRun.Status.Conditions
				tt.run.Status.Conditions = append([]appstudio.PromotionRunCondition(nil), beforeRun.Status.Conditions...)
			}
			r.setError(tt.run, tt.err)
			r.recordTransitions(tt.run, &tt.before, tt.err)
			g.Expect(testenv.Recorded(rec)).To(Equal(tt.want))
		})
	}
}

func TestRecordStepsOfAnAutomatedRun(t *testing.T) {
	tests := []struct {
		name   string
		before []appstudio.PromotionRunEnvironmentStatus
		after  []appstudio.PromotionRunEnvironmentStatus
		want   []string
	}{
		{
			name:   "a step succeeds and the next depth starts",
			before: []appstudio.PromotionRunEnvironmentStatus{envStep(1, "dev", stepInProgress, "")},
			after: []appstudio.PromotionRunEnvironmentStatus{envStep(1, "dev", stepSuccess, ""),
				envStep(2, "stage-a", stepInProgress, ""), envStep(2, "stage-b", stepInProgress, "")},
			want: []string{"Normal StepSucceeded Step 1 (dev) is deployed; promoting to stage-a, stage-b"},
		},
		{
			// Bindings already deployed: several steps pass in one reconcile, each is told.
			name:   "several steps in one reconcile",
			before: []appstudio.PromotionRunEnvironmentStatus{envStep(1, "dev", stepInProgress, "")},
			after: []appstudio.PromotionRunEnvironmentStatus{envStep(1, "dev", stepSuccess, ""),
				envStep(2, "staging", stepSuccess, ""), envStep(3, "prod", stepInProgress, "")},
			want: []string{
				"Normal StepSucceeded Step 1 (dev) is deployed; promoting to staging",
				"Normal StepSucceeded Step 2 (staging) is deployed; promoting to prod",
			},
		},
		{
			// The last step's success is PromotionSucceeded, not a step Event.
			name:   "the last step",
			before: []appstudio.PromotionRunEnvironmentStatus{envStep(1, "dev", stepSuccess, ""), envStep(2, "prod", stepInProgress, "")},
			after:  []appstudio.PromotionRunEnvironmentStatus{envStep(1, "dev", stepSuccess, ""), envStep(2, "prod", stepSuccess, "")},
			want:   nil,
		},
		{
			name:   "a step that succeeded earlier is not told again",
			before: []appstudio.PromotionRunEnvironmentStatus{envStep(1, "dev", stepSuccess, ""), envStep(2, "prod", stepInProgress, "")},
			after:  []appstudio.PromotionRunEnvironmentStatus{envStep(1, "dev", stepSuccess, ""), envStep(2, "prod", stepInProgress, "")},
			want:   nil,
		},
		{
			name:   "a failed step",
			before: []appstudio.PromotionRunEnvironmentStatus{envStep(1, "dev", stepSuccess, ""), envStep(2, "prod", stepInProgress, "")},
			after:  []appstudio.PromotionRunEnvironmentStatus{envStep(1, "dev", stepSuccess, ""), envStep(2, "prod", stepFailed, "")},
			want:   nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := record.NewFakeRecorder(10)
			run := withStatus(automatedRun(), appstudio.PromotionRunStatus{State: appstudio.PromotionRunStateActive, EnvironmentStatus: tt.after})
			(&Reconciler{Recorder: rec}).recordSteps(run, &appstudio.PromotionRunStatus{State: appstudio.PromotionRunStateActive, EnvironmentStatus: tt.before})
			NewWithT(t).Expect(testenv.Recorded(rec)).To(Equal(tt.want))
		})
	}
}

// A manual run has a single step: its success is PromotionSucceeded only.
func TestRecordStepsIgnoresManualRuns(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	run := withStatus(manualRun(), appstudio.PromotionRunStatus{EnvironmentStatus: []appstudio.PromotionRunEnvironmentStatus{
		envStep(1, "staging", stepSuccess, ""), envStep(2, "prod", stepInProgress, "")}})
	(&Reconciler{Recorder: rec}).recordSteps(run, &appstudio.PromotionRunStatus{EnvironmentStatus: []appstudio.PromotionRunEnvironmentStatus{
		envStep(1, "staging", stepInProgress, "")}})
	NewWithT(t).Expect(testenv.Recorded(rec)).To(BeEmpty())
}

func TestRecordTransitionsWithoutARecorder(t *testing.T) {
	// Tests and tools run the reconciler without a recorder: nothing to record, no panic.
	run := withStatus(manualRun(), appstudio.PromotionRunStatus{State: appstudio.PromotionRunStateActive})
	(&Reconciler{}).recordTransitions(run, &appstudio.PromotionRunStatus{}, errors.New("boom"))
}
