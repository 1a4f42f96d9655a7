package syncop

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	. "github.com/onsi/gomega"
	"github.com/uptrace/bun"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/dbtest"
	"github.com/gitops-service/gitops-service/backend-shared/ssa"
	"github.com/gitops-service/gitops-service/backend-shared/testenv"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/agenttest"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/operation"
)

// One API server with Argo CD's CRDs (no Argo CD: the test plays its part) and one
// PostgreSQL for the package.
var cp *testenv.ControlPlane

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(testenv.Options{WithoutServiceCRDs: true}, &cp, func() int { return dbtest.Main(m) }))
}

type fixture struct {
	t      *testing.T
	ctx    context.Context
	db     *bun.DB
	store  *db.Store
	h      *Handler
	tenant *db.Tenant
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	bdb := dbtest.NewDB(t)
	store := db.NewStore(nil)
	id := agenttest.Instance(t, cp, bdb, store)
	tenant := agenttest.Tenant(t, bdb, store, id.InstanceID)
	h := &Handler{Client: cp.Client, APIReader: cp.Client, DB: bdb, Store: store, Identity: id, PollInterval: 300 * time.Millisecond}
	return &fixture{t: t, ctx: ctx, db: bdb, store: store, h: h, tenant: tenant}
}

// row writes a manual deployment's application row on instanceID.
func (f *fixture) row(instanceID string) *db.Application {
	f.t.Helper()
	id := uuid.NewString()
	row := &db.Application{ID: id, TenantID: f.tenant.ID, Name: argocd.ApplicationName(types.UID(id)), EngineInstanceID: instanceID,
		Spec: argocd.ApplicationSpec(argocd.ApplicationInput{
			RepoURL: "https://example.com/repo.git", Path: "app", TargetRevision: "main",
			Destination: argocd.Destination{Namespace: "team-a"}, Project: argocd.AppProjectName(f.tenant.ID),
			SyncOptions: []string{"CreateNamespace=true"},
		})}
	_, err := f.store.UpsertApplication(f.ctx, f.db, row)
	NewWithT(f.t).Expect(err).NotTo(HaveOccurred())
	return row
}

// applied writes a row and applies its Argo CD Application.
func (f *fixture) applied() *db.Application {
	f.t.Helper()
	row := f.row(f.h.Identity.InstanceID)
	NewWithT(f.t).Expect(ssa.Apply(f.ctx, cp.Client, f.h.Identity.Application(row.Name, row.ID, row.TenantID, row.Spec))).To(Succeed())
	return row
}

// syncOp writes the sync operation of a SyncRun on the application.
func (f *fixture) syncOp(applicationID, revision string) *db.SyncOperation {
	f.t.Helper()
	so := &db.SyncOperation{ID: uuid.NewString(), TenantID: f.tenant.ID, ApplicationID: applicationID, DeploymentName: "web", Revision: revision}
	NewWithT(f.t).Expect(f.store.CreateSyncOperation(f.ctx, f.db, so)).To(Succeed())
	return so
}

func (f *fixture) handle(so *db.SyncOperation) operation.Outcome {
	f.t.Helper()
	out, err := f.h.Handle(f.ctx, operation.Target{ResourceID: so.ID, TenantID: so.TenantID})
	NewWithT(f.t).Expect(err).NotTo(HaveOccurred())
	return out
}

func (f *fixture) argoApp(name string) *argov1alpha1.Application {
	f.t.Helper()
	app := &argov1alpha1.Application{}
	NewWithT(f.t).Expect(cp.Client.Get(f.ctx, client.ObjectKey{Namespace: f.h.Identity.Namespace, Name: name}, app)).To(Succeed())
	return app
}

// argoUpdate changes an Application as Argo CD would.
func (f *fixture) argoUpdate(name string, mutate func(*argov1alpha1.Application)) {
	f.t.Helper()
	app := f.argoApp(name)
	base := app.DeepCopy()
	mutate(app)
	NewWithT(f.t).Expect(cp.Client.Patch(f.ctx, app, client.MergeFrom(base), client.FieldOwner("argocd-application-controller"))).To(Succeed())
}

func TestHandleHasNothingToDoForASyncWithoutItsRows(t *testing.T) {
	f := newFixture(t)
	other := agenttest.Instance(t, cp, f.db, f.store)
	elsewhere := f.row(other.InstanceID)
	deleted := f.row(f.h.Identity.InstanceID)
	orphaned := f.syncOp(deleted.ID, "")
	// Deleting the application keeps the sync operation, without its application.
	g := NewWithT(t)
	g.Expect(f.store.DeleteApplication(f.ctx, f.db, f.tenant.ID, deleted.ID)).To(Succeed())

	gone := operation.Completed("the sync operation no longer exists; nothing to do")
	noApp := operation.Completed("the application of the sync operation no longer exists; nothing to sync")
	tests := []struct {
		name   string
		target operation.Target
		want   operation.Outcome
	}{
		// The tenant was deleted, and with it the rows it owned.
		{name: "no tenant", target: operation.Target{ResourceID: uuid.NewString()}, want: gone},
		{name: "no sync operation", target: operation.Target{ResourceID: uuid.NewString(), TenantID: f.tenant.ID}, want: gone},
		{name: "not an id", target: operation.Target{ResourceID: "not-a-uuid", TenantID: f.tenant.ID}, want: gone},
		{name: "the application was deleted", target: operation.Target{ResourceID: orphaned.ID, TenantID: f.tenant.ID}, want: noApp},
		// Another instance's agent syncs it.
		{name: "the application is on another instance", target: operation.Target{ResourceID: f.syncOp(elsewhere.ID, "").ID, TenantID: f.tenant.ID}, want: noApp},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			out, err := f.h.Handle(f.ctx, tt.target)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(out).To(Equal(tt.want))
		})
	}
}

func TestHandleWaitsForAnApplicationAboutToBeCreated(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	row := f.row(f.h.Identity.InstanceID)
	so := f.syncOp(row.ID, "")

	// No Application and nothing that would create it: the sync cannot happen.
	g.Expect(f.handle(so)).To(Equal(operation.Failed(fmt.Sprintf("Argo CD Application %s does not exist", row.Name))))

	// Another instance's pending operation on the application does not create it here.
	other := agenttest.Instance(t, cp, f.db, f.store)
	foreign := &db.Operation{EngineInstanceID: other.InstanceID, ResourceType: db.OperationResourceApplication, ResourceID: row.ID, HumanReadableState: "waiting"}
	g.Expect(f.store.CreateOperation(f.ctx, f.db, foreign)).To(Succeed())
	g.Expect(f.handle(so).State).To(Equal(db.OperationFailed))

	// This instance's Application operation is still pending: the Application is on its way.
	pending := &db.Operation{EngineInstanceID: f.h.Identity.InstanceID, ResourceType: db.OperationResourceApplication, ResourceID: row.ID, HumanReadableState: "waiting"}
	g.Expect(f.store.CreateOperation(f.ctx, f.db, pending)).To(Succeed())
	g.Expect(f.handle(so)).To(Equal(operation.Waiting(fmt.Sprintf("waiting for Argo CD Application %s to be created", row.Name), 300*time.Millisecond)))
}

func TestHandleRequestsTheSyncOnce(t *testing.T) {
	tests := []struct {
		name         string
		revision     string
		wantRevision string
		wantMessage  string
	}{
		{name: "to a revision", revision: "v1.2.0", wantRevision: "v1.2.0",
			wantMessage: `sync of Argo CD Application %s to revision "v1.2.0" requested`},
		// Without one, the Application's target revision.
		{name: "to the target revision", revision: "", wantRevision: "main",
			wantMessage: "sync of Argo CD Application %s requested"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			f := newFixture(t)
			row := f.applied()
			so := f.syncOp(row.ID, tt.revision)

			g.Expect(f.handle(so)).To(Equal(operation.Completed(fmt.Sprintf(tt.wantMessage, row.Name))))
			app := f.argoApp(row.Name)
			g.Expect(app.Operation).NotTo(BeNil())
			g.Expect(argocd.SyncOperationID(app.Operation)).To(Equal(so.ID), "the SyncRun's result is found by this id")
			g.Expect(app.Operation.Sync.Revision).To(Equal(tt.wantRevision))
			g.Expect(app.Operation.InitiatedBy.Username).To(Equal(Initiator))
			g.Expect(app.Operation.Sync.SyncOptions).To(ContainElement("CreateNamespace=true"))
			// Argo CD compares against Git afresh before it syncs.
			g.Expect(app.Annotations).To(HaveKeyWithValue(AnnotationRefresh, "hard"))

			// Argo CD takes the operation and runs it: the same sync is not requested again.
			f.argoUpdate(row.Name, func(a *argov1alpha1.Application) {
				a.Status.OperationState = &argov1alpha1.OperationState{Operation: *a.Operation, Phase: argov1alpha1.OperationRunning, StartedAt: metav1.Now()}
				a.Operation = nil
			})
			g.Expect(f.handle(so)).To(Equal(operation.Completed(fmt.Sprintf("sync of Argo CD Application %s requested", row.Name))))
			g.Expect(f.argoApp(row.Name).Operation).To(BeNil(), "a second sync was requested")
		})
	}
}

func TestHandleWaitsForAnotherOperationToFinish(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	row := f.applied()
	earlier := f.syncOp(row.ID, "v1")
	later := f.syncOp(row.ID, "v2")
	g.Expect(f.handle(earlier).State).To(Equal(db.OperationCompleted))

	// The earlier sync is still pending: the later one waits rather than replace it.
	busy := operation.Waiting(fmt.Sprintf("waiting for the running operation of Argo CD Application %s to finish", row.Name), 300*time.Millisecond)
	g.Expect(f.handle(later)).To(Equal(busy))
	g.Expect(argocd.SyncOperationID(f.argoApp(row.Name).Operation)).To(Equal(earlier.ID))

	// Running.
	started := metav1.NewTime(time.Now().Add(-time.Minute).Truncate(time.Second))
	f.argoUpdate(row.Name, func(a *argov1alpha1.Application) {
		a.Status.OperationState = &argov1alpha1.OperationState{Operation: *a.Operation, Phase: argov1alpha1.OperationRunning, StartedAt: started}
		a.Operation = nil
	})
	g.Expect(f.handle(later)).To(Equal(busy))

	// Finished: the later sync replaces it, and keeps the earlier one's result for its SyncRun.
	finished := metav1.NewTime(started.Add(10 * time.Second))
	f.argoUpdate(row.Name, func(a *argov1alpha1.Application) {
		a.Status.OperationState.Phase = argov1alpha1.OperationSucceeded
		a.Status.OperationState.Message = "successfully synced (all tasks run)"
		a.Status.OperationState.FinishedAt = &finished
	})
	g.Expect(f.handle(later).Message).To(Equal(fmt.Sprintf(`sync of Argo CD Application %s to revision "v2" requested`, row.Name)))
	app := f.argoApp(row.Name)
	g.Expect(argocd.SyncOperationID(app.Operation)).To(Equal(later.ID))
	g.Expect(app.Status.OperationState).To(BeNil(), "the finished operation's state is cleared with the new request")
	kept, err := f.store.GetSyncOperation(f.ctx, f.db, f.tenant.ID, earlier.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kept.ResultPhase).To(Equal("Succeeded"))
	g.Expect(kept.ResultMessage).To(Equal("successfully synced (all tasks run)"))
}

func TestHandleTerminatesOnlyItsOwnSync(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	row := f.applied()
	so := f.syncOp(row.ID, "v1")
	terminate := func() operation.Outcome {
		t.Helper()
		g.Expect(f.store.UpdateSyncOperationDesiredState(f.ctx, f.db, f.tenant.ID, so.ID, db.SyncTerminated)).To(Succeed())
		return f.handle(so)
	}

	// Nothing to terminate yet.
	g.Expect(terminate()).To(Equal(operation.Completed(fmt.Sprintf("no operation of Argo CD Application %s is running; nothing to terminate", row.Name))))

	// Requested but not started: withdrawn.
	g.Expect(f.store.UpdateSyncOperationDesiredState(f.ctx, f.db, f.tenant.ID, so.ID, db.SyncRunning)).To(Succeed())
	g.Expect(f.handle(so).State).To(Equal(db.OperationCompleted))
	g.Expect(terminate()).To(Equal(operation.Completed(fmt.Sprintf("sync of Argo CD Application %s withdrawn before Argo CD started it", row.Name))))
	g.Expect(f.argoApp(row.Name).Operation).To(BeNil())

	// Another sync running: left alone.
	f.argoUpdate(row.Name, func(a *argov1alpha1.Application) {
		a.Status.OperationState = &argov1alpha1.OperationState{Operation: *withID(uuid.NewString()), Phase: argov1alpha1.OperationRunning, StartedAt: metav1.Now()}
	})
	g.Expect(terminate()).To(Equal(operation.Completed(fmt.Sprintf("the running operation of Argo CD Application %s belongs to another sync; left running", row.Name))))
	g.Expect(f.argoApp(row.Name).Status.OperationState.Phase).To(Equal(argov1alpha1.OperationRunning))

	// Its own sync running: Argo CD is asked to terminate it.
	f.argoUpdate(row.Name, func(a *argov1alpha1.Application) {
		a.Status.OperationState.Operation = *withID(so.ID)
	})
	g.Expect(terminate()).To(Equal(operation.Completed(fmt.Sprintf("termination of the running operation of Argo CD Application %s requested", row.Name))))
	g.Expect(f.argoApp(row.Name).Status.OperationState.Phase).To(Equal(argov1alpha1.OperationTerminating))
}
