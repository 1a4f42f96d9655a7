package db_test

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/notify"
)

// tenantRows is one of everything a tenant owns.
type tenantRows struct {
	tenant   *db.Tenant
	env      *db.ManagedEnvironment
	app      *db.Application
	mapping  *db.DeploymentMapping
	syncOp   *db.SyncOperation
	repoCred *db.RepositoryCredential
	crUID    string
}

func (f *fixture) populateTenant(t *testing.T) *tenantRows {
	t.Helper()
	g := NewWithT(t)
	r := &tenantRows{tenant: f.newTenant(t)}
	tid := r.tenant.ID
	r.env, _ = f.newEnv(t, tid)
	r.app, r.mapping = f.newApp(t, tid, r.env.ID)
	_, err := f.store.RecordApplicationState(f.ctx, f.db, &db.ApplicationState{ApplicationID: r.app.ID, Health: db.HealthHealthy}, notify.ApplicationStateChanged)
	g.Expect(err).NotTo(HaveOccurred())
	r.syncOp = &db.SyncOperation{TenantID: tid, ApplicationID: r.app.ID, DeploymentName: r.mapping.DeploymentName}
	g.Expect(f.store.CreateSyncOperation(f.ctx, f.db, r.syncOp)).To(Succeed())
	r.repoCred = &db.RepositoryCredential{TenantID: tid, EngineInstanceID: f.instance.ID, RepositoryURL: "https://git/" + tid, Password: db.Secret("pw-" + tid)}
	g.Expect(f.store.CreateRepositoryCredential(f.ctx, f.db, r.repoCred)).To(Succeed())
	r.crUID = newUID()
	_, err = f.store.GetOrCreateAPICRMapping(f.ctx, f.db, &db.APICRMapping{APIResourceType: db.APIResourceManagedEnvironment,
		APIResourceUID: r.crUID, APIResourceName: "env", APIResourceNamespace: r.tenant.NamespaceName, TenantID: tid, ManagedEnvironmentID: r.env.ID})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = f.store.AddAppProjectRepository(f.ctx, f.db, tid, "https://git/"+tid)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = f.store.AddAppProjectDestination(f.ctx, f.db, tid, r.env.ID)
	g.Expect(err).NotTo(HaveOccurred())
	return r
}

// TestTenantIsolation: tenant A, through the tenant-scoped API, can neither read, update
// nor delete tenant B's rows, nor point its own rows at them.
func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	g, f := g(t), newFixture(t)
	a, b := f.populateTenant(t), f.populateTenant(t)
	A := a.tenant.ID
	ctx, idb, s := f.ctx, f.db, f.store

	// Reads.
	_, err := s.GetManagedEnvironment(ctx, idb, A, b.env.ID)
	g.Expect(err).To(MatchError(db.ErrNotFound))
	_, err = s.GetManagedEnvironmentCredentials(ctx, idb, A, b.env.ID)
	g.Expect(err).To(MatchError(db.ErrNotFound))
	_, err = s.GetApplication(ctx, idb, A, b.app.ID)
	g.Expect(err).To(MatchError(db.ErrNotFound))
	_, err = s.GetApplicationByDeploymentUID(ctx, idb, A, b.mapping.DeploymentUID)
	g.Expect(err).To(MatchError(db.ErrNotFound))
	_, err = s.GetApplicationState(ctx, idb, A, b.app.ID)
	g.Expect(err).To(MatchError(db.ErrNotFound))
	_, err = s.GetDeploymentMapping(ctx, idb, A, b.mapping.DeploymentUID)
	g.Expect(err).To(MatchError(db.ErrNotFound))
	_, err = s.GetSyncOperation(ctx, idb, A, b.syncOp.ID)
	g.Expect(err).To(MatchError(db.ErrNotFound))
	_, err = s.GetRepositoryCredential(ctx, idb, A, b.repoCred.ID)
	g.Expect(err).To(MatchError(db.ErrNotFound))
	_, err = s.GetAPICRMapping(ctx, idb, A, db.APIResourceManagedEnvironment, b.crUID)
	g.Expect(err).To(MatchError(db.ErrNotFound))
	_, err = s.GetAPICRMappingByTarget(ctx, idb, A, db.APIResourceManagedEnvironment, b.env.ID)
	g.Expect(err).To(MatchError(db.ErrNotFound))

	// Lists hold only A's rows.
	envs, err := s.ListManagedEnvironments(ctx, idb, A)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(envs).To(HaveLen(1))
	g.Expect(envs[0].ID).To(Equal(a.env.ID))
	apps, err := s.ListApplications(ctx, idb, A)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(apps).To(HaveLen(1))
	g.Expect(apps[0].ID).To(Equal(a.app.ID))
	creds, err := s.ListRepositoryCredentials(ctx, idb, A)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(creds).To(HaveLen(1))
	g.Expect(creds[0].ID).To(Equal(a.repoCred.ID))
	maps, err := s.ListDeploymentMappings(ctx, idb, A)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(maps).To(HaveLen(1))
	byName, err := s.ListDeploymentMappingsByName(ctx, idb, A, b.mapping.DeploymentName)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(byName).To(BeEmpty())
	crs, err := s.ListAPICRMappings(ctx, idb, A, db.APIResourceManagedEnvironment)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(crs).To(HaveLen(1))
	syncOps, err := s.ListSyncOperationsByApplication(ctx, idb, A, b.app.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(syncOps).To(BeEmpty())
	repos, err := s.ListAppProjectRepositories(ctx, idb, A)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(repos).To(Equal([]string{"https://git/" + A}))
	dests, err := s.ListAppProjectDestinations(ctx, idb, A)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(dests).To(Equal([]string{a.env.ID}))

	// Updates.
	g.Expect(s.UpdateManagedEnvironment(ctx, idb, &db.ManagedEnvironment{ID: b.env.ID, TenantID: A, Name: "stolen"},
		&db.ClusterCredentials{Host: "https://evil", BearerToken: "x"})).To(MatchError(db.ErrNotFound))
	g.Expect(s.UpdateRepositoryCredential(ctx, idb, &db.RepositoryCredential{ID: b.repoCred.ID, TenantID: A,
		EngineInstanceID: f.instance.ID, RepositoryURL: "https://evil", Password: "x"})).To(MatchError(db.ErrNotFound))
	g.Expect(s.UpdateSyncOperationDesiredState(ctx, idb, A, b.syncOp.ID, db.SyncTerminated)).To(MatchError(db.ErrNotFound))
	_, err = s.UpsertApplication(ctx, idb, &db.Application{TenantID: A, Name: b.app.Name, EngineInstanceID: f.instance.ID,
		Spec: appSpec(A, "evil")})
	g.Expect(err).To(MatchError(db.ErrConflict), "an application name of another tenant")

	// Deletes.
	g.Expect(s.DeleteManagedEnvironment(ctx, idb, A, b.env.ID)).To(MatchError(db.ErrNotFound))
	g.Expect(s.DeleteApplication(ctx, idb, A, b.app.ID)).To(MatchError(db.ErrNotFound))
	_, err = s.DeleteApplicationByDeploymentUID(ctx, idb, A, b.mapping.DeploymentUID)
	g.Expect(err).To(MatchError(db.ErrNotFound))
	g.Expect(s.DeleteDeploymentMapping(ctx, idb, A, b.mapping.DeploymentUID)).To(MatchError(db.ErrNotFound))
	g.Expect(s.DeleteSyncOperation(ctx, idb, A, b.syncOp.ID)).To(MatchError(db.ErrNotFound))
	g.Expect(s.DeleteRepositoryCredential(ctx, idb, A, b.repoCred.ID)).To(MatchError(db.ErrNotFound))
	g.Expect(s.DeleteAPICRMapping(ctx, idb, A, db.APIResourceManagedEnvironment, b.crUID)).To(MatchError(db.ErrNotFound))
	removed, err := s.RemoveAppProjectRepository(ctx, idb, A, "https://git/"+b.tenant.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(removed).To(BeFalse())
	removed, err = s.RemoveAppProjectDestination(ctx, idb, A, b.env.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(removed).To(BeFalse())

	// References from A's rows to B's rows are refused by the composite foreign keys.
	_, err = s.UpsertApplication(ctx, idb, &db.Application{TenantID: A, Name: db.ApplicationName(newUID()),
		EngineInstanceID: f.instance.ID, ManagedEnvironmentID: b.env.ID, Spec: appSpec(A, "main")})
	g.Expect(err).To(MatchError(db.ErrInvalidReference))
	g.Expect(s.CreateSyncOperation(ctx, idb, &db.SyncOperation{TenantID: A, ApplicationID: b.app.ID, DeploymentName: "x"})).
		To(MatchError(db.ErrInvalidReference))
	unmapped := &db.Application{TenantID: b.tenant.ID, Name: db.ApplicationName(newUID()), EngineInstanceID: f.instance.ID, Spec: appSpec(b.tenant.ID, "main")}
	_, err = s.UpsertApplication(ctx, idb, unmapped)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = s.GetOrCreateDeploymentMapping(ctx, idb, &db.DeploymentMapping{DeploymentUID: newUID(), TenantID: A,
		DeploymentName: "x", DeploymentNamespace: "x", ApplicationID: unmapped.ID})
	g.Expect(err).To(MatchError(db.ErrInvalidReference))
	_, err = s.GetOrCreateAPICRMapping(ctx, idb, &db.APICRMapping{APIResourceType: db.APIResourceRepositoryCredential,
		APIResourceUID: newUID(), APIResourceName: "x", APIResourceNamespace: "x", TenantID: A, RepositoryCredentialID: b.repoCred.ID})
	g.Expect(err).To(MatchError(db.ErrInvalidReference))
	_, err = s.AddAppProjectDestination(ctx, idb, A, b.env.ID)
	g.Expect(err).To(MatchError(db.ErrInvalidReference))
	// A's get-or-create of B's CR or deployment UID does not hand out B's mapping.
	_, err = s.GetOrCreateAPICRMapping(ctx, idb, &db.APICRMapping{APIResourceType: db.APIResourceManagedEnvironment,
		APIResourceUID: b.crUID, APIResourceName: "x", APIResourceNamespace: "x", TenantID: A, ManagedEnvironmentID: a.env.ID})
	g.Expect(err).To(MatchError(db.ErrConflict))
	_, err = s.GetOrCreateDeploymentMapping(ctx, idb, &db.DeploymentMapping{DeploymentUID: b.mapping.DeploymentUID, TenantID: A,
		DeploymentName: "x", DeploymentNamespace: "x", ApplicationID: a.app.ID})
	g.Expect(err).To(MatchError(db.ErrConflict))

	// B's rows are untouched.
	env, err := s.GetManagedEnvironment(ctx, idb, b.tenant.ID, b.env.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.Name).To(Equal(b.env.Name))
	envCreds, err := s.GetManagedEnvironmentCredentials(ctx, idb, b.tenant.ID, b.env.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(envCreds.Host).NotTo(Equal("https://evil"))
	app, err := s.GetApplication(ctx, idb, b.tenant.ID, b.app.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(app.Spec.Source.TargetRevision).To(Equal("main"))
	rc, err := s.GetRepositoryCredential(ctx, idb, b.tenant.ID, b.repoCred.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rc.RepositoryURL).To(Equal(b.repoCred.RepositoryURL))
	so, err := s.GetSyncOperation(ctx, idb, b.tenant.ID, b.syncOp.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(so.DesiredState).To(Equal(db.SyncRunning))
	_, err = s.GetApplicationState(ctx, idb, b.tenant.ID, b.app.ID)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = s.GetAPICRMapping(ctx, idb, b.tenant.ID, db.APIResourceManagedEnvironment, b.crUID)
	g.Expect(err).NotTo(HaveOccurred())
	repos, err = s.ListAppProjectRepositories(ctx, idb, b.tenant.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(repos).To(HaveLen(1))
	dests, err = s.ListAppProjectDestinations(ctx, idb, b.tenant.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(dests).To(HaveLen(1))
}
