package appstatus

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
)

func TestHealthStatusKeepsOnlyWhatTheTableAccepts(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"Healthy", db.HealthHealthy},
		{"Progressing", db.HealthProgressing},
		{"Degraded", db.HealthDegraded},
		{"Suspended", db.HealthSuspended},
		{"Missing", db.HealthMissing},
		{"Unknown", db.HealthUnknown},
		// Argo CD has not assessed it yet.
		{"", db.HealthUnknown},
		// A status a newer Argo CD (or a custom health check) invents would fail the CHECK constraint.
		{"Paused", db.HealthUnknown},
		{"healthy", db.HealthUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			NewWithT(t).Expect(healthStatus(tt.in)).To(Equal(tt.want))
		})
	}
}

func TestSyncStatusKeepsOnlyWhatTheTableAccepts(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"Synced", db.SyncStatusSynced},
		{"OutOfSync", db.SyncStatusOutOfSync},
		{"Unknown", db.SyncStatusUnknown},
		{"", db.SyncStatusUnknown},
		{"Syncing", db.SyncStatusUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			NewWithT(t).Expect(syncStatus(tt.in)).To(Equal(tt.want))
		})
	}
}

func TestHealthMessageNamesTheFirstResourceWithTheApplicationsHealth(t *testing.T) {
	res := func(kind, name string, status argov1alpha1.HealthStatusCode, msg string) argov1alpha1.ResourceStatus {
		return argov1alpha1.ResourceStatus{Kind: kind, Name: name, Health: &argov1alpha1.HealthStatus{Status: status, Message: msg}}
	}
	tests := []struct {
		name      string
		health    argov1alpha1.HealthStatusCode
		resources []argov1alpha1.ResourceStatus
		want      string
	}{
		// A healthy Application needs no explanation, whatever its resources say.
		{name: "healthy", health: argov1alpha1.HealthStatusHealthy,
			resources: []argov1alpha1.ResourceStatus{res("Deployment", "web", argov1alpha1.HealthStatusDegraded, "crash loop")}, want: ""},
		{name: "not assessed yet", health: "", resources: []argov1alpha1.ResourceStatus{res("Deployment", "web", argov1alpha1.HealthStatusDegraded, "crash loop")}, want: ""},
		{name: "degraded", health: argov1alpha1.HealthStatusDegraded,
			resources: []argov1alpha1.ResourceStatus{
				res("ConfigMap", "settings", argov1alpha1.HealthStatusHealthy, "fine"),
				res("Deployment", "web", argov1alpha1.HealthStatusDegraded, "crash loop"),
				res("Deployment", "api", argov1alpha1.HealthStatusDegraded, "image pull"),
			}, want: "Deployment/web: crash loop"},
		// The message must explain the Application's own status, not another resource's.
		{name: "progressing skips a degraded resource", health: argov1alpha1.HealthStatusProgressing,
			resources: []argov1alpha1.ResourceStatus{
				res("Deployment", "web", argov1alpha1.HealthStatusDegraded, "crash loop"),
				res("Deployment", "api", argov1alpha1.HealthStatusProgressing, "rollout 1 of 3"),
			}, want: "Deployment/api: rollout 1 of 3"},
		{name: "a matching resource without a message is skipped", health: argov1alpha1.HealthStatusDegraded,
			resources: []argov1alpha1.ResourceStatus{
				res("Service", "web", argov1alpha1.HealthStatusDegraded, ""),
				res("Deployment", "web", argov1alpha1.HealthStatusDegraded, "crash loop"),
			}, want: "Deployment/web: crash loop"},
		{name: "resources without health", health: argov1alpha1.HealthStatusMissing,
			resources: []argov1alpha1.ResourceStatus{{Kind: "Deployment", Name: "web"}}, want: ""},
		{name: "no resources", health: argov1alpha1.HealthStatusDegraded, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app := &argov1alpha1.Application{Status: argov1alpha1.ApplicationStatus{
				Health: argov1alpha1.AppHealthStatus{Status: tt.health}, Resources: tt.resources}}
			NewWithT(t).Expect(healthMessage(app)).To(Equal(tt.want))
		})
	}
}

func TestFinishedNeedsAFinalPhaseAndBothTimes(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	tests := []struct {
		name string
		op   *argov1alpha1.OperationState
		want bool
	}{
		{name: "no operation", op: nil, want: false},
		{name: "succeeded", op: &argov1alpha1.OperationState{Phase: argov1alpha1.OperationSucceeded, StartedAt: t0, FinishedAt: &t1}, want: true},
		{name: "failed", op: &argov1alpha1.OperationState{Phase: argov1alpha1.OperationFailed, StartedAt: t0, FinishedAt: &t1}, want: true},
		{name: "error", op: &argov1alpha1.OperationState{Phase: argov1alpha1.OperationError, StartedAt: t0, FinishedAt: &t1}, want: true},
		{name: "running", op: &argov1alpha1.OperationState{Phase: argov1alpha1.OperationRunning, StartedAt: t0}, want: false},
		// Terminating is not an end: Argo CD reports Failed once it has stopped.
		{name: "terminating", op: &argov1alpha1.OperationState{Phase: argov1alpha1.OperationTerminating, StartedAt: t0, FinishedAt: &t1}, want: false},
		// Without both times there is no duration to observe.
		{name: "no finishedAt", op: &argov1alpha1.OperationState{Phase: argov1alpha1.OperationSucceeded, StartedAt: t0}, want: false},
		{name: "zero finishedAt", op: &argov1alpha1.OperationState{Phase: argov1alpha1.OperationSucceeded, StartedAt: t0, FinishedAt: &metav1.Time{}}, want: false},
		{name: "no startedAt", op: &argov1alpha1.OperationState{Phase: argov1alpha1.OperationSucceeded, FinishedAt: &t1}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(finished(tt.op)).To(Equal(tt.want))
		})
	}
}

func TestNewlyFinishedNeverReportsANegativeDuration(t *testing.T) {
	// Argo CD's times have a resolution of a second, and clocks may disagree.
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 12, 0, 5, 0, time.UTC))
	before := metav1.NewTime(t0.Add(-time.Second))
	got := newlyFinished(nil, &argov1alpha1.OperationState{Phase: argov1alpha1.OperationSucceeded, StartedAt: t0, FinishedAt: &before})
	NewWithT(t).Expect(got).To(Equal(&finishedSync{phase: "Succeeded", duration: 0}))
}

func TestSameStateComparesWhatTheDatabaseWouldStore(t *testing.T) {
	base := func() *argov1alpha1.Application {
		return &argov1alpha1.Application{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{argocd.LabelApplicationID: "app-1"}, Generation: 3, ResourceVersion: "10"},
			Status: argov1alpha1.ApplicationStatus{
				Health: argov1alpha1.AppHealthStatus{Status: argov1alpha1.HealthStatusHealthy},
				Sync:   argov1alpha1.SyncStatus{Status: argov1alpha1.SyncStatusCodeSynced, Revision: "abc"},
				Resources: []argov1alpha1.ResourceStatus{{Kind: "ConfigMap", Name: "settings", Namespace: "team-a",
					Status: argov1alpha1.SyncStatusCodeSynced}},
			},
		}
	}
	tests := []struct {
		name   string
		mutate func(*argov1alpha1.Application)
		same   bool
	}{
		{name: "unchanged", mutate: func(*argov1alpha1.Application) {}, same: true},
		// Argo CD writes its status often (reconciledAt, observedAt): none of that is recorded,
		// so none of it wakes the controller.
		{name: "only the reconcile time", mutate: func(a *argov1alpha1.Application) {
			now := metav1.Now()
			a.Status.ReconciledAt = &now
			a.ResourceVersion = "11"
		}, same: true},
		{name: "health", mutate: func(a *argov1alpha1.Application) { a.Status.Health.Status = argov1alpha1.HealthStatusDegraded }, same: false},
		{name: "sync status", mutate: func(a *argov1alpha1.Application) { a.Status.Sync.Status = argov1alpha1.SyncStatusCodeOutOfSync }, same: false},
		{name: "revision", mutate: func(a *argov1alpha1.Application) { a.Status.Sync.Revision = "def" }, same: false},
		{name: "a resource's sync status", mutate: func(a *argov1alpha1.Application) {
			a.Status.Resources[0].Status = argov1alpha1.SyncStatusCodeOutOfSync
		}, same: false},
		{name: "a condition", mutate: func(a *argov1alpha1.Application) {
			a.Status.Conditions = []argov1alpha1.ApplicationCondition{{Type: "ComparisonError", Message: "repository not found"}}
		}, same: false},
		{name: "what Argo CD compared against", mutate: func(a *argov1alpha1.Application) {
			a.Status.Sync.ComparedTo = argov1alpha1.ComparedTo{Destination: argov1alpha1.ApplicationDestination{Namespace: "team-a"}}
		}, same: false},
		{name: "an operation started", mutate: func(a *argov1alpha1.Application) {
			a.Status.OperationState = &argov1alpha1.OperationState{Phase: argov1alpha1.OperationRunning}
		}, same: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changed := base()
			tt.mutate(changed)
			NewWithT(t).Expect(sameState(State(base()), State(changed))).To(Equal(tt.same))
		})
	}
}

func TestStatePrefersTheSyncRevisionOverTheFirstOfSeveral(t *testing.T) {
	tests := []struct {
		name string
		sync argov1alpha1.SyncStatus
		want string
	}{
		{name: "a single source", sync: argov1alpha1.SyncStatus{Revision: "abc"}, want: "abc"},
		{name: "several sources", sync: argov1alpha1.SyncStatus{Revisions: []string{"first", "second"}}, want: "first"},
		{name: "both", sync: argov1alpha1.SyncStatus{Revision: "abc", Revisions: []string{"first"}}, want: "abc"},
		{name: "none", sync: argov1alpha1.SyncStatus{}, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app := &argov1alpha1.Application{Status: argov1alpha1.ApplicationStatus{Sync: tt.sync}}
			NewWithT(t).Expect(State(app).Revision).To(Equal(tt.want))
		})
	}
}

func TestStateOfAnApplicationWithoutTheServicesLabelHasNoApplicationID(t *testing.T) {
	// Reconcile records nothing for it.
	app := &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"other": "x"}}}
	NewWithT(t).Expect(State(app).ApplicationID).To(BeEmpty())
}

func TestUntouchedSinceCreatedOnlyWithoutStatusAtTheFirstGeneration(t *testing.T) {
	reported := argov1alpha1.ApplicationStatus{Health: argov1alpha1.AppHealthStatus{Status: argov1alpha1.HealthStatusHealthy}}
	for _, tc := range []struct {
		name       string
		generation int64
		status     argov1alpha1.ApplicationStatus
		want       bool
	}{
		{"as created", 1, argov1alpha1.ApplicationStatus{}, true},
		{"its spec changed before Argo CD looked", 2, argov1alpha1.ApplicationStatus{}, false},
		{"Argo CD reported", 2, reported, false},
		{"a status at the first generation", 1, reported, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app := &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Generation: tc.generation}, Status: tc.status}
			NewWithT(t).Expect(untouchedSinceCreated(app)).To(Equal(tc.want))
		})
	}
}
