package app_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/syncop"
)

func TestSyncOperation(t *testing.T) {
	e := startAgent(t, true, nil)
	g := e.g()
	tenant := e.tenant()
	uid := uuid.NewString()
	name := argocd.ApplicationName(types.UID(uid))
	row := e.application(tenant, uid, repoURL, "apps/one", "team-a", false)
	e.completed(e.signal(db.OperationResourceApplication, row.ID, tenant.ID).ID)

	// Argo CD is busy with another operation.
	e.argoUpdate(name, func(a *argov1alpha1.Application) {
		a.Status.OperationState = &argov1alpha1.OperationState{
			Operation: argov1alpha1.Operation{Sync: &argov1alpha1.SyncOperation{Revision: "earlier"}},
			Phase:     argov1alpha1.OperationRunning, StartedAt: metav1.Now(),
		}
	})
	so := &db.SyncOperation{TenantID: tenant.ID, ApplicationID: row.ID, DeploymentName: "depl", Revision: "v1.2.3"}
	g.Expect(e.store.CreateSyncOperation(e.ctx, e.db, so)).To(Succeed())
	first := e.signal(db.OperationResourceSyncOperation, so.ID, tenant.ID)
	g.Eventually(func(g Gomega) {
		op := e.operation(first.ID)
		g.Expect(op.State).To(Equal(db.OperationInProgress))
		g.Expect(op.HumanReadableState).To(Equal("waiting for the running operation of Argo CD Application " + name + " to finish"))
	}, timeout, interval).Should(Succeed())
	g.Consistently(func() *argov1alpha1.Operation { return e.argoApp(name).Operation }, time.Second, interval).Should(BeNil(),
		"an operation in progress is never overwritten")

	// The other operation finishes: the agent asks for the sync, once.
	e.argoUpdate(name, func(a *argov1alpha1.Application) {
		finished := metav1.Now()
		a.Status.OperationState.Phase = argov1alpha1.OperationSucceeded
		a.Status.OperationState.FinishedAt = &finished
	})
	op := e.completed(first.ID)
	g.Expect(op.HumanReadableState).To(Equal(`sync of Argo CD Application ` + name + ` to revision "v1.2.3" requested`))
	app := e.argoApp(name)
	g.Expect(app.Annotations).To(HaveKeyWithValue(syncop.AnnotationRefresh, "hard"))
	g.Expect(app.Status.OperationState).To(BeNil())
	g.Expect(app.Operation).NotTo(BeNil())
	g.Expect(app.Operation.Sync.Revision).To(Equal("v1.2.3"))
	g.Expect(app.Operation.Sync.SyncOptions).To(ContainElement(argocd.SyncOptionPrunePropagationBackground))
	g.Expect(app.Operation.Sync.Prune).To(BeFalse(), "a manual sync does not prune")
	g.Expect(app.Operation.InitiatedBy.Username).To(Equal(syncop.Initiator))
	g.Expect(app.Operation.Info).To(ContainElement(&argov1alpha1.Info{Name: argocd.InfoSyncOperationID, Value: so.ID}))
	g.Expect(app.Operation.Retry.Limit).To(BeEquivalentTo(-1))

	// Argo CD starts it. Another operation on the same sync (the backend signalling again)
	// recognises it and patches nothing.
	started := e.argoUpdate(name, func(a *argov1alpha1.Application) {
		a.Status.OperationState = &argov1alpha1.OperationState{Operation: *a.Operation, Phase: argov1alpha1.OperationRunning, StartedAt: metav1.Now()}
		a.Operation = nil
	})
	again := e.completed(e.signal(db.OperationResourceSyncOperation, so.ID, tenant.ID).ID)
	g.Expect(again.HumanReadableState).To(Equal("sync of Argo CD Application " + name + " requested"))
	g.Expect(e.argoApp(name).ResourceVersion).To(Equal(started.ResourceVersion), "the Application was not patched again")

	// The SyncRun is deleted mid-sync: its sync is terminated.
	g.Expect(e.store.UpdateSyncOperationDesiredState(e.ctx, e.db, tenant.ID, so.ID, db.SyncTerminated)).To(Succeed())
	term := e.completed(e.signal(db.OperationResourceSyncOperation, so.ID, tenant.ID).ID)
	g.Expect(term.HumanReadableState).To(Equal("termination of the running operation of Argo CD Application " + name + " requested"))
	g.Expect(e.argoApp(name).Status.OperationState.Phase).To(Equal(argov1alpha1.OperationTerminating))

	// A sync whose application row is gone has nothing to do.
	orphan := &db.SyncOperation{TenantID: tenant.ID, ApplicationID: row.ID, DeploymentName: "depl", Revision: "v2"}
	g.Expect(e.store.CreateSyncOperation(e.ctx, e.db, orphan)).To(Succeed())
	g.Expect(e.store.DeleteApplication(e.ctx, e.db, tenant.ID, row.ID)).To(Succeed())
	gone := e.completed(e.signal(db.OperationResourceSyncOperation, orphan.ID, tenant.ID).ID)
	g.Expect(gone.HumanReadableState).To(Equal("the application of the sync operation no longer exists; nothing to sync"))
}

// TestSyncOperationWithdrawnBeforeArgoCDStarts: terminating a sync Argo CD has not picked
// up yet removes its `operation`.
func TestSyncOperationWithdrawnBeforeArgoCDStarts(t *testing.T) {
	e := startAgent(t, true, nil)
	g := e.g()
	tenant := e.tenant()
	uid := uuid.NewString()
	name := argocd.ApplicationName(types.UID(uid))
	row := e.application(tenant, uid, repoURL, "apps/one", "team-a", false)
	so := &db.SyncOperation{TenantID: tenant.ID, ApplicationID: row.ID, DeploymentName: "depl", Revision: "main"}
	g.Expect(e.store.CreateSyncOperation(e.ctx, e.db, so)).To(Succeed())

	// The sync's operation is picked up before the Application's (held In_Progress here, so
	// that the signal does not take it): it waits for the Application to be created.
	appOp := &db.Operation{EngineInstanceID: e.id.InstanceID, ResourceType: db.OperationResourceApplication,
		ResourceID: row.ID, OwnerTenantID: tenant.ID, State: db.OperationInProgress, HumanReadableState: "waiting"}
	g.Expect(e.store.CreateOperation(e.ctx, e.db, appOp)).To(Succeed())
	syncOp := e.signal(db.OperationResourceSyncOperation, so.ID, tenant.ID)
	g.Eventually(func() string { return e.operation(syncOp.ID).HumanReadableState }, timeout, interval).
		Should(Equal("waiting for Argo CD Application " + name + " to be created"))
	e.createCR(appOp.ID)
	e.completed(appOp.ID)
	e.completed(syncOp.ID)
	g.Expect(e.argoApp(name).Operation).NotTo(BeNil())

	g.Expect(e.store.UpdateSyncOperationDesiredState(e.ctx, e.db, tenant.ID, so.ID, db.SyncTerminated)).To(Succeed())
	op := e.completed(e.signal(db.OperationResourceSyncOperation, so.ID, tenant.ID).ID)
	g.Expect(op.HumanReadableState).To(Equal("sync of Argo CD Application " + name + " withdrawn before Argo CD started it"))
	g.Expect(e.argoApp(name).Operation).To(BeNil())
}

// TestASyncKeepsItsResultWhenTheNextSyncReplacesIt: how a SyncRun's sync ended is kept with
// its sync operation, whether the agent sees Argo CD finish it or only finds it finished
// when the next sync replaces Argo CD's operation state.
func TestASyncKeepsItsResultWhenTheNextSyncReplacesIt(t *testing.T) {
	e := startAgent(t, true, nil)
	g := e.g()
	tenant := e.tenant()
	uid := uuid.NewString()
	name := argocd.ApplicationName(types.UID(uid))
	row := e.application(tenant, uid, repoURL, "apps/one", "team-a", false)
	e.completed(e.signal(db.OperationResourceApplication, row.ID, tenant.ID).ID)
	syncOp := func() *db.SyncOperation {
		so := &db.SyncOperation{TenantID: tenant.ID, ApplicationID: row.ID, DeploymentName: "depl", Revision: "main"}
		g.Expect(e.store.CreateSyncOperation(e.ctx, e.db, so)).To(Succeed())
		return so
	}
	result := func(so *db.SyncOperation) func() ([]string, error) {
		return func() ([]string, error) {
			got, err := e.store.GetSyncOperation(e.ctx, e.db, tenant.ID, so.ID)
			if err != nil {
				return nil, err
			}
			return []string{got.ResultPhase, got.ResultMessage}, nil
		}
	}
	finishedState := func(so *db.SyncOperation, phase argov1alpha1.OperationPhase, message string, finishedAt *metav1.Time) func(*argov1alpha1.Application) {
		return func(a *argov1alpha1.Application) {
			a.Operation = nil
			a.Status.OperationState = &argov1alpha1.OperationState{
				Operation: argov1alpha1.Operation{Sync: &argov1alpha1.SyncOperation{Revision: "main"},
					Info: []*argov1alpha1.Info{{Name: argocd.InfoSyncOperationID, Value: so.ID}}},
				Phase: phase, Message: message, StartedAt: metav1.Now(), FinishedAt: finishedAt,
			}
		}
	}

	// Argo CD finishes the first sync and the agent sees it.
	first := syncOp()
	now := metav1.Now()
	e.argoUpdate(name, finishedState(first, argov1alpha1.OperationFailed, "one or more objects failed to apply", &now))
	g.Eventually(result(first), timeout, interval).Should(Equal([]string{"Failed", "one or more objects failed to apply"}))

	// The second finished in a status the agent did not record (no finish time), and the
	// third sync replaces it: its result is kept first.
	second, third := syncOp(), syncOp()
	e.argoUpdate(name, finishedState(second, argov1alpha1.OperationSucceeded, "successfully synced", nil))
	g.Consistently(result(second), time.Second, interval).Should(Equal([]string{"", ""}))
	e.completed(e.signal(db.OperationResourceSyncOperation, third.ID, tenant.ID).ID)
	g.Expect(e.argoApp(name).Operation.Info).To(ContainElement(&argov1alpha1.Info{Name: argocd.InfoSyncOperationID, Value: third.ID}))
	g.Expect(result(second)()).To(Equal([]string{"Succeeded", "successfully synced"}))
	g.Expect(result(first)()).To(Equal([]string{"Failed", "one or more objects failed to apply"}), "a kept result never changes")
}
