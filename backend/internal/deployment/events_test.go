package deployment

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/outcome"
	"github.com/gitops-service/gitops-service/backend-shared/testenv"
)

func TestRecordTransitionsOfSyncAndHealth(t *testing.T) {
	const rev = "0123456789abcdef0123"
	type status = v1.GitOpsDeploymentStatus
	sync := func(s v1.SyncStatusCode, revision string) v1.SyncStatus {
		return v1.SyncStatus{Status: s, Revision: revision}
	}
	health := func(h v1.HealthStatusCode, msg string) v1.HealthStatus {
		return v1.HealthStatus{Status: h, Message: msg}
	}
	tests := []struct {
		name          string
		before, after status
		want          []string
	}{
		{
			// Argo CD's first report is the Ready condition's news: an Event would repeat it
			// at the cost of an API write for every deployment.
			name:  "first report: Unknown and Unknown",
			after: status{Sync: sync(v1.SyncStatusCodeUnknown, ""), Health: health(v1.HealthStatusCodeUnknown, "")},
		},
		{
			name:  "first report: synced and healthy",
			after: status{Sync: sync(v1.SyncStatusCodeSynced, rev), Health: health(v1.HealthStatusCodeHealthy, "")},
		},
		{
			// Its failures have Events of their own: the error conditions, the sync operation.
			name:  "first report: out of sync and degraded",
			after: status{Sync: sync(v1.SyncStatusCodeOutOfSync, rev), Health: health(v1.HealthStatusCodeDegraded, "deployment has no ready replicas")},
		},
		{
			name:   "first report of the health only, the sync status known",
			before: status{Sync: sync(v1.SyncStatusCodeOutOfSync, rev)},
			after:  status{Sync: sync(v1.SyncStatusCodeSynced, rev), Health: health(v1.HealthStatusCodeProgressing, "")},
			want:   []string{"Normal SyncStatusChanged Sync status OutOfSync → Synced at revision 0123456789ab"},
		},
		{
			name:   "nothing changed",
			before: status{Sync: sync(v1.SyncStatusCodeSynced, rev), Health: health(v1.HealthStatusCodeHealthy, "")},
			after:  status{Sync: sync(v1.SyncStatusCodeSynced, rev), Health: health(v1.HealthStatusCodeHealthy, "")},
		},
		{
			// Both changed: one Event, named after the sync status, Warning for OutOfSync
			// and Degraded; the revision is shortened to 12 characters.
			name:   "out of sync and degraded",
			before: status{Sync: sync(v1.SyncStatusCodeSynced, rev), Health: health(v1.HealthStatusCodeHealthy, "")},
			after:  status{Sync: sync(v1.SyncStatusCodeOutOfSync, rev), Health: health(v1.HealthStatusCodeDegraded, "deployment has no ready replicas")},
			want:   []string{"Warning SyncStatusChanged Sync status Synced → OutOfSync at revision 0123456789ab; health Healthy → Degraded: deployment has no ready replicas"},
		},
		{
			name:   "recovery is Normal",
			before: status{Sync: sync(v1.SyncStatusCodeOutOfSync, rev), Health: health(v1.HealthStatusCodeDegraded, "bad")},
			after:  status{Sync: sync(v1.SyncStatusCodeSynced, rev), Health: health(v1.HealthStatusCodeHealthy, "")},
			want:   []string{"Normal SyncStatusChanged Sync status OutOfSync → Synced at revision 0123456789ab; health Degraded → Healthy"},
		},
		{
			name:   "only the health changed",
			before: status{Sync: sync(v1.SyncStatusCodeSynced, rev), Health: health(v1.HealthStatusCodeProgressing, "")},
			after:  status{Sync: sync(v1.SyncStatusCodeSynced, rev), Health: health(v1.HealthStatusCodeHealthy, "")},
			want:   []string{"Normal HealthStatusChanged Health Progressing → Healthy"},
		},
		{
			name:   "health Missing is a Warning",
			before: status{Sync: sync(v1.SyncStatusCodeSynced, rev), Health: health(v1.HealthStatusCodeHealthy, "")},
			after:  status{Sync: sync(v1.SyncStatusCodeSynced, rev), Health: health(v1.HealthStatusCodeMissing, "the Deployment is gone")},
			want:   []string{"Warning HealthStatusChanged Health Healthy → Missing: the Deployment is gone"},
		},
		{
			name:   "health Suspended is Normal",
			before: status{Health: health(v1.HealthStatusCodeHealthy, "")},
			after:  status{Health: health(v1.HealthStatusCodeSuspended, "")},
			want:   []string{"Normal HealthStatusChanged Health Healthy → Suspended"},
		},
		{
			// A Synced sync status does not make a Degraded health Normal.
			name:   "synced, but degraded",
			before: status{Sync: sync(v1.SyncStatusCodeOutOfSync, rev), Health: health(v1.HealthStatusCodeHealthy, "")},
			after:  status{Sync: sync(v1.SyncStatusCodeSynced, rev), Health: health(v1.HealthStatusCodeDegraded, "")},
			want:   []string{"Warning SyncStatusChanged Sync status OutOfSync → Synced at revision 0123456789ab; health Healthy → Degraded"},
		},
		{
			name:   "only the sync status changed, no revision known",
			before: status{Sync: sync(v1.SyncStatusCodeSynced, ""), Health: health(v1.HealthStatusCodeHealthy, "")},
			after:  status{Sync: sync(v1.SyncStatusCodeOutOfSync, ""), Health: health(v1.HealthStatusCodeHealthy, "")},
			want:   []string{"Warning SyncStatusChanged Sync status Synced → OutOfSync"},
		},
		{
			// Unknown is only silent as the first value; later it is news.
			name:   "known, then Unknown",
			before: status{Sync: sync(v1.SyncStatusCodeSynced, rev), Health: health(v1.HealthStatusCodeHealthy, "")},
			after:  status{Sync: sync(v1.SyncStatusCodeUnknown, rev), Health: health(v1.HealthStatusCodeUnknown, "")},
			want:   []string{"Normal SyncStatusChanged Sync status Synced → Unknown at revision 0123456789ab; health Healthy → Unknown"},
		},
		{
			// A status that loses its sync and health (as a re-created state row might) is
			// not a transition to report.
			name:   "emptied",
			before: status{Sync: sync(v1.SyncStatusCodeSynced, rev), Health: health(v1.HealthStatusCodeHealthy, "")},
		},
		{
			// A new revision with the same sync status is not a transition of the status.
			name:   "another revision, still synced",
			before: status{Sync: sync(v1.SyncStatusCodeSynced, "aaaa"), Health: health(v1.HealthStatusCodeHealthy, "")},
			after:  status{Sync: sync(v1.SyncStatusCodeSynced, "bbbb"), Health: health(v1.HealthStatusCodeHealthy, "")},
		},
		{
			// The health message alone changing is not a transition.
			name:   "same health, another message",
			before: status{Health: health(v1.HealthStatusCodeDegraded, "one")},
			after:  status{Health: health(v1.HealthStatusCodeDegraded, "two")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			rec := record.NewFakeRecorder(10)
			depl := &v1.GitOpsDeployment{Status: tt.after}
			recordTransitions(rec, depl, &tt.before)
			g.Expect(testenv.Recorded(rec)).To(Equal(tt.want))
		})
	}
}

func TestRecordTransitionsOfSyncOperations(t *testing.T) {
	t1 := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	t2 := metav1.NewTime(t1.Add(time.Minute))
	op := func(phase v1.OperationPhase, msg string, finished *metav1.Time) *v1.OperationState {
		return &v1.OperationState{Phase: phase, Message: msg, FinishedAt: finished}
	}
	tests := []struct {
		name          string
		before, after *v1.OperationState
		want          []string
	}{
		{name: "no operation"},
		{name: "running: not finished yet", after: op("Running", "", nil)},
		{name: "succeeded", before: op("Running", "", nil), after: op("Succeeded", "", &t1), want: []string{"Normal SyncOperation Sync operation Succeeded"}},
		{name: "succeeded, with Argo CD's message", after: op("Succeeded", "successfully synced (all tasks run)", &t1),
			want: []string{"Normal SyncOperation Sync operation Succeeded: successfully synced (all tasks run)"}},
		{name: "failed is a Warning", before: op("Running", "", nil), after: op("Failed", "one or more objects failed to apply", &t1),
			want: []string{"Warning SyncOperation Sync operation Failed: one or more objects failed to apply"}},
		{name: "error is a Warning", after: op("Error", "", &t1), want: []string{"Warning SyncOperation Sync operation Error"}},
		{name: "terminated is a Warning", after: op("Terminating", "", &t1), want: []string{"Warning SyncOperation Sync operation Terminating"}},
		// The same finished operation read again: its Event was recorded already.
		{name: "the same operation again", before: op("Succeeded", "", &t1), after: op("Succeeded", "", &t1)},
		{name: "a later operation", before: op("Failed", "x", &t1), after: op("Succeeded", "", &t2), want: []string{"Normal SyncOperation Sync operation Succeeded"}},
		{name: "the operation is gone from the status", before: op("Succeeded", "", &t1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			rec := record.NewFakeRecorder(10)
			depl := &v1.GitOpsDeployment{Status: v1.GitOpsDeploymentStatus{OperationState: tt.after}}
			recordTransitions(rec, depl, &v1.GitOpsDeploymentStatus{OperationState: tt.before})
			g.Expect(testenv.Recorded(rec)).To(Equal(tt.want))
		})
	}
}

func TestRecordTransitionsOfConditions(t *testing.T) {
	cond := func(typ v1.GitOpsDeploymentConditionType, status v1.GitOpsConditionStatus, reason v1.GitOpsDeploymentReasonType, msg string) v1.GitOpsDeploymentCondition {
		return v1.GitOpsDeploymentCondition{Type: typ, Status: status, Reason: reason, Message: msg}
	}
	const (
		T = v1.GitOpsConditionStatusTrue
		F = v1.GitOpsConditionStatusFalse
	)
	syncErr := cond(v1.GitOpsDeploymentConditionSyncError, T, v1.GitOpsDeploymentReasonSyncError, "one or more objects failed to apply")
	syncResolved := cond(v1.GitOpsDeploymentConditionSyncError, F, v1.GitOpsDeploymentReasonSyncErrorResolved, "")
	errOccurred := cond(v1.GitOpsDeploymentConditionErrorOccurred, T, v1.GitOpsDeploymentReasonErrorOccurred, "spec.source.path must name a directory")
	errResolved := cond(v1.GitOpsDeploymentConditionErrorOccurred, F, v1.GitOpsDeploymentReasonErrorOccurredResolved, "")
	tests := []struct {
		name          string
		before, after []v1.GitOpsDeploymentCondition
		want          []string
	}{
		{name: "raised", after: []v1.GitOpsDeploymentCondition{syncErr}, want: []string{"Warning SyncError one or more objects failed to apply"}},
		{name: "unchanged", before: []v1.GitOpsDeploymentCondition{syncErr}, after: []v1.GitOpsDeploymentCondition{syncErr}},
		{
			name:   "its message changed",
			before: []v1.GitOpsDeploymentCondition{syncErr},
			after:  []v1.GitOpsDeploymentCondition{cond(v1.GitOpsDeploymentConditionSyncError, T, v1.GitOpsDeploymentReasonSyncError, "namespace x not found")},
			want:   []string{"Warning SyncError namespace x not found"},
		},
		{
			// api.md's resolved conditions have an empty message: the Event says which.
			name: "resolved", before: []v1.GitOpsDeploymentCondition{syncErr}, after: []v1.GitOpsDeploymentCondition{syncResolved},
			want: []string{"Normal SyncErrorResolved SyncError resolved"},
		},
		// Absent conditions never happened; one that appears already resolved says nothing.
		{name: "resolved before it was raised", after: []v1.GitOpsDeploymentCondition{errResolved}},
		{
			name:   "one raised, another resolved, in list order",
			before: []v1.GitOpsDeploymentCondition{errOccurred},
			after:  []v1.GitOpsDeploymentCondition{errResolved, syncErr},
			want:   []string{"Normal ErrorOccurredResolved ErrorOccurred resolved", "Warning SyncError one or more objects failed to apply"},
		},
		{
			name:   "raised again after it was resolved",
			before: []v1.GitOpsDeploymentCondition{errResolved},
			after:  []v1.GitOpsDeploymentCondition{errOccurred},
			want:   []string{"Warning ErrorOccurred spec.source.path must name a directory"},
		},
		{
			// Ready, Reconciling and Stalled are the shared ending's, which records Ready's
			// transitions itself.
			name: "kstatus conditions are left to the shared ending",
			after: []v1.GitOpsDeploymentCondition{
				cond(outcome.TypeReady, F, ReasonDegraded, "degraded"),
				cond(outcome.TypeStalled, T, ReasonDegraded, "degraded"),
				cond(outcome.TypeReconciling, T, ReasonProgressing, "working"),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			rec := record.NewFakeRecorder(10)
			depl := &v1.GitOpsDeployment{Status: v1.GitOpsDeploymentStatus{Conditions: tt.after}}
			recordTransitions(rec, depl, &v1.GitOpsDeploymentStatus{Conditions: tt.before})
			g.Expect(testenv.Recorded(rec)).To(Equal(tt.want))
		})
	}
}

// One reconcile that changes everything records one Event for sync and health, one for the
// sync operation and one per condition, in that order.
func TestRecordTransitionsRecordsEachKindOnce(t *testing.T) {
	g := NewWithT(t)
	finished := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	rec := record.NewFakeRecorder(10)
	depl := &v1.GitOpsDeployment{Status: v1.GitOpsDeploymentStatus{
		Sync:           v1.SyncStatus{Status: v1.SyncStatusCodeOutOfSync, Revision: "abc"},
		Health:         v1.HealthStatus{Status: v1.HealthStatusCodeDegraded},
		OperationState: &v1.OperationState{Phase: "Failed", Message: "apply failed", FinishedAt: &finished},
		Conditions: []v1.GitOpsDeploymentCondition{{Type: v1.GitOpsDeploymentConditionSyncError, Status: v1.GitOpsConditionStatusTrue,
			Reason: v1.GitOpsDeploymentReasonSyncError, Message: "apply failed"}},
	}}
	recordTransitions(rec, depl, &v1.GitOpsDeploymentStatus{
		Sync:   v1.SyncStatus{Status: v1.SyncStatusCodeSynced, Revision: "abc"},
		Health: v1.HealthStatus{Status: v1.HealthStatusCodeHealthy},
	})
	g.Expect(testenv.Recorded(rec)).To(Equal([]string{
		"Warning SyncStatusChanged Sync status Synced → OutOfSync at revision abc; health Healthy → Degraded",
		"Warning SyncOperation Sync operation Failed: apply failed",
		"Warning SyncError apply failed",
	}))
}

func TestChangedIsWorthAnEvent(t *testing.T) {
	tests := []struct {
		name, before, after string
		want                bool
	}{
		{"first value: the Ready condition says it", "", "Synced", false},
		{"first value, unknown", "", "Unknown", false},
		{"unknown after a known value", "Synced", "Unknown", true},
		{"the same value", "Synced", "Synced", false},
		{"a new value", "Synced", "OutOfSync", true},
		{"emptied", "Synced", "", false},
		{"never set", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := changed(tt.before, tt.after); got != tt.want {
				t.Errorf("changed(%q, %q) = %v, want %v", tt.before, tt.after, got, tt.want)
			}
		})
	}
}

func TestKstatusTypes(t *testing.T) {
	for typ, want := range map[string]bool{
		"Ready": true, "Reconciling": true, "Stalled": true,
		"ErrorOccurred": false, "SyncError": false, "ComparisonError": false, "ready": false,
	} {
		if got := kstatusType(typ); got != want {
			t.Errorf("kstatusType(%q) = %v, want %v", typ, got, want)
		}
	}
}
