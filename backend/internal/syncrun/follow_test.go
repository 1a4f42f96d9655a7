package syncrun

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/outcome"
)

const runUID = "6f1c2a1e-0000-4000-8000-0000000000aa"

var now = metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))

// opState is the deployment's operationState of a sync started for the SyncRun runUID
// (run "" for one the service did not start for a SyncRun).
func opState(run string, phase v1.OperationPhase, msg string) *v1.OperationState {
	st := &v1.OperationState{Phase: phase, Message: msg}
	if run != "" {
		st.Operation.Info = []v1.OperationInfo{{Name: "other", Value: "x"}, {Name: argocd.InfoSyncOperationID, Value: run}}
	}
	return st
}

func deployment(sync v1.SyncStatusCode, health v1.HealthStatusCode, op *v1.OperationState) *v1.GitOpsDeployment {
	return &v1.GitOpsDeployment{Status: v1.GitOpsDeploymentStatus{
		Sync: v1.SyncStatus{Status: sync}, Health: v1.HealthStatus{Status: health}, OperationState: op}}
}

func errorOccurred(status v1.GitOpsConditionStatus, reason v1.GitOpsDeploymentReasonType, msg string) v1.GitOpsDeploymentCondition {
	return v1.GitOpsDeploymentCondition{Type: v1.GitOpsDeploymentSyncRunConditionErrorOccurred, Status: status, Reason: reason, Message: msg}
}

func ready(reason, msg string) v1.GitOpsDeploymentCondition {
	status := v1.GitOpsConditionStatusFalse
	if reason == ReasonSyncSucceeded {
		status = v1.GitOpsConditionStatusTrue
	}
	return v1.GitOpsDeploymentCondition{Type: outcome.TypeReady, Status: status, Reason: v1.GitOpsDeploymentReasonType(reason), Message: msg}
}

func TestFollowDeployment(t *testing.T) {
	const (
		T = v1.GitOpsConditionStatusTrue
		F = v1.GitOpsConditionStatusFalse
	)
	notFound := errorOccurred(T, v1.GitOpsDeploymentSyncRunReasonErrorOccurred, `GitOpsDeployment "later" does not exist in namespace "jane"; the sync starts once it does`)
	tests := []struct {
		name       string
		conditions []v1.GitOpsDeploymentCondition
		depl       *v1.GitOpsDeployment
		syncOp     *db.SyncOperation
		want       outcome.Progress
		// wantCondition is the ErrorOccurred condition afterwards (nil: absent).
		wantCondition *v1.GitOpsDeploymentCondition
		wantEvents    transitions
		// wantSync and wantHealth are the status the SyncRun shows afterwards.
		wantSync   v1.SyncStatusCode
		wantHealth v1.HealthStatusCode
	}{
		{
			// Requested, never failed: nothing to resolve, no Event (SyncRequested was
			// recorded when the sync operation was created).
			name:       "requested, Argo CD has not started it",
			depl:       deployment(v1.SyncStatusCodeOutOfSync, v1.HealthStatusCodeHealthy, nil),
			syncOp:     &db.SyncOperation{},
			want:       outcome.Working(ReasonSyncing, "The sync is requested; waiting for Argo CD to finish it", false),
			wantSync:   v1.SyncStatusCodeOutOfSync,
			wantHealth: v1.HealthStatusCodeHealthy,
		},
		{
			name:          "requested after an earlier error: resolved, with an Event",
			conditions:    []v1.GitOpsDeploymentCondition{notFound},
			depl:          deployment(v1.SyncStatusCodeOutOfSync, v1.HealthStatusCodeMissing, opState(runUID, "Running", "")),
			syncOp:        &db.SyncOperation{},
			want:          outcome.Working(ReasonSyncing, "The sync is requested; waiting for Argo CD to finish it", false),
			wantCondition: &v1.GitOpsDeploymentCondition{Status: F, Reason: v1.GitOpsDeploymentSyncRunReasonErrorOccurredResolved, Message: ""},
			wantEvents:    transitions{{"Normal", "ErrorOccurredResolved", "The earlier error is resolved; the sync is requested."}},
			wantSync:      v1.SyncStatusCodeOutOfSync,
			wantHealth:    v1.HealthStatusCodeMissing,
		},
		{
			// Resolved already by an earlier reconcile: no second Event.
			name:          "still running, already resolved",
			conditions:    []v1.GitOpsDeploymentCondition{errorOccurred(F, v1.GitOpsDeploymentSyncRunReasonErrorOccurredResolved, "")},
			depl:          deployment(v1.SyncStatusCodeOutOfSync, v1.HealthStatusCodeProgressing, opState(runUID, "Running", "")),
			syncOp:        &db.SyncOperation{},
			want:          outcome.Working(ReasonSyncing, "The sync is requested; waiting for Argo CD to finish it", false),
			wantCondition: &v1.GitOpsDeploymentCondition{Status: F, Reason: v1.GitOpsDeploymentSyncRunReasonErrorOccurredResolved, Message: ""},
			wantSync:      v1.SyncStatusCodeOutOfSync,
			wantHealth:    v1.HealthStatusCodeProgressing,
		},
		{
			name:   "its sync succeeded",
			depl:   deployment(v1.SyncStatusCodeSynced, v1.HealthStatusCodeHealthy, opState(runUID, "Succeeded", "successfully synced (all tasks run)")),
			syncOp: &db.SyncOperation{},
			want:   outcome.Done(ReasonSyncSucceeded, "Successfully completed synchronize operation."),
			wantCondition: &v1.GitOpsDeploymentCondition{Status: F, Reason: v1.GitOpsDeploymentSyncRunReasonErrorOccurredResolved,
				Message: "Successfully completed synchronize operation."},
			wantEvents: transitions{{"Normal", "SyncSucceeded", "Successfully completed synchronize operation."}},
			wantSync:   v1.SyncStatusCodeSynced,
			wantHealth: v1.HealthStatusCodeHealthy,
		},
		{
			// The condition carries Argo CD's message; the Event and Ready say which phase.
			name:          "its sync failed",
			depl:          deployment(v1.SyncStatusCodeOutOfSync, v1.HealthStatusCodeDegraded, opState(runUID, "Failed", "one or more objects failed to apply")),
			syncOp:        &db.SyncOperation{},
			want:          outcome.Failed(ReasonSyncFailed, "Sync operation Failed: one or more objects failed to apply"),
			wantCondition: &v1.GitOpsDeploymentCondition{Status: T, Reason: v1.GitOpsDeploymentSyncRunReasonErrorOccurred, Message: "one or more objects failed to apply"},
			wantEvents:    transitions{{"Warning", "SyncFailed", "Sync operation Failed: one or more objects failed to apply"}},
			wantSync:      v1.SyncStatusCodeOutOfSync,
			wantHealth:    v1.HealthStatusCodeDegraded,
		},
		{
			name:          "its sync ended in Error without a message",
			depl:          deployment(v1.SyncStatusCodeOutOfSync, v1.HealthStatusCodeHealthy, opState(runUID, "Error", "")),
			syncOp:        &db.SyncOperation{},
			want:          outcome.Failed(ReasonSyncFailed, "Sync operation Error"),
			wantCondition: &v1.GitOpsDeploymentCondition{Status: T, Reason: v1.GitOpsDeploymentSyncRunReasonErrorOccurred, Message: ""},
			wantEvents:    transitions{{"Warning", "SyncFailed", "Sync operation Error"}},
			wantSync:      v1.SyncStatusCodeOutOfSync,
			wantHealth:    v1.HealthStatusCodeHealthy,
		},
		{
			// Another run's sync replaced this one's in Argo CD: the result the
			// cluster-agent kept with the sync operation counts.
			name:          "replaced, its kept result failed",
			depl:          deployment(v1.SyncStatusCodeSynced, v1.HealthStatusCodeHealthy, opState("another-run", "Running", "")),
			syncOp:        &db.SyncOperation{ResultPhase: "Failed", ResultMessage: "the revision does not exist"},
			want:          outcome.Failed(ReasonSyncFailed, "Sync operation Failed: the revision does not exist"),
			wantCondition: &v1.GitOpsDeploymentCondition{Status: T, Reason: v1.GitOpsDeploymentSyncRunReasonErrorOccurred, Message: "the revision does not exist"},
			wantEvents:    transitions{{"Warning", "SyncFailed", "Sync operation Failed: the revision does not exist"}},
			wantSync:      v1.SyncStatusCodeSynced,
			wantHealth:    v1.HealthStatusCodeHealthy,
		},
		{
			name:   "an automated sync, not this run's, succeeded",
			depl:   deployment(v1.SyncStatusCodeSynced, v1.HealthStatusCodeHealthy, opState("", "Succeeded", "")),
			syncOp: &db.SyncOperation{},
			want:   outcome.Working(ReasonSyncing, "The sync is requested; waiting for Argo CD to finish it", false),
			// The SyncRun still follows the deployment's status while its own sync runs.
			wantSync:   v1.SyncStatusCodeSynced,
			wantHealth: v1.HealthStatusCodeHealthy,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			run := &v1.GitOpsDeploymentSyncRun{}
			run.UID = types.UID(runUID)
			run.Status.Conditions = append(run.Status.Conditions, tt.conditions...)
			var ev transitions
			got := (&Reconciler{}).followDeployment(&ev, run, tt.depl, tt.syncOp, now)
			g.Expect(got).To(Equal(tt.want))
			g.Expect(ev).To(Equal(tt.wantEvents))
			g.Expect(run.Status.SyncStatus).To(Equal(tt.wantSync))
			g.Expect(run.Status.Health).To(Equal(tt.wantHealth))
			var cond *v1.GitOpsDeploymentCondition
			for i := range run.Status.Conditions {
				if run.Status.Conditions[i].Type == v1.GitOpsDeploymentSyncRunConditionErrorOccurred {
					cond = &run.Status.Conditions[i]
				}
			}
			if tt.wantCondition == nil {
				g.Expect(cond).To(BeNil())
				return
			}
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(tt.wantCondition.Status))
			g.Expect(cond.Reason).To(Equal(tt.wantCondition.Reason))
			g.Expect(cond.Message).To(Equal(tt.wantCondition.Message))
		})
	}
}

// A SyncRun keeps its own sync's result: once Ready says it succeeded or failed, later
// syncs of the deployment (another SyncRun's, an automated one) change neither its status
// nor its conditions, and record no Event.
func TestFollowDeploymentKeepsAFinishedResult(t *testing.T) {
	tests := []struct {
		name  string
		ready v1.GitOpsDeploymentCondition
		want  outcome.Progress
	}{
		{"succeeded", ready(ReasonSyncSucceeded, "Successfully completed synchronize operation."),
			outcome.Done(ReasonSyncSucceeded, "Successfully completed synchronize operation.")},
		{"failed", ready(ReasonSyncFailed, "Sync operation Failed: apply failed"),
			outcome.Failed(ReasonSyncFailed, "Sync operation Failed: apply failed")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			run := &v1.GitOpsDeploymentSyncRun{}
			run.UID = types.UID(runUID)
			run.Status.SyncStatus, run.Status.Health = v1.SyncStatusCodeOutOfSync, v1.HealthStatusCodeDegraded
			run.Status.Conditions = []v1.GitOpsDeploymentCondition{tt.ready}
			before := run.Status.DeepCopy()
			var ev transitions
			// The deployment has moved on: a later, successful sync of another run.
			depl := deployment(v1.SyncStatusCodeSynced, v1.HealthStatusCodeHealthy, opState("later-run", "Succeeded", ""))
			got := (&Reconciler{}).followDeployment(&ev, run, depl, &db.SyncOperation{ResultPhase: "Succeeded"}, now)
			g.Expect(got).To(Equal(tt.want))
			g.Expect(ev).To(BeEmpty())
			g.Expect(&run.Status).To(Equal(before))
		})
	}
}

// A result read again (the state row written again) records no second Event.
func TestFollowDeploymentRecordsEachResultOnce(t *testing.T) {
	tests := []struct {
		name  string
		phase v1.OperationPhase
	}{
		{"succeeded", "Succeeded"},
		{"failed", "Failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			run := &v1.GitOpsDeploymentSyncRun{}
			run.UID = types.UID(runUID)
			depl := deployment(v1.SyncStatusCodeSynced, v1.HealthStatusCodeHealthy, opState(runUID, tt.phase, "msg"))
			var first, second transitions
			r := &Reconciler{}
			r.followDeployment(&first, run, depl, &db.SyncOperation{}, now)
			g.Expect(first).To(HaveLen(1))
			r.followDeployment(&second, run, depl, &db.SyncOperation{}, now)
			g.Expect(second).To(BeEmpty())
		})
	}
}

func TestFinished(t *testing.T) {
	tests := []struct {
		name       string
		conditions []v1.GitOpsDeploymentCondition
		want       outcome.Progress
		ok         bool
	}{
		{name: "no Ready yet"},
		{name: "syncing", conditions: []v1.GitOpsDeploymentCondition{ready(ReasonSyncing, "waiting")}},
		{name: "waiting for the deployment", conditions: []v1.GitOpsDeploymentCondition{ready(ReasonWaitingForDeployment, "waiting")}},
		// An earlier failure to start is no sync result: the run may still start.
		{name: "the deployment is automated", conditions: []v1.GitOpsDeploymentCondition{ready(ReasonDeploymentAutomated, "no")}},
		{name: "succeeded", conditions: []v1.GitOpsDeploymentCondition{ready(ReasonSyncSucceeded, "ok")}, want: outcome.Done(ReasonSyncSucceeded, "ok"), ok: true},
		{name: "failed", conditions: []v1.GitOpsDeploymentCondition{
			errorOccurred(v1.GitOpsConditionStatusTrue, v1.GitOpsDeploymentSyncRunReasonErrorOccurred, "x"), ready(ReasonSyncFailed, "boom")},
			want: outcome.Failed(ReasonSyncFailed, "boom"), ok: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			run := &v1.GitOpsDeploymentSyncRun{Status: v1.GitOpsDeploymentSyncRunStatus{Conditions: tt.conditions}}
			got, ok := finished(run)
			g.Expect(ok).To(Equal(tt.ok))
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestSyncOperationID(t *testing.T) {
	tests := []struct {
		name string
		info []v1.OperationInfo
		want string
	}{
		{"no info", nil, ""},
		{"other info only", []v1.OperationInfo{{Name: "Reason", Value: "ApplicationSet"}}, ""},
		{"tagged by the cluster-agent", []v1.OperationInfo{{Name: "Reason", Value: "x"}, {Name: argocd.InfoSyncOperationID, Value: runUID}}, runUID},
		{"the first tag counts", []v1.OperationInfo{{Name: argocd.InfoSyncOperationID, Value: "a"}, {Name: argocd.InfoSyncOperationID, Value: "b"}}, "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			op := &v1.OperationState{Operation: v1.ApplicationOperation{Info: tt.info}}
			if got := syncOperationID(op); got != tt.want {
				t.Errorf("syncOperationID = %q, want %q", got, tt.want)
			}
		})
	}
}

// raise sets ErrorOccurred and adds a Warning Event only when the condition changes: a
// retry that meets the same error records nothing, a new message records again.
func TestRaiseRecordsOneEventPerChange(t *testing.T) {
	g := NewWithT(t)
	r := &Reconciler{}
	run := &v1.GitOpsDeploymentSyncRun{}
	var ev transitions
	r.raise(&ev, run, "ErrorOccurred", "Syncing a GitOpsDeployment with Automated sync policy is not allowed",
		"Syncing a GitOpsDeployment with Automated sync policy is not allowed", now)
	r.raise(&ev, run, "ErrorOccurred", "Syncing a GitOpsDeployment with Automated sync policy is not allowed",
		"Syncing a GitOpsDeployment with Automated sync policy is not allowed", now)
	g.Expect(ev).To(Equal(transitions{{"Warning", "ErrorOccurred", "Syncing a GitOpsDeployment with Automated sync policy is not allowed"}}))
	r.raise(&ev, run, "ErrorOccurred", outcome.InternalMessage, outcome.InternalMessage, now)
	g.Expect(ev).To(HaveLen(2))
	g.Expect(run.Status.Conditions).To(HaveLen(1))
	g.Expect(run.Status.Conditions[0].Status).To(Equal(v1.GitOpsConditionStatusTrue))
	g.Expect(run.Status.Conditions[0].Reason).To(Equal(v1.GitOpsDeploymentSyncRunReasonErrorOccurred))
	g.Expect(run.Status.Conditions[0].Message).To(Equal(outcome.InternalMessage))
}

// The documented message of a SyncRun on an automated deployment.
func TestAutomatedMessageIsTheDocumentedOne(t *testing.T) {
	if msgAutomated != "Syncing a GitOpsDeployment with Automated sync policy is not allowed" {
		t.Errorf("msgAutomated = %q", msgAutomated)
	}
	if msgSucceeded != "Successfully completed synchronize operation." {
		t.Errorf("msgSucceeded = %q", msgSucceeded)
	}
}
