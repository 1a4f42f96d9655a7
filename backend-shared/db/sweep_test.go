package db_test

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/gitops-service/gitops-service/backend-shared/db"
)

func TestSweepQueriesWalkEveryRowOnce(t *testing.T) {
	t.Parallel()
	g, f := g(t), newFixture(t)

	var tenants []string
	wantDeployments := map[string]bool{}
	wantCRs := map[string]bool{}
	for range 3 {
		tenant := f.newTenant(t)
		tenants = append(tenants, tenant.ID)
		for range 3 {
			_, m := f.newApp(t, tenant.ID, "")
			wantDeployments[m.DeploymentUID] = true
		}
		env, _ := f.newEnv(t, tenant.ID)
		uid := newUID()
		_, err := f.store.GetOrCreateAPICRMapping(f.ctx, f.db, &db.APICRMapping{
			APIResourceType: db.APIResourceManagedEnvironment, APIResourceUID: uid, APIResourceName: env.Name,
			APIResourceNamespace: "ns", TenantID: tenant.ID, ManagedEnvironmentID: env.ID,
		})
		g.Expect(err).NotTo(HaveOccurred())
		wantCRs[string(db.APIResourceManagedEnvironment)+"/"+uid] = true
		rc := &db.RepositoryCredential{TenantID: tenant.ID, EngineInstanceID: f.instance.ID, RepositoryURL: "https://x", Password: "p"}
		g.Expect(f.store.CreateRepositoryCredential(f.ctx, f.db, rc)).To(Succeed())
		uid = newUID()
		_, err = f.store.GetOrCreateAPICRMapping(f.ctx, f.db, &db.APICRMapping{
			APIResourceType: db.APIResourceRepositoryCredential, APIResourceUID: uid, APIResourceName: "cred",
			APIResourceNamespace: "ns", TenantID: tenant.ID, RepositoryCredentialID: rc.ID,
		})
		g.Expect(err).NotTo(HaveOccurred())
		wantCRs[string(db.APIResourceRepositoryCredential)+"/"+uid] = true
	}

	// Batches of 2: every row exactly once, in key order.
	seen := map[string]bool{}
	after := ""
	for {
		batch, err := f.store.ListDeploymentMappingsAfter(f.ctx, f.db, after, 2)
		g.Expect(err).NotTo(HaveOccurred())
		for _, m := range batch {
			g.Expect(m.DeploymentUID > after).To(BeTrue())
			g.Expect(seen).NotTo(HaveKey(m.DeploymentUID))
			seen[m.DeploymentUID] = true
			after = m.DeploymentUID
		}
		if len(batch) < 2 {
			break
		}
	}
	g.Expect(seen).To(Equal(wantDeployments))

	seen = map[string]bool{}
	var afterKind db.APIResourceType
	after = ""
	for {
		batch, err := f.store.ListAPICRMappingsAfter(f.ctx, f.db, afterKind, after, 2)
		g.Expect(err).NotTo(HaveOccurred())
		for _, m := range batch {
			key := string(m.APIResourceType) + "/" + m.APIResourceUID
			g.Expect(seen).NotTo(HaveKey(key))
			g.Expect(m.TargetID()).NotTo(BeEmpty())
			seen[key] = true
			afterKind, after = m.APIResourceType, m.APIResourceUID
		}
		if len(batch) < 2 {
			break
		}
	}
	g.Expect(seen).To(Equal(wantCRs))

	var gotTenants []string
	after = ""
	for {
		batch, err := f.store.ListTenantsAfter(f.ctx, f.db, after, 2)
		g.Expect(err).NotTo(HaveOccurred())
		for _, tenant := range batch {
			gotTenants = append(gotTenants, tenant.ID)
			after = tenant.ID
		}
		if len(batch) < 2 {
			break
		}
	}
	g.Expect(gotTenants).To(ConsistOf(tenants))
}

func TestListTenantResourcesAndExistingApplicationIDs(t *testing.T) {
	t.Parallel()
	g, f := g(t), newFixture(t)
	tenant, other := f.newTenant(t), f.newTenant(t)
	env, _ := f.newEnv(t, tenant.ID)
	app, _ := f.newApp(t, tenant.ID, env.ID)
	otherApp, _ := f.newApp(t, other.ID, "")
	rc := &db.RepositoryCredential{TenantID: tenant.ID, EngineInstanceID: f.instance.ID, RepositoryURL: "https://x", Password: "p"}
	g.Expect(f.store.CreateRepositoryCredential(f.ctx, f.db, rc)).To(Succeed())

	got, err := f.store.ListTenantResources(f.ctx, f.db, tenant.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(ConsistOf(
		db.TenantResource{ResourceType: db.OperationResourceApplication, ID: app.ID, EngineInstanceID: f.instance.ID},
		db.TenantResource{ResourceType: db.OperationResourceManagedEnvironment, ID: env.ID},
		db.TenantResource{ResourceType: db.OperationResourceRepositoryCredential, ID: rc.ID, EngineInstanceID: f.instance.ID},
	))

	elsewhere := f.newInstance(t)
	missing := newUID()
	found, err := f.store.ExistingApplicationIDs(f.ctx, f.db, f.instance.ID, []string{app.ID, otherApp.ID, missing})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(found).To(Equal(map[string]bool{app.ID: true, otherApp.ID: true}))
	found, err = f.store.ExistingApplicationIDs(f.ctx, f.db, elsewhere.ID, []string{app.ID})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(found).To(BeEmpty())
	found, err = f.store.ExistingApplicationIDs(f.ctx, f.db, f.instance.ID, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(found).To(BeEmpty())
}
