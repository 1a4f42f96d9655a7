package operation

import (
	"context"
	"os"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/uptrace/bun"
	"k8s.io/client-go/util/workqueue"

	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/dbtest"
	"github.com/gitops-service/gitops-service/backend-shared/testenv"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/agenttest"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/engine"
)

// One API server (with the service's CRDs, for Operation CRs) and one PostgreSQL for the
// package; each test gets its own engine namespace and database.
var cp *testenv.ControlPlane

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(testenv.Options{WithoutArgoCDCRDs: true}, &cp, func() int { return dbtest.Main(m) }))
}

// fixture is a Reconciler on a real database and API server, with its workqueue.
type fixture struct {
	t     *testing.T
	ctx   context.Context
	db    *bun.DB
	store *db.Store
	r     *Reconciler
	q     workqueue.TypedRateLimitingInterface[Request]
}

// newFixture registers an engine instance for a new namespace and returns a Reconciler
// serving it with handlers; its queue is started, so what it queues can be read.
func newFixture(t *testing.T, handlers map[db.OperationResourceType]Handler) *fixture {
	t.Helper()
	g, ctx := NewWithT(t), context.Background()
	bdb := dbtest.NewDB(t)
	store := db.NewStore(nil)
	id := agenttest.InstanceIn(t, cp, bdb, store, cp.NewNamespace(t, "argocd-"))
	r := &Reconciler{Client: cp.Client, DB: bdb, Store: store, Identity: id, Handlers: handlers}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[Request]())
	t.Cleanup(q.ShutDown)
	g.Expect(r.queue.Source().Start(ctx, q)).To(Succeed())
	return &fixture{t: t, ctx: ctx, db: bdb, store: store, r: r, q: q}
}

// otherInstance registers a second engine instance on the same engine cluster.
func (f *fixture) otherInstance() engine.Identity {
	f.t.Helper()
	return agenttest.InstanceIn(f.t, cp, f.db, f.store, cp.NewNamespace(f.t, "argocd-other-"))
}

func (f *fixture) tenant() string {
	f.t.Helper()
	return agenttest.Tenant(f.t, f.db, f.store, "").ID
}

// operation writes an operation row of instanceID in state, as the backend does.
func (f *fixture) operation(instanceID string, rt db.OperationResourceType, resourceID, tenantID string, state db.OperationState) *db.Operation {
	f.t.Helper()
	op := &db.Operation{
		EngineInstanceID: instanceID, ResourceType: rt, ResourceID: resourceID, OwnerTenantID: tenantID,
		State: state, HumanReadableState: "waiting for the cluster-agent", GCExpirationSeconds: 3600,
	}
	NewWithT(f.t).Expect(f.store.CreateOperation(f.ctx, f.db, op)).To(Succeed())
	return op
}

// age moves an operation's creation into the past.
func (f *fixture) age(id, interval string) {
	f.t.Helper()
	_, err := f.db.NewUpdate().Model((*db.Operation)(nil)).
		Set("created_at = now() - ?::interval", interval).Where("id = ?", id).Exec(f.ctx)
	NewWithT(f.t).Expect(err).NotTo(HaveOccurred())
}

func (f *fixture) get(id string) *db.Operation {
	f.t.Helper()
	op, err := f.store.GetOperation(f.ctx, f.db, id)
	NewWithT(f.t).Expect(err).NotTo(HaveOccurred())
	return op
}

// queued drains the workqueue.
func (f *fixture) queued() []Request {
	var out []Request
	for f.q.Len() > 0 {
		item, _ := f.q.Get()
		f.q.Done(item)
		f.q.Forget(item)
		out = append(out, item)
	}
	return out
}
