package db_test

import (
	"fmt"
	"testing"

	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/notify"
)

// BenchmarkUpsertApplication: the backend's write of a changed GitOpsDeployment (every
// iteration changes the spec, so every iteration writes).
func BenchmarkUpsertApplication(b *testing.B) {
	f := newFixture(b)
	tenant := f.newTenant(b)
	apps := make([]*db.Application, 100)
	for i := range apps {
		apps[i] = &db.Application{TenantID: tenant.ID, Name: db.ApplicationName(newUID()), EngineInstanceID: f.instance.ID}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		app := apps[i%len(apps)]
		app.Spec = appSpec(tenant.ID, fmt.Sprintf("rev-%d", i))
		changed, err := f.store.UpsertApplication(f.ctx, f.db, app)
		if err != nil || !changed {
			b.Fatalf("changed=%v err=%v", changed, err)
		}
	}
}

// BenchmarkUpsertApplicationUnchanged: the common reconcile, where nothing changed.
func BenchmarkUpsertApplicationUnchanged(b *testing.B) {
	f := newFixture(b)
	tenant := f.newTenant(b)
	app := &db.Application{TenantID: tenant.ID, Name: db.ApplicationName(newUID()), EngineInstanceID: f.instance.ID, Spec: appSpec(tenant.ID, "main")}
	if _, err := f.store.UpsertApplication(f.ctx, f.db, app); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		same := &db.Application{TenantID: tenant.ID, Name: app.Name, EngineInstanceID: f.instance.ID, Spec: appSpec(tenant.ID, "main")}
		if changed, err := f.store.UpsertApplication(f.ctx, f.db, same); err != nil || changed {
			b.Fatalf("changed=%v err=%v", changed, err)
		}
	}
}

// BenchmarkInsertOperation: the backend signalling a change to a cluster-agent.
func BenchmarkInsertOperation(b *testing.B) {
	f := newFixture(b)
	tenant := f.newTenant(b)
	resource := newUID()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		op := &db.Operation{EngineInstanceID: f.instance.ID, ResourceType: db.OperationResourceApplication,
			ResourceID: resource, OwnerTenantID: tenant.ID, GCExpirationSeconds: 3600}
		if err := f.store.CreateOperation(f.ctx, f.db, op); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadApplicationState: the backend's read after an application_state_changed
// notification (a state with 20 resources and a condition).
func BenchmarkReadApplicationState(b *testing.B) {
	f := newFixture(b)
	tenant := f.newTenant(b)
	app, _ := f.newApp(b, tenant.ID, "")
	st := &db.ApplicationState{ApplicationID: app.ID, Health: db.HealthHealthy, SyncStatus: db.SyncStatusSynced, Revision: "abc",
		Conditions:      []argov1alpha1.ApplicationCondition{{Type: "SyncError", Message: "x", LastTransitionTime: metav1Now()}},
		ReconciledState: &argov1alpha1.ComparedTo{Source: argov1alpha1.ApplicationSource{RepoURL: "https://git", Path: "p"}},
		OperationState:  &argov1alpha1.OperationState{Phase: "Succeeded", StartedAt: *metav1Now()}}
	for i := range 20 {
		st.Resources = append(st.Resources, argov1alpha1.ResourceStatus{Kind: "Deployment", Name: fmt.Sprintf("web-%d", i),
			Namespace: "team-a", Status: "Synced", Version: "v1", Group: "apps"})
	}
	if _, err := f.store.RecordApplicationState(f.ctx, f.db, st, notify.ApplicationStateChanged); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		got, err := f.store.GetApplicationState(f.ctx, f.db, tenant.ID, app.ID)
		if err != nil || len(got.Resources) != 20 {
			b.Fatal(err)
		}
	}
}

// BenchmarkRecordApplicationStateUnchanged: the cluster-agent's write when Argo CD
// reported nothing new (compared in SQL, nothing written).
func BenchmarkRecordApplicationStateUnchanged(b *testing.B) {
	f := newFixture(b)
	tenant := f.newTenant(b)
	app, _ := f.newApp(b, tenant.ID, "")
	st := &db.ApplicationState{ApplicationID: app.ID, Health: db.HealthHealthy, SyncStatus: db.SyncStatusSynced, Revision: "abc"}
	if _, err := f.store.RecordApplicationState(f.ctx, f.db, st, notify.ApplicationStateChanged); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if changed, err := f.store.RecordApplicationState(f.ctx, f.db, st, notify.ApplicationStateChanged); err != nil || changed {
			b.Fatalf("changed=%v err=%v", changed, err)
		}
	}
}

// BenchmarkRoundTrip: one `SELECT 1`, the floor the other benchmarks are read against.
func BenchmarkRoundTrip(b *testing.B) {
	f := newFixture(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		var one int
		if err := f.db.NewRaw("SELECT 1").Scan(f.ctx, &one); err != nil || one != 1 {
			b.Fatalf("one=%d err=%v", one, err)
		}
	}
}
