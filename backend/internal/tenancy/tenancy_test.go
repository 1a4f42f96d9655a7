package tenancy_test

import (
	"errors"
	"os"
	"testing"

	"github.com/google/uuid"
	. "github.com/onsi/gomega"
	"github.com/uptrace/bun"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/dbtest"
	"github.com/gitops-service/gitops-service/backend-shared/testenv"
	"github.com/gitops-service/gitops-service/backend/internal/tenancy"
)

var cp *testenv.ControlPlane

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(testenv.Options{WithoutArgoCDCRDs: true}, &cp, func() int { return dbtest.Main(m) }))
}

// placeOn is a Placer that always chooses the same instance.
type placeOn struct{ id string }

func (p placeOn) Place(_ *db.Tenant, instances []db.EngineInstance, _ map[string]int) (*db.EngineInstance, error) {
	for i := range instances {
		if instances[i].ID == p.id {
			return &instances[i], nil
		}
	}
	return nil, errors.New("no such instance")
}

func instance(t *testing.T, store *db.Store, bdb bun.IDB) *db.EngineInstance {
	t.Helper()
	ns := &corev1.Namespace{}
	NewWithT(t).Expect(cp.Client.Get(t.Context(), client.ObjectKey{Name: cp.NewNamespace(t, "argocd-")}, ns)).To(Succeed())
	_, ei, err := store.RegisterEngineInstance(t.Context(), bdb, "default", ns.Name, string(ns.UID))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return ei
}

func TestATenantIsItsNamespacesUID(t *testing.T) {
	g, ctx := NewWithT(t), t.Context()
	bdb, store := dbtest.NewDB(t), db.NewStore(nil)
	r := &tenancy.Resolver{Store: store, Namespaces: cp.Client}
	team := cp.NewNamespace(t, "team-")

	// Not a tenant until it is first seen; a namespace that does not exist never is.
	_, err := r.ExistingTenant(ctx, bdb, team)
	g.Expect(err).To(MatchError(db.ErrNotFound))
	_, err = r.ExistingTenant(ctx, bdb, "no-such-namespace-"+uuid.NewString()[:8])
	g.Expect(err).To(MatchError(db.ErrNotFound))
	_, err = r.Tenant(ctx, bdb, "no-such-namespace-"+uuid.NewString()[:8])
	g.Expect(err).To(HaveOccurred())

	tenant, err := r.Tenant(ctx, bdb, team)
	g.Expect(err).NotTo(HaveOccurred())
	ns := &corev1.Namespace{}
	g.Expect(cp.Client.Get(ctx, client.ObjectKey{Name: team}, ns)).To(Succeed())
	g.Expect(tenant.NamespaceUID).To(Equal(string(ns.UID)))
	g.Expect(tenant.NamespaceName).To(Equal(team))
	again, err := r.Tenant(ctx, bdb, team)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.ID).To(Equal(tenant.ID), "the same namespace is the same tenant")
	existing, err := r.ExistingTenant(ctx, bdb, team)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(existing.ID).To(Equal(tenant.ID))

	other, err := r.Tenant(ctx, bdb, cp.NewNamespace(t, "team-"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(other.ID).NotTo(Equal(tenant.ID))
}

func TestEngineInstancePlacesATenantOnceAndKeepsIt(t *testing.T) {
	g, ctx := NewWithT(t), t.Context()
	bdb, store := dbtest.NewDB(t), db.NewStore(nil)
	a, b := instance(t, store, bdb), instance(t, store, bdb)
	tenant, err := store.GetOrCreateTenant(ctx, bdb, uuid.NewString(), "team-a")
	g.Expect(err).NotTo(HaveOccurred())

	// An unplaced tenant goes where the Placer says, and the row records it.
	got, err := (&tenancy.Resolver{Store: store, Placer: placeOn{b.ID}}).EngineInstance(ctx, bdb, tenant)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.ID).To(Equal(b.ID))
	g.Expect(tenant.EngineInstanceID).To(Equal(b.ID))
	row, err := store.GetTenant(ctx, bdb, tenant.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(row.EngineInstanceID).To(Equal(b.ID))

	// Placed: the Placer is not asked again, whatever it would say now.
	got, err = (&tenancy.Resolver{Store: store, Placer: placeOn{a.ID}}).EngineInstance(ctx, bdb, tenant)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.ID).To(Equal(b.ID))
}

func TestEngineInstanceTakesThePlacementThatWonTheRace(t *testing.T) {
	g, ctx := NewWithT(t), t.Context()
	bdb, store := dbtest.NewDB(t), db.NewStore(nil)
	a, b := instance(t, store, bdb), instance(t, store, bdb)
	tenant, err := store.GetOrCreateTenant(ctx, bdb, uuid.NewString(), "team-a")
	g.Expect(err).NotTo(HaveOccurred())
	// Another reconcile placed the tenant on b after this one read the tenant unplaced.
	stale := *tenant
	g.Expect(store.SetTenantEngineInstance(ctx, bdb, tenant.ID, b.ID)).To(Succeed())

	got, err := (&tenancy.Resolver{Store: store, Placer: placeOn{a.ID}}).EngineInstance(ctx, bdb, &stale)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.ID).To(Equal(b.ID), "the placement recorded first wins")
	g.Expect(stale.EngineInstanceID).To(Equal(b.ID))
}

func TestEngineInstanceWithTheDefaultPlacerUsesARegisteredInstance(t *testing.T) {
	g, ctx := NewWithT(t), t.Context()
	bdb, store := dbtest.NewDB(t), db.NewStore(nil)
	only := instance(t, store, bdb)
	tenant, err := store.GetOrCreateTenant(ctx, bdb, uuid.NewString(), "team-a")
	g.Expect(err).NotTo(HaveOccurred())
	got, err := (&tenancy.Resolver{Store: store}).EngineInstance(ctx, bdb, tenant)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.ID).To(Equal(only.ID))
}
