package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	. "github.com/onsi/gomega"
	"github.com/uptrace/bun"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/dbtest"
	"github.com/gitops-service/gitops-service/backend-shared/db/notify"
	agent "github.com/gitops-service/gitops-service/cluster-agent/app"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/engine"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/opgc"
)

func TestOperationGarbageCollection(t *testing.T) {
	e := startAgent(t, true, func(o *agent.Options) { o.OperationGCInterval = 300 * time.Millisecond })
	g := e.g()
	tenant := e.tenant()

	// Finished operations: one kept for a second, one for an hour.
	finishedOp := func(keepSeconds int) *db.Operation {
		op := &db.Operation{EngineInstanceID: e.id.InstanceID, ResourceType: db.OperationResourceAppProject,
			ResourceID: tenant.ID, OwnerTenantID: tenant.ID, GCExpirationSeconds: keepSeconds}
		g.Expect(e.store.CreateOperation(e.ctx, e.db, op)).To(Succeed())
		_, err := e.store.UpdateOperationStates(e.ctx, e.db, e.id.InstanceID, []string{op.ID}, db.OperationCompleted, "done", notify.OperationChanged)
		g.Expect(err).NotTo(HaveOccurred())
		return op
	}
	expiring := finishedOp(1)
	kept := finishedOp(3600)
	e.createCR(expiring.ID)
	e.createCR(kept.ID)

	// A CR whose row does not exist: the agent rejects it (Failed, without deleting it),
	// and since no event follows, only the collector's sweep of finished CRs without a row
	// removes it.
	orphanID := uuid.NewString()
	e.createCR(orphanID)

	// A CR whose row was lost after the agent took it up (a database failed over to an
	// asynchronous replica): it stays unfinished and no event brings it back to the
	// operation controller, so the collector removes it.
	lost := &db.Operation{EngineInstanceID: e.id.InstanceID, ResourceType: db.OperationResourceAppProject,
		ResourceID: tenant.ID, OwnerTenantID: tenant.ID}
	g.Expect(e.store.CreateOperation(e.ctx, e.db, lost)).To(Succeed())
	e.createCR(lost.ID)
	g.Eventually(func() db.OperationState { return e.operation(lost.ID).State }, timeout, interval).Should(Equal(db.OperationCompleted))
	_, err := e.db.NewDelete().Model((*db.Operation)(nil)).Where("id = ?", lost.ID).Exec(e.ctx)
	g.Expect(err).NotTo(HaveOccurred())

	crGone := func(id string) func() bool {
		return func() bool {
			err := e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: v1.OperationName(id)}, &v1.Operation{})
			return apierrors.IsNotFound(err)
		}
	}
	g.Eventually(func() error {
		_, err := e.store.GetOperation(e.ctx, e.db, expiring.ID)
		return err
	}, timeout, interval).Should(MatchError(db.ErrNotFound))
	g.Eventually(crGone(expiring.ID), timeout, interval).Should(BeTrue())
	g.Eventually(crGone(orphanID), timeout, interval).Should(BeTrue())
	g.Eventually(crGone(lost.ID), timeout, interval).Should(BeTrue())

	g.Consistently(func(g Gomega) {
		g.Expect(e.store.GetOperation(e.ctx, e.db, kept.ID)).NotTo(BeNil())
		g.Expect(e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: v1.OperationName(kept.ID)}, &v1.Operation{})).To(Succeed())
	}, time.Second, interval).Should(Succeed())
	found, err := opgc.ExistingOperationIDs(e.ctx, e.db, []string{kept.ID, expiring.ID, orphanID})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(found).To(Equal(map[string]bool{kept.ID: true}))
}

// TestOperationsWithoutACRAreCollected: operations written under another operation's signal
// have no CR of their own; they are collected all the same, also once the signal's CR is
// gone.
func TestOperationsWithoutACRAreCollected(t *testing.T) {
	e := startAgent(t, true, func(o *agent.Options) { o.OperationGCInterval = 300 * time.Millisecond })
	g := e.g()
	tenant := e.tenant()
	signalled := e.signal(db.OperationResourceAppProject, tenant.ID, tenant.ID)
	e.completed(signalled.ID)
	var under []string
	for range 3 {
		op := &db.Operation{EngineInstanceID: e.id.InstanceID, ResourceType: db.OperationResourceAppProject,
			ResourceID: tenant.ID, OwnerTenantID: tenant.ID, GCExpirationSeconds: 1}
		g.Expect(e.store.CreateOperation(e.ctx, e.db, op)).To(Succeed())
		_, err := e.store.UpdateOperationStates(e.ctx, e.db, e.id.InstanceID, []string{op.ID}, db.OperationCompleted, "done", notify.OperationChanged)
		g.Expect(err).NotTo(HaveOccurred())
		under = append(under, op.ID)
	}
	// The signal's row goes first, with its CR.
	_, err := e.db.NewUpdate().Table("operations").Set("gc_expiration_seconds = 1, gc_expires_at = now()").
		Where("id = ?", signalled.ID).Exec(e.ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: v1.OperationName(signalled.ID)}, &v1.Operation{}))
	}, timeout, interval).Should(BeTrue())
	g.Eventually(func() (map[string]bool, error) {
		return opgc.ExistingOperationIDs(e.ctx, e.db, append(under, signalled.ID))
	}, timeout, interval).Should(BeEmpty(), "the operations without a CR are collected too")
}

// untouchable counts the uses of the database and fails the test on any once forbidden.
type untouchable struct {
	t         *testing.T
	reads     *int
	forbidden *bool
}

func (u untouchable) read() {
	if *u.forbidden {
		u.t.Fatal("an idle instance without Operation CRs read the database")
	}
	*u.reads++
}

func (u untouchable) GarbageCollectOperations(context.Context, bun.IDB, time.Time, int) ([]db.Operation, error) {
	u.read()
	return nil, nil
}

func (u untouchable) HasOperations(context.Context, bun.IDB, string) (bool, error) {
	u.read()
	return false, nil
}

// Once a run left the instance without operations, and while its namespace has no CR (CRs
// of other instances do not count), the collector reads nothing.
func TestAnInstanceWithoutOperationCRsCostsTheDatabaseNothing(t *testing.T) {
	ctx := context.Background()
	other := &v1.Operation{ObjectMeta: metav1.ObjectMeta{Name: "operation-1", Namespace: cp.NewNamespace(t, "argocd-other-")},
		Spec: v1.OperationSpec{OperationID: uuid.NewString()}}
	if err := cp.Client.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	reads, forbidden := 0, false
	c := &opgc.Collector{
		Client:   cp.Client,
		DB:       dbtest.NewDB(t),
		Store:    untouchable{t: t, reads: &reads, forbidden: &forbidden},
		Identity: engine.Identity{Namespace: cp.NewNamespace(t, "argocd-")},
		Existing: func(context.Context, bun.IDB, []string) (map[string]bool, error) {
			t.Fatal("an instance without Operation CRs checked operation ids")
			return nil, nil
		},
	}
	if err := c.Collect(ctx); err != nil {
		t.Fatal(err)
	}
	if reads == 0 {
		t.Fatal("the first run did not look for operations to collect")
	}
	forbidden = true
	for range 3 {
		if err := c.Collect(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
