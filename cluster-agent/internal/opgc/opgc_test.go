package opgc

import (
	"context"
	"os"
	"testing"

	"github.com/google/uuid"
	. "github.com/onsi/gomega"
	"github.com/uptrace/bun"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/dbtest"
	"github.com/gitops-service/gitops-service/backend-shared/db/notify"
	"github.com/gitops-service/gitops-service/backend-shared/testenv"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/agenttest"
)

// One API server (with the Operation CRD) and one PostgreSQL for the package.
var cp *testenv.ControlPlane

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(testenv.Options{WithoutArgoCDCRDs: true}, &cp, func() int { return dbtest.Main(m) }))
}

type fixture struct {
	t     *testing.T
	ctx   context.Context
	db    *bun.DB
	store *db.Store
	c     *Collector
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	bdb := dbtest.NewDB(t)
	store := db.NewStore(nil)
	return &fixture{t: t, ctx: context.Background(), db: bdb, store: store,
		c: &Collector{Client: cp.Client, DB: bdb, Store: store, Identity: agenttest.Instance(t, cp, bdb, store)}}
}

// operation writes an operation of instance; a finished one's retention is over when
// expired, else an hour away.
func (f *fixture) operation(instanceID string, state db.OperationState, expired bool) *db.Operation {
	f.t.Helper()
	g := NewWithT(f.t)
	op := &db.Operation{EngineInstanceID: instanceID, ResourceType: db.OperationResourceAppProject, ResourceID: uuid.NewString(),
		HumanReadableState: "waiting", GCExpirationSeconds: 3600}
	g.Expect(f.store.CreateOperation(f.ctx, f.db, op)).To(Succeed())
	if state != db.OperationWaiting {
		_, err := f.store.UpdateOperationStates(f.ctx, f.db, instanceID, []string{op.ID}, state, "done", notify.OperationChanged)
		g.Expect(err).NotTo(HaveOccurred())
	}
	if expired {
		_, err := f.db.NewUpdate().Model((*db.Operation)(nil)).Set("gc_expires_at = now() - interval '1 minute'").Where("id = ?", op.ID).Exec(f.ctx)
		g.Expect(err).NotTo(HaveOccurred())
	}
	return op
}

func (f *fixture) cr(ns, name, operationID string, state v1.OperationStatusState) {
	f.t.Helper()
	g := NewWithT(f.t)
	cr := &v1.Operation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1.OperationSpec{OperationID: operationID}}
	g.Expect(cp.Client.Create(f.ctx, cr)).To(Succeed())
	if state != "" {
		cr.Status.State = state
		g.Expect(cp.Client.Status().Update(f.ctx, cr)).To(Succeed())
	}
}

func (f *fixture) hasCR(ns, name string) bool {
	f.t.Helper()
	err := cp.Client.Get(f.ctx, client.ObjectKey{Namespace: ns, Name: name}, &v1.Operation{})
	if client.IgnoreNotFound(err) != nil {
		f.t.Fatal(err)
	}
	return err == nil
}

func (f *fixture) hasRow(id string) bool {
	f.t.Helper()
	_, err := f.store.GetOperation(f.ctx, f.db, id)
	if err != nil {
		NewWithT(f.t).Expect(err).To(MatchError(db.ErrNotFound))
		return false
	}
	return true
}

func TestCollectDeletesExpiredOperationsWithTheirCRs(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	ns := f.c.Identity.Namespace
	expired := f.operation(f.c.Identity.InstanceID, db.OperationCompleted, true)
	f.cr(ns, v1.OperationName(expired.ID), expired.ID, "")
	// Most operations have no CR of their own (written under another's signal).
	expiredNoCR := f.operation(f.c.Identity.InstanceID, db.OperationFailed, true)
	kept := f.operation(f.c.Identity.InstanceID, db.OperationCompleted, false)
	f.cr(ns, v1.OperationName(kept.ID), kept.ID, "")
	pending := f.operation(f.c.Identity.InstanceID, db.OperationWaiting, false)
	f.cr(ns, v1.OperationName(pending.ID), pending.ID, "")
	// Another instance's expired row goes too; its CR, in its own namespace, is its agent's.
	other := agenttest.Instance(t, cp, f.db, f.store)
	theirs := f.operation(other.InstanceID, db.OperationCompleted, true)
	f.cr(other.Namespace, v1.OperationName(theirs.ID), theirs.ID, "")

	g.Expect(f.c.Collect(f.ctx)).To(Succeed())
	g.Expect(f.hasRow(expired.ID)).To(BeFalse())
	g.Expect(f.hasCR(ns, v1.OperationName(expired.ID))).To(BeFalse())
	g.Expect(f.hasRow(expiredNoCR.ID)).To(BeFalse())
	g.Expect(f.hasRow(theirs.ID)).To(BeFalse())
	g.Expect(f.hasCR(other.Namespace, v1.OperationName(theirs.ID))).To(BeTrue())
	// Retention not over, or not finished: kept, with their CRs.
	g.Expect(f.hasRow(kept.ID)).To(BeTrue())
	g.Expect(f.hasCR(ns, v1.OperationName(kept.ID))).To(BeTrue())
	g.Expect(f.hasRow(pending.ID)).To(BeTrue())
	g.Expect(f.hasCR(ns, v1.OperationName(pending.ID))).To(BeTrue())
}

func TestCollectWorksThroughManyBatches(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	f.c.BatchSize = 2
	var ids []string
	for range 5 {
		ids = append(ids, f.operation(f.c.Identity.InstanceID, db.OperationCompleted, true).ID)
	}
	g.Expect(f.c.Collect(f.ctx)).To(Succeed())
	for _, id := range ids {
		g.Expect(f.hasRow(id)).To(BeFalse(), "a batch was left for the next run")
	}
}

func TestCollectDeletesOrphanedCRs(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	ns := f.c.Identity.Namespace
	live := f.operation(f.c.Identity.InstanceID, db.OperationWaiting, false)
	tests := []struct {
		name, crName, operationID string
		state                     v1.OperationStatusState
		wantKept                  bool
	}{
		// Its row is gone (collected while the CR's deletion failed, or lost with a
		// database restored from a backup): nothing would ever reconcile it again.
		{name: "an unfinished CR without a row", crName: "operation-lost", operationID: uuid.NewString(), wantKept: false},
		{name: "a finished CR without a row", crName: "operation-done", operationID: uuid.NewString(), state: v1.OperationStateCompleted, wantKept: false},
		{name: "a CR with a row", crName: v1.OperationName(live.ID), operationID: live.ID, wantKept: true},
		// A second CR naming a live row (created by hand) is not an orphan either.
		{name: "another CR of a row", crName: "copy-of-op", operationID: live.ID, wantKept: true},
		// Not an id: deleted once the operation controller has rejected it, not before.
		{name: "a rejected CR that names no operation", crName: "rejected-bad-id", operationID: "not-a-uuid", state: v1.OperationStateFailed, wantKept: false},
		{name: "a CR that names no operation, not rejected yet", crName: "bad-id", operationID: "not-a-uuid", wantKept: true},
	}
	for _, tt := range tests {
		f.cr(ns, tt.crName, tt.operationID, tt.state)
	}
	g.Expect(f.c.Collect(f.ctx)).To(Succeed())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(f.hasCR(ns, tt.crName)).To(Equal(tt.wantKept))
		})
	}
	g.Expect(f.hasRow(live.ID)).To(BeTrue())
}

func TestCollectReadsNothingOnceDrainedUntilACRAppears(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	g.Expect(f.c.Collect(f.ctx)).To(Succeed())
	g.Expect(f.c.drained).To(BeTrue(), "no operation left")

	// An expired row with no CR in the namespace: an idle instance does not look for it.
	quiet := f.operation(f.c.Identity.InstanceID, db.OperationCompleted, true)
	g.Expect(f.c.Collect(f.ctx)).To(Succeed())
	g.Expect(f.hasRow(quiet.ID)).To(BeTrue())

	// A new operation comes with a CR: the collector reads again.
	next := f.operation(f.c.Identity.InstanceID, db.OperationWaiting, false)
	f.cr(f.c.Identity.Namespace, v1.OperationName(next.ID), next.ID, "")
	g.Expect(f.c.Collect(f.ctx)).To(Succeed())
	g.Expect(f.hasRow(quiet.ID)).To(BeFalse())
	g.Expect(f.c.drained).To(BeFalse(), "an operation is left")
}

func TestExistingOperationIDs(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	a := f.operation(f.c.Identity.InstanceID, db.OperationWaiting, false)
	b := f.operation(f.c.Identity.InstanceID, db.OperationCompleted, false)
	missing := uuid.NewString()

	found, err := ExistingOperationIDs(f.ctx, f.db, []string{a.ID, b.ID, missing})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(found).To(Equal(map[string]bool{a.ID: true, b.ID: true}))
	found, err = ExistingOperationIDs(f.ctx, f.db, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(found).To(BeEmpty())
}

func TestTaskRunsCollectUnderItsName(t *testing.T) {
	g := NewWithT(t)
	c := &Collector{Interval: DefaultInterval}
	task := c.Task()
	g.Expect(task.Name).To(Equal("operation-gc"))
	g.Expect(task.Interval).To(Equal(DefaultInterval))
	g.Expect(task.Run).NotTo(BeNil())
}
