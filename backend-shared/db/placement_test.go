package db_test

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/gitops-service/gitops-service/backend-shared/db"
)

func TestCountTenantsByEngineInstance(t *testing.T) {
	t.Parallel()
	g, f := g(t), newFixture(t)
	other := f.newInstance(t)
	empty := f.newInstance(t)

	loads, err := f.store.CountTenantsByEngineInstance(f.ctx, f.db)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(loads).To(BeEmpty())

	for i := range 7 {
		tenant := f.newTenant(t)
		target := f.instance.ID
		if i%3 == 0 {
			target = other.ID
		}
		g.Expect(f.store.SetTenantEngineInstance(f.ctx, f.db, tenant.ID, target)).To(Succeed())
	}
	f.newTenant(t) // not placed: counted nowhere

	loads, err = f.store.CountTenantsByEngineInstance(f.ctx, f.db)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(loads).To(Equal(map[string]int{f.instance.ID: 4, other.ID: 3}))
	g.Expect(loads[empty.ID]).To(BeZero())
}

func TestPlaceTenantFirstPlacementWins(t *testing.T) {
	t.Parallel()
	g, f := g(t), newFixture(t)
	other := f.newInstance(t)
	tenant := f.newTenant(t)

	placed, err := f.store.PlaceTenant(f.ctx, f.db, tenant.ID, f.instance.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(placed).To(Equal(f.instance.ID))
	// A second placement (a racing reconcile) gets the first one.
	placed, err = f.store.PlaceTenant(f.ctx, f.db, tenant.ID, other.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(placed).To(Equal(f.instance.ID))
	got, err := f.store.GetTenant(f.ctx, f.db, tenant.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.EngineInstanceID).To(Equal(f.instance.ID))

	_, err = f.store.PlaceTenant(f.ctx, f.db, newUID(), f.instance.ID)
	g.Expect(err).To(MatchError(db.ErrNotFound))
	_, err = f.store.PlaceTenant(f.ctx, f.db, f.newTenant(t).ID, newUID())
	g.Expect(err).To(MatchError(db.ErrInvalidReference))
}

func TestDeregisterEngineInstance(t *testing.T) {
	t.Parallel()
	g, f := g(t), newFixture(t)
	tenant := f.newTenant(t)
	_, err := f.store.PlaceTenant(f.ctx, f.db, tenant.ID, f.instance.ID)
	g.Expect(err).NotTo(HaveOccurred())

	err = f.store.DeregisterEngineInstance(f.ctx, f.db, f.instance.ID)
	g.Expect(err).To(MatchError(db.ErrReferenced))
	var placed *db.TenantsPlacedError
	g.Expect(errors.As(err, &placed)).To(BeTrue())
	g.Expect(placed.Tenants).To(Equal(1))
	_, err = f.store.GetEngineInstance(f.ctx, f.db, f.instance.ID)
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(f.store.DeleteTenant(f.ctx, f.db, tenant.ID)).To(Succeed())
	g.Expect(f.store.DeregisterEngineInstance(f.ctx, f.db, f.instance.ID)).To(Succeed())
	g.Expect(f.store.DeregisterEngineInstance(f.ctx, f.db, f.instance.ID)).To(MatchError(db.ErrNotFound))
}

// Registering is idempotent, keeps the instance's id and state, and refuses a namespace
// already registered on another engine cluster without creating anything.
func TestRegisterEngineInstance(t *testing.T) {
	t.Parallel()
	g, f := g(t), newFixture(t)
	ctx, bdb, store := f.ctx, f.db, f.store
	before, err := store.ListEngineClusters(ctx, bdb)
	g.Expect(err).NotTo(HaveOccurred())

	cluster, ei, err := store.RegisterEngineInstance(ctx, bdb, "register-test", "argocd", "uid-register-test")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ei.EngineClusterID).To(Equal(cluster.ID))
	g.Expect(ei.NamespaceName).To(Equal("argocd"))
	ei.CapacityWeight = 7
	g.Expect(store.UpdateEngineInstance(ctx, bdb, ei)).To(Succeed())

	again, againInstance, err := store.RegisterEngineInstance(ctx, bdb, "register-test", "argocd", "uid-register-test")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.ID).To(Equal(cluster.ID))
	g.Expect(againInstance.ID).To(Equal(ei.ID))
	g.Expect(againInstance.CapacityWeight).To(Equal(7))

	_, _, err = store.RegisterEngineInstance(ctx, bdb, "elsewhere", "argocd", "uid-register-test")
	g.Expect(err).To(MatchError(db.ErrConflict))
	g.Expect(err).To(MatchError(ContainSubstring(`engine namespace argocd (UID uid-register-test) is registered on another engine cluster`)))
	clusters, err := store.ListEngineClusters(ctx, bdb)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(clusters).To(HaveLen(len(before)+1), "the refused registration created no engine cluster")
}
