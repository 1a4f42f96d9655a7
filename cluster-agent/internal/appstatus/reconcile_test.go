package appstatus

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	. "github.com/onsi/gomega"
	"github.com/uptrace/bun"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/dbtest"
	"github.com/gitops-service/gitops-service/backend-shared/ssa"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/agenttest"
)

// statusFixture is a Reconciler on a real database and API server, with one tenant.
type statusFixture struct {
	t      *testing.T
	ctx    context.Context
	store  *db.Store
	r      *Reconciler
	tenant *db.Tenant
}

func newStatusFixture(t *testing.T) *statusFixture {
	t.Helper()
	ctx := context.Background()
	bdb := dbtest.NewDB(t)
	store := db.NewStore(nil)
	id := agenttest.Instance(t, cp, bdb, store)
	tenant := agenttest.Tenant(t, bdb, store, id.InstanceID)
	r := &Reconciler{Client: cp.Client, DB: bdb, Store: store, Identity: id}
	return &statusFixture{t: t, ctx: ctx, store: store, r: r, tenant: tenant}
}

// application writes a row on instance and applies its Argo CD Application in the
// reconciler's namespace, as the operation controller does.
func (f *statusFixture) application(instanceID string) *db.Application {
	f.t.Helper()
	g := NewWithT(f.t)
	id := uuid.NewString()
	row := &db.Application{ID: id, TenantID: f.tenant.ID, Name: argocd.ApplicationName(types.UID(id)), EngineInstanceID: instanceID,
		Spec: argocd.ApplicationSpec(argocd.ApplicationInput{
			RepoURL: "https://example.com/repo.git", Path: "app", Destination: argocd.Destination{Namespace: "team-a"},
			Project: argocd.AppProjectName(f.tenant.ID),
		})}
	_, err := f.store.UpsertApplication(f.ctx, f.r.DB, row)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ssa.Apply(f.ctx, cp.Client, f.r.Identity.Application(row.Name, row.ID, row.TenantID, row.Spec))).To(Succeed())
	return row
}

// argoStatus writes an Application's status as Argo CD does (its CRD has no status
// subresource).
func (f *statusFixture) argoStatus(name string, status argov1alpha1.ApplicationStatus) {
	f.t.Helper()
	g := NewWithT(f.t)
	app := &argov1alpha1.Application{}
	g.Expect(cp.Client.Get(f.ctx, client.ObjectKey{Namespace: f.r.Identity.Namespace, Name: name}, app)).To(Succeed())
	base := app.DeepCopy()
	app.Status = status
	g.Expect(cp.Client.Patch(f.ctx, app, client.MergeFrom(base), client.FieldOwner("argocd-application-controller"))).To(Succeed())
}

func (f *statusFixture) reconcile(name string) ctrl.Result {
	f.t.Helper()
	res, err := f.r.Reconcile(f.ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: f.r.Identity.Namespace, Name: name}})
	NewWithT(f.t).Expect(err).NotTo(HaveOccurred())
	return res
}

// state reads the recorded state; nil when none is.
func (f *statusFixture) state(applicationID string) *db.ApplicationState {
	f.t.Helper()
	st, err := f.store.GetApplicationState(f.ctx, f.r.DB, f.tenant.ID, applicationID)
	if err != nil {
		NewWithT(f.t).Expect(err).To(MatchError(db.ErrNotFound))
		return nil
	}
	return st
}

func TestReconcileRecordsNothingBeforeArgoCDLooked(t *testing.T) {
	g := NewWithT(t)
	f := newStatusFixture(t)
	row := f.application(f.r.Identity.InstanceID)

	g.Expect(f.reconcile(row.Name)).To(Equal(ctrl.Result{}))
	// The deployment's status stays empty rather than Unknown.
	g.Expect(f.state(row.ID)).To(BeNil())
}

// TestArgoCDsFirstStatusMovesTheGeneration: the API server moves an Application's
// generation when its status is written (no status subresource), so the Create event of an
// Application the cluster-agent has just applied is the only one untouchedSinceCreated
// drops.
func TestArgoCDsFirstStatusMovesTheGeneration(t *testing.T) {
	g := NewWithT(t)
	f := newStatusFixture(t)
	row := f.application(f.r.Identity.InstanceID)
	read := func() *argov1alpha1.Application {
		app := &argov1alpha1.Application{}
		g.Expect(cp.Client.Get(f.ctx, client.ObjectKey{Namespace: f.r.Identity.Namespace, Name: row.Name}, app)).To(Succeed())
		return app
	}
	g.Expect(untouchedSinceCreated(read())).To(BeTrue())

	f.argoStatus(row.Name, argov1alpha1.ApplicationStatus{Health: argov1alpha1.AppHealthStatus{Status: argov1alpha1.HealthStatusProgressing}})
	g.Expect(untouchedSinceCreated(read())).To(BeFalse())
	f.reconcile(row.Name)
	g.Expect(f.state(row.ID)).To(HaveField("Health", db.HealthProgressing))
}

func TestReconcileRecordsTheStateOnceAndOnlyWhenItChanged(t *testing.T) {
	g := NewWithT(t)
	f := newStatusFixture(t)
	row := f.application(f.r.Identity.InstanceID)
	status := argov1alpha1.ApplicationStatus{
		Health: argov1alpha1.AppHealthStatus{Status: argov1alpha1.HealthStatusDegraded},
		Sync: argov1alpha1.SyncStatus{Status: argov1alpha1.SyncStatusCodeOutOfSync, Revision: "abc",
			ComparedTo: argov1alpha1.ComparedTo{Destination: argov1alpha1.ApplicationDestination{Server: argocd.InClusterServer, Namespace: "team-a"}}},
		Resources: []argov1alpha1.ResourceStatus{{Version: "v1", Kind: "Deployment", Namespace: "team-a", Name: "web",
			Health: &argov1alpha1.HealthStatus{Status: argov1alpha1.HealthStatusDegraded, Message: "crash loop"}}},
	}
	f.argoStatus(row.Name, status)

	f.reconcile(row.Name)
	st := f.state(row.ID)
	g.Expect(st).NotTo(BeNil())
	g.Expect(st.EngineInstanceID).To(Equal(f.r.Identity.InstanceID))
	g.Expect(st.Health).To(Equal(db.HealthDegraded))
	g.Expect(st.HealthMessage).To(Equal("Deployment/web: crash loop"))
	g.Expect(st.SyncStatus).To(Equal(db.SyncStatusOutOfSync))
	g.Expect(st.Revision).To(Equal("abc"))
	g.Expect(st.ReconciledState).NotTo(BeNil(), "what the move to another instance waits for")
	g.Expect(st.ReconciledState.Destination.Namespace).To(Equal("team-a"))

	// Argo CD rewrites its status with nothing the service records changed: no write.
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	status.ReconciledAt = &now
	f.argoStatus(row.Name, status)
	f.reconcile(row.Name)
	g.Expect(f.state(row.ID).UpdatedAt).To(BeTemporally("==", st.UpdatedAt))

	status.Health.Status = argov1alpha1.HealthStatusHealthy
	f.argoStatus(row.Name, status)
	f.reconcile(row.Name)
	after := f.state(row.ID)
	g.Expect(after.Health).To(Equal(db.HealthHealthy))
	g.Expect(after.HealthMessage).To(BeEmpty())
	g.Expect(after.UpdatedAt).To(BeTemporally(">", st.UpdatedAt))
}

func TestReconcileIgnoresApplicationsOfAnotherInstanceOrWithoutARow(t *testing.T) {
	g := NewWithT(t)
	f := newStatusFixture(t)
	status := argov1alpha1.ApplicationStatus{Health: argov1alpha1.AppHealthStatus{Status: argov1alpha1.HealthStatusHealthy}}

	// The row moved to another instance: that instance's agent reports it.
	other := agenttest.Instance(t, cp, f.r.DB.(*bun.DB), f.store)
	moved := f.application(other.InstanceID)
	f.argoStatus(moved.Name, status)
	g.Expect(f.reconcile(moved.Name)).To(Equal(ctrl.Result{}))
	g.Expect(f.state(moved.ID)).To(BeNil())

	// The row is gone (the Application is being deleted): nothing to record, no retry.
	gone := f.application(f.r.Identity.InstanceID)
	f.argoStatus(gone.Name, status)
	g.Expect(f.store.DeleteApplication(f.ctx, f.r.DB, f.tenant.ID, gone.ID)).To(Succeed())
	g.Expect(f.reconcile(gone.Name)).To(Equal(ctrl.Result{}))

	// An Application that is gone altogether.
	g.Expect(f.reconcile("gitopsdepl-" + uuid.NewString())).To(Equal(ctrl.Result{}))
}

func TestReconcileKeepsTheResultOfASyncRunsOperation(t *testing.T) {
	g := NewWithT(t)
	f := newStatusFixture(t)
	row := f.application(f.r.Identity.InstanceID)
	so := &db.SyncOperation{TenantID: f.tenant.ID, ApplicationID: row.ID, DeploymentName: "web", Revision: "main"}
	g.Expect(f.store.CreateSyncOperation(f.ctx, f.r.DB, so)).To(Succeed())
	started := metav1.NewTime(time.Now().Add(-time.Minute).Truncate(time.Second))
	finishedAt := metav1.NewTime(started.Add(20 * time.Second))
	op := func(phase argov1alpha1.OperationPhase, finishedAt *metav1.Time, message string) *argov1alpha1.OperationState {
		return &argov1alpha1.OperationState{
			Operation: argov1alpha1.Operation{Info: []*argov1alpha1.Info{{Name: argocd.InfoSyncOperationID, Value: so.ID}}},
			Phase:     phase, Message: message, StartedAt: started, FinishedAt: finishedAt,
		}
	}
	status := argov1alpha1.ApplicationStatus{Health: argov1alpha1.AppHealthStatus{Status: argov1alpha1.HealthStatusProgressing}}

	status.OperationState = op(argov1alpha1.OperationRunning, nil, "syncing")
	f.argoStatus(row.Name, status)
	f.reconcile(row.Name)
	got, err := f.store.GetSyncOperation(f.ctx, f.r.DB, f.tenant.ID, so.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.ResultPhase).To(BeEmpty(), "still running")

	status.OperationState = op(argov1alpha1.OperationFailed, &finishedAt, "one or more objects failed to apply")
	f.argoStatus(row.Name, status)
	f.reconcile(row.Name)
	got, err = f.store.GetSyncOperation(f.ctx, f.r.DB, f.tenant.ID, so.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.ResultPhase).To(Equal("Failed"))
	g.Expect(got.ResultMessage).To(Equal("one or more objects failed to apply"))
	g.Expect(f.state(row.ID).OperationState.Phase).To(Equal(argov1alpha1.OperationFailed))
}
