package db_test

import (
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/notify"
)

func TestTenantCRUD(t *testing.T) {
	t.Parallel()
	g, f := g(t), newFixture(t)

	uid := newUID()
	tenant, err := f.store.GetOrCreateTenant(f.ctx, f.db, uid, "team-a")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tenant.ID).NotTo(BeEmpty())
	g.Expect(tenant.NamespaceName).To(Equal("team-a"))
	g.Expect(tenant.CreatedAt).NotTo(BeZero())

	again, err := f.store.GetOrCreateTenant(f.ctx, f.db, uid, "team-a")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.ID).To(Equal(tenant.ID))

	renamed, err := f.store.GetOrCreateTenant(f.ctx, f.db, uid, "team-a-renamed")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(renamed.ID).To(Equal(tenant.ID))
	g.Expect(renamed.NamespaceName).To(Equal("team-a-renamed"))

	got, err := f.store.GetTenant(f.ctx, f.db, tenant.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.NamespaceUID).To(Equal(uid))
	g.Expect(got.EngineInstanceID).To(BeEmpty())

	g.Expect(f.store.SetTenantEngineInstance(f.ctx, f.db, tenant.ID, f.instance.ID)).To(Succeed())
	placed, err := f.store.ListTenantsByEngineInstance(f.ctx, f.db, f.instance.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(placed).To(HaveLen(1))
	g.Expect(placed[0].ID).To(Equal(tenant.ID))
	g.Expect(f.store.SetTenantEngineInstance(f.ctx, f.db, tenant.ID, "")).To(Succeed())
	got, err = f.store.GetTenantByNamespaceUID(f.ctx, f.db, uid)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.EngineInstanceID).To(BeEmpty())

	g.Expect(f.store.DeleteTenant(f.ctx, f.db, tenant.ID)).To(Succeed())
	_, err = f.store.GetTenant(f.ctx, f.db, tenant.ID)
	g.Expect(err).To(MatchError(db.ErrNotFound))
	g.Expect(f.store.DeleteTenant(f.ctx, f.db, tenant.ID)).To(MatchError(db.ErrNotFound))
	g.Expect(f.store.SetTenantEngineInstance(f.ctx, f.db, tenant.ID, "")).To(MatchError(db.ErrNotFound))
}

func TestDeleteTenantCascades(t *testing.T) {
	t.Parallel()
	g, f := g(t), newFixture(t)
	tenant := f.newTenant(t)
	env, _ := f.newEnv(t, tenant.ID)
	app, _ := f.newApp(t, tenant.ID, env.ID)
	_, err := f.store.RecordApplicationState(f.ctx, f.db, &db.ApplicationState{ApplicationID: app.ID, Health: db.HealthHealthy}, notify.ApplicationStateChanged)
	g.Expect(err).NotTo(HaveOccurred())
	op := &db.Operation{EngineInstanceID: f.instance.ID, ResourceType: db.OperationResourceApplication, ResourceID: app.ID, OwnerTenantID: tenant.ID}
	g.Expect(f.store.CreateOperation(f.ctx, f.db, op)).To(Succeed())

	g.Expect(f.store.DeleteTenant(f.ctx, f.db, tenant.ID)).To(Succeed())
	for _, table := range []string{"managed_environments", "cluster_credentials", "applications", "application_states", "deployment_application_mappings"} {
		g.Expect(f.count(t, table)).To(BeZero(), table)
	}
	// The operation that deletes the tenant's Argo CD objects outlives the tenant.
	got, err := f.store.GetOperation(f.ctx, f.db, op.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.OwnerTenantID).To(BeEmpty())
}

func TestEngineCRUD(t *testing.T) {
	t.Parallel()
	g, f := g(t), newFixture(t)

	same, err := f.store.GetOrCreateEngineCluster(f.ctx, f.db, "in-cluster", "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(same.ID).To(Equal(f.cluster.ID))

	creds := &db.ClusterCredentials{Host: "https://remote:6443", Kubeconfig: "apiVersion: v1\nkind: Config\n", KubeconfigContext: "ctx"}
	g.Expect(f.store.CreateClusterCredentials(f.ctx, f.db, creds)).To(Succeed())
	remote, err := f.store.GetOrCreateEngineCluster(f.ctx, f.db, "remote", creds.ID)
	g.Expect(err).NotTo(HaveOccurred())
	got, err := f.store.GetEngineCluster(f.ctx, f.db, remote.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.ClusterCredentialsID).To(Equal(creds.ID))
	clusters, err := f.store.ListEngineClusters(f.ctx, f.db)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(clusters).To(HaveLen(2))

	g.Expect(f.instance.State).To(Equal(db.EngineInstanceActive))
	g.Expect(f.instance.CapacityWeight).To(Equal(100))
	ei := &db.EngineInstance{EngineClusterID: remote.ID, NamespaceName: "argocd", NamespaceUID: newUID(), CapacityWeight: 50}
	got2, err := f.store.GetOrCreateEngineInstance(f.ctx, f.db, ei)
	g.Expect(err).NotTo(HaveOccurred())
	again, err := f.store.GetOrCreateEngineInstance(f.ctx, f.db, ei)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.ID).To(Equal(got2.ID))
	elsewhere := *ei
	elsewhere.EngineClusterID = f.cluster.ID
	_, err = f.store.GetOrCreateEngineInstance(f.ctx, f.db, &elsewhere)
	g.Expect(err).To(MatchError(db.ErrConflict))

	byNS, err := f.store.GetEngineInstanceByNamespaceUID(f.ctx, f.db, ei.NamespaceUID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(byNS.ID).To(Equal(got2.ID))
	g.Expect(byNS.CapacityWeight).To(Equal(50))

	byNS.State, byNS.CapacityWeight = db.EngineInstanceDraining, 0
	g.Expect(f.store.UpdateEngineInstance(f.ctx, f.db, byNS)).To(Succeed())
	got3, err := f.store.GetEngineInstance(f.ctx, f.db, byNS.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got3.State).To(Equal(db.EngineInstanceDraining))
	g.Expect(got3.CapacityWeight).To(BeZero())
	g.Expect(got3.UpdatedAt).To(BeTemporally(">=", got3.CreatedAt))

	all, err := f.store.ListEngineInstances(f.ctx, f.db)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(all).To(HaveLen(2))

	// A cluster with instances cannot go; without, it goes with its credentials.
	g.Expect(f.store.DeleteEngineCluster(f.ctx, f.db, remote.ID)).To(MatchError(db.ErrReferenced))
	g.Expect(f.store.DeleteEngineInstance(f.ctx, f.db, got2.ID)).To(Succeed())
	g.Expect(f.store.DeleteEngineInstance(f.ctx, f.db, got2.ID)).To(MatchError(db.ErrNotFound))
	g.Expect(f.store.DeleteEngineCluster(f.ctx, f.db, remote.ID)).To(Succeed())
	_, err = f.store.GetClusterCredentials(f.ctx, f.db, creds.ID)
	g.Expect(err).To(MatchError(db.ErrNotFound))
	_, err = f.store.GetEngineCluster(f.ctx, f.db, remote.ID)
	g.Expect(err).To(MatchError(db.ErrNotFound))
}

func TestClusterCredentialsCRUD(t *testing.T) {
	t.Parallel()
	g, f := g(t), newFixture(t)

	creds := &db.ClusterCredentials{
		Host: "https://c:6443", BearerToken: "tok", ServiceAccountNamespace: "kube-system",
		AllowInsecureSkipTLSVerify: true, ClusterResources: true,
	}
	g.Expect(f.store.CreateClusterCredentials(f.ctx, f.db, creds)).To(Succeed())
	got, err := f.store.GetClusterCredentials(f.ctx, f.db, creds.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.BearerToken).To(Equal(db.Secret("tok")))
	g.Expect(got.Kubeconfig).To(BeEmpty())
	g.Expect(got.Namespaces).To(BeEmpty())
	g.Expect(got.AllowInsecureSkipTLSVerify).To(BeTrue())
	g.Expect(got.ClusterResources).To(BeTrue())

	got.BearerToken, got.Kubeconfig, got.Namespaces = "", "kubeconfig-data", []string{"x"}
	g.Expect(f.store.UpdateClusterCredentials(f.ctx, f.db, got)).To(Succeed())
	got2, err := f.store.GetClusterCredentials(f.ctx, f.db, creds.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got2.BearerToken).To(BeEmpty())
	g.Expect(got2.Kubeconfig).To(Equal(db.Secret("kubeconfig-data")))
	g.Expect(got2.Namespaces).To(Equal([]string{"x"}))

	// Neither a kubeconfig nor a token: refused.
	got2.Kubeconfig = ""
	g.Expect(f.store.UpdateClusterCredentials(f.ctx, f.db, got2)).To(MatchError(db.ErrCheck))
	g.Expect(f.store.CreateClusterCredentials(f.ctx, f.db, &db.ClusterCredentials{Host: "h"})).To(MatchError(db.ErrCheck))

	g.Expect(f.store.DeleteClusterCredentials(f.ctx, f.db, creds.ID)).To(Succeed())
	g.Expect(f.store.DeleteClusterCredentials(f.ctx, f.db, creds.ID)).To(MatchError(db.ErrNotFound))

	// Credentials in use by an environment cannot be deleted underneath it.
	tenant := f.newTenant(t)
	env, envCreds := f.newEnv(t, tenant.ID)
	g.Expect(f.store.DeleteClusterCredentials(f.ctx, f.db, envCreds.ID)).To(MatchError(db.ErrReferenced))
	g.Expect(f.store.DeleteManagedEnvironment(f.ctx, f.db, tenant.ID, env.ID)).To(Succeed())
	_, err = f.store.GetClusterCredentials(f.ctx, f.db, envCreds.ID)
	g.Expect(err).To(MatchError(db.ErrNotFound), "credentials are deleted with their environment")

	// Without a keyring, credentials cannot be written or read.
	noKeys := db.NewStore(nil)
	g.Expect(noKeys.CreateClusterCredentials(f.ctx, f.db, &db.ClusterCredentials{Host: "h", BearerToken: "t"})).To(MatchError(db.ErrNoKeyring))
}

func TestManagedEnvironmentCRUD(t *testing.T) {
	t.Parallel()
	g, f := g(t), newFixture(t)
	tenant := f.newTenant(t)

	env, creds := f.newEnv(t, tenant.ID)
	g.Expect(env.ID).NotTo(BeEmpty())
	g.Expect(env.ClusterCredentialsID).To(Equal(creds.ID))

	got, err := f.store.GetManagedEnvironment(f.ctx, f.db, tenant.ID, env.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Name).To(Equal(env.Name))
	gotCreds, err := f.store.GetManagedEnvironmentCredentials(f.ctx, f.db, tenant.ID, env.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(gotCreds.BearerToken).To(Equal(creds.BearerToken))
	g.Expect(gotCreds.Namespaces).To(Equal([]string{"a", "b"}))

	got.Name = "renamed"
	newCreds := &db.ClusterCredentials{Host: "https://other:6443", Kubeconfig: "kc", KubeconfigContext: "c1"}
	g.Expect(f.store.UpdateManagedEnvironment(f.ctx, f.db, got, newCreds)).To(Succeed())
	g.Expect(newCreds.ID).To(Equal(creds.ID), "credentials are replaced in place")
	gotCreds, err = f.store.GetManagedEnvironmentCredentials(f.ctx, f.db, tenant.ID, env.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(gotCreds.Host).To(Equal("https://other:6443"))
	g.Expect(gotCreds.Kubeconfig).To(Equal(db.Secret("kc")))
	g.Expect(gotCreds.BearerToken).To(BeEmpty())
	got.Name = "renamed-again"
	g.Expect(f.store.UpdateManagedEnvironment(f.ctx, f.db, got, nil)).To(Succeed())

	f.newEnv(t, tenant.ID)
	envs, err := f.store.ListManagedEnvironments(f.ctx, f.db, tenant.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(envs).To(HaveLen(2))

	// Deleting the environment leaves its application without a target.
	app, _ := f.newApp(t, tenant.ID, env.ID)
	g.Expect(f.store.DeleteManagedEnvironment(f.ctx, f.db, tenant.ID, env.ID)).To(Succeed())
	_, err = f.store.GetManagedEnvironment(f.ctx, f.db, tenant.ID, env.ID)
	g.Expect(err).To(MatchError(db.ErrNotFound))
	app2, err := f.store.GetApplication(f.ctx, f.db, tenant.ID, app.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(app2.ManagedEnvironmentID).To(BeEmpty())
	g.Expect(app2.TenantID).To(Equal(tenant.ID))
	g.Expect(f.store.DeleteManagedEnvironment(f.ctx, f.db, tenant.ID, env.ID)).To(MatchError(db.ErrNotFound))

	// A failed create leaves nothing behind (the credentials insert is rolled back).
	before := f.count(t, "cluster_credentials")
	err = f.store.CreateManagedEnvironment(f.ctx, f.db, &db.ManagedEnvironment{TenantID: newUID(), Name: "x"},
		&db.ClusterCredentials{Host: "h", BearerToken: "t"})
	g.Expect(err).To(MatchError(db.ErrInvalidReference))
	g.Expect(f.count(t, "cluster_credentials")).To(Equal(before))
}

func TestApplicationCRUD(t *testing.T) {
	t.Parallel()
	g, f := g(t), newFixture(t)
	tenant := f.newTenant(t)
	env, _ := f.newEnv(t, tenant.ID)

	uid := newUID()
	app := &db.Application{TenantID: tenant.ID, Name: db.ApplicationName(uid), EngineInstanceID: f.instance.ID,
		ManagedEnvironmentID: env.ID, Spec: appSpec(tenant.ID, "main")}
	changed, err := f.store.UpsertApplication(f.ctx, f.db, app)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeTrue())
	g.Expect(app.ID).NotTo(BeEmpty())
	g.Expect(app.Created()).To(BeTrue(), "the first write creates it")
	firstUpdate := app.UpdatedAt

	same := &db.Application{TenantID: tenant.ID, Name: app.Name, EngineInstanceID: f.instance.ID,
		ManagedEnvironmentID: env.ID, Spec: appSpec(tenant.ID, "main")}
	changed, err = f.store.UpsertApplication(f.ctx, f.db, same)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeFalse(), "an identical spec is not a change")
	g.Expect(same.ID).To(Equal(app.ID))
	g.Expect(same.UpdatedAt).To(Equal(firstUpdate))

	g.Expect(same.Created()).To(BeTrue(), "read back as it was created")

	same.Spec = appSpec(tenant.ID, "v2")
	changed, err = f.store.UpsertApplication(f.ctx, f.db, same)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeTrue())
	g.Expect(same.Created()).To(BeFalse(), "an update of a row written before")
	same.ManagedEnvironmentID = ""
	changed, err = f.store.UpsertApplication(f.ctx, f.db, same)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeTrue(), "a new target is a change")

	got, err := f.store.GetApplication(f.ctx, f.db, tenant.ID, app.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Spec.Source.TargetRevision).To(Equal("v2"))
	g.Expect(got.Spec.SyncPolicy.Automated.SelfHeal).To(BeTrue())
	g.Expect(got.ManagedEnvironmentID).To(BeEmpty())

	_, err = f.store.GetOrCreateDeploymentMapping(f.ctx, f.db, &db.DeploymentMapping{
		DeploymentUID: uid, TenantID: tenant.ID, DeploymentName: "my-depl", DeploymentNamespace: "team-a", ApplicationID: app.ID})
	g.Expect(err).NotTo(HaveOccurred())
	byUID, err := f.store.GetApplicationByDeploymentUID(f.ctx, f.db, tenant.ID, uid)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(byUID.ID).To(Equal(app.ID))
	byName, err := f.store.GetApplicationByName(f.ctx, f.db, f.instance.ID, app.Name)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(byName.ID).To(Equal(app.ID))
	_, err = f.store.GetApplicationByName(f.ctx, f.db, f.newInstance(t).ID, app.Name)
	g.Expect(err).To(MatchError(db.ErrNotFound), "scoped by engine instance")
	forInstance, err := f.store.GetApplicationForEngineInstance(f.ctx, f.db, f.instance.ID, app.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(forInstance.Name).To(Equal(app.Name))

	f.newApp(t, tenant.ID, "")
	apps, err := f.store.ListApplications(f.ctx, f.db, tenant.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(apps).To(HaveLen(2))
	apps, err = f.store.ListApplicationsByEngineInstance(f.ctx, f.db, f.instance.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(apps).To(HaveLen(2))

	deleted, err := f.store.DeleteApplicationByDeploymentUID(f.ctx, f.db, tenant.ID, uid)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(deleted.ID).To(Equal(app.ID))
	g.Expect(deleted.Name).To(Equal(app.Name))
	_, err = f.store.GetDeploymentMapping(f.ctx, f.db, tenant.ID, uid)
	g.Expect(err).To(MatchError(db.ErrNotFound), "the mapping goes with the application")
	_, err = f.store.DeleteApplicationByDeploymentUID(f.ctx, f.db, tenant.ID, uid)
	g.Expect(err).To(MatchError(db.ErrNotFound))

	remaining := apps[0].ID
	if remaining == app.ID {
		remaining = apps[1].ID
	}
	g.Expect(f.store.DeleteApplication(f.ctx, f.db, tenant.ID, remaining)).To(Succeed())
	g.Expect(f.store.DeleteApplication(f.ctx, f.db, tenant.ID, remaining)).To(MatchError(db.ErrNotFound))

	// An engine instance with applications cannot be deleted.
	f.newApp(t, tenant.ID, "")
	g.Expect(f.store.DeleteEngineInstance(f.ctx, f.db, f.instance.ID)).To(MatchError(db.ErrReferenced))
}

func TestApplicationStateCRUD(t *testing.T) {
	t.Parallel()
	g, f := g(t), newFixture(t)
	tenant := f.newTenant(t)
	app, _ := f.newApp(t, tenant.ID, "")

	_, err := f.store.GetApplicationState(f.ctx, f.db, tenant.ID, app.ID)
	g.Expect(err).To(MatchError(db.ErrNotFound))

	now := metav1Now()
	st := &db.ApplicationState{
		ApplicationID: app.ID, Health: db.HealthProgressing, SyncStatus: db.SyncStatusOutOfSync, Revision: "abc",
		Resources:  []argov1alpha1.ResourceStatus{{Kind: "Deployment", Name: "web", Namespace: "team-a", Status: "OutOfSync"}},
		Conditions: []argov1alpha1.ApplicationCondition{{Type: "SyncError", Message: "boom", LastTransitionTime: now}},
		ReconciledState: &argov1alpha1.ComparedTo{
			Source:      argov1alpha1.ApplicationSource{RepoURL: "https://github.com/example/repo", Path: "deploy"},
			Destination: argov1alpha1.ApplicationDestination{Namespace: "team-a", Server: "https://x"},
		},
		OperationState: &argov1alpha1.OperationState{Phase: "Running", Message: "syncing", StartedAt: *now},
	}
	changed, err := f.store.RecordApplicationState(f.ctx, f.db, st, notify.ApplicationStateChanged)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeTrue())

	// The same state again (a fresh struct, as the agent builds it): no write.
	copied := *st
	changed, err = f.store.RecordApplicationState(f.ctx, f.db, &copied, notify.ApplicationStateChanged)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeFalse())

	got, err := f.store.GetApplicationState(f.ctx, f.db, tenant.ID, app.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Health).To(Equal(db.HealthProgressing))
	g.Expect(got.Resources).To(HaveLen(1))
	g.Expect(got.Resources[0].Name).To(Equal("web"))
	g.Expect(got.Conditions[0].Message).To(Equal("boom"))
	g.Expect(got.ReconciledState.Source.Path).To(Equal("deploy"))
	g.Expect(got.OperationState.Phase).To(BeEquivalentTo("Running"))

	// Each part on its own is a change.
	for _, mutate := range []func(*db.ApplicationState){
		func(s *db.ApplicationState) { s.Health = db.HealthHealthy },
		func(s *db.ApplicationState) { s.HealthMessage = "ok" },
		func(s *db.ApplicationState) { s.SyncStatus = db.SyncStatusSynced },
		func(s *db.ApplicationState) { s.Revision = "def" },
		func(s *db.ApplicationState) { s.Resources = nil },
		func(s *db.ApplicationState) { s.Conditions = nil },
		func(s *db.ApplicationState) { s.ReconciledState = nil },
		func(s *db.ApplicationState) { s.OperationState = nil },
	} {
		mutate(got)
		changed, err = f.store.RecordApplicationState(f.ctx, f.db, got, notify.ApplicationStateChanged)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(changed).To(BeTrue())
		changed, err = f.store.RecordApplicationState(f.ctx, f.db, got, notify.ApplicationStateChanged)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(changed).To(BeFalse())
	}
	final, err := f.store.GetApplicationState(f.ctx, f.db, tenant.ID, app.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(final.Resources).To(BeEmpty())
	g.Expect(final.OperationState).To(BeNil())

	// Unknown values are refused.
	_, err = f.store.RecordApplicationState(f.ctx, f.db, &db.ApplicationState{ApplicationID: app.ID, Health: "Great"}, notify.ApplicationStateChanged)
	g.Expect(err).To(MatchError(db.ErrCheck))

	_, err = f.store.RecordApplicationState(f.ctx, f.db, &db.ApplicationState{ApplicationID: newUID()}, notify.ApplicationStateChanged)
	g.Expect(err).To(MatchError(db.ErrInvalidReference))

	g.Expect(f.store.DeleteApplicationState(f.ctx, f.db, f.newInstance(t).ID, app.ID)).To(MatchError(db.ErrNotFound))
	g.Expect(f.store.DeleteApplicationState(f.ctx, f.db, f.instance.ID, app.ID)).To(Succeed())
	g.Expect(f.store.DeleteApplicationState(f.ctx, f.db, f.instance.ID, app.ID)).To(MatchError(db.ErrNotFound))
}

func TestSyncOperationCRUD(t *testing.T) {
	t.Parallel()
	g, f := g(t), newFixture(t)
	tenant := f.newTenant(t)
	app, _ := f.newApp(t, tenant.ID, "")

	op := &db.SyncOperation{TenantID: tenant.ID, ApplicationID: app.ID, DeploymentName: "depl", Revision: "v1"}
	g.Expect(f.store.CreateSyncOperation(f.ctx, f.db, op)).To(Succeed())
	g.Expect(op.DesiredState).To(Equal(db.SyncRunning))

	got, err := f.store.GetSyncOperation(f.ctx, f.db, tenant.ID, op.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Revision).To(Equal("v1"))
	list, err := f.store.ListSyncOperationsByApplication(f.ctx, f.db, tenant.ID, app.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(list).To(HaveLen(1))

	g.Expect(f.store.UpdateSyncOperationDesiredState(f.ctx, f.db, tenant.ID, op.ID, db.SyncTerminated)).To(Succeed())
	got, err = f.store.GetSyncOperation(f.ctx, f.db, tenant.ID, op.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.DesiredState).To(Equal(db.SyncTerminated))
	g.Expect(f.store.UpdateSyncOperationDesiredState(f.ctx, f.db, tenant.ID, op.ID, "Paused")).To(MatchError(db.ErrCheck))

	// The sync operation outlives its application.
	g.Expect(f.store.DeleteApplication(f.ctx, f.db, tenant.ID, app.ID)).To(Succeed())
	got, err = f.store.GetSyncOperation(f.ctx, f.db, tenant.ID, op.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.ApplicationID).To(BeEmpty())
	g.Expect(got.TenantID).To(Equal(tenant.ID))

	g.Expect(f.store.DeleteSyncOperation(f.ctx, f.db, tenant.ID, op.ID)).To(Succeed())
	g.Expect(f.store.DeleteSyncOperation(f.ctx, f.db, tenant.ID, op.ID)).To(MatchError(db.ErrNotFound))
	g.Expect(f.store.UpdateSyncOperationDesiredState(f.ctx, f.db, tenant.ID, op.ID, db.SyncRunning)).To(MatchError(db.ErrNotFound))
}

func TestRepositoryCredentialCRUD(t *testing.T) {
	t.Parallel()
	g, f := g(t), newFixture(t)
	tenant := f.newTenant(t)

	rc := &db.RepositoryCredential{TenantID: tenant.ID, EngineInstanceID: f.instance.ID,
		RepositoryURL: "https://github.com/example/private", Username: "bot", Password: "hunter2"}
	g.Expect(f.store.CreateRepositoryCredential(f.ctx, f.db, rc)).To(Succeed())
	g.Expect(rc.ID).NotTo(BeEmpty())

	got, err := f.store.GetRepositoryCredential(f.ctx, f.db, tenant.ID, rc.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Username).To(Equal(db.Secret("bot")))
	g.Expect(got.Password).To(Equal(db.Secret("hunter2")))
	g.Expect(got.SSHPrivateKey).To(BeEmpty())

	got.RepositoryURL, got.Username, got.Password, got.SSHPrivateKey = "ssh://git@github.com/example/private", "", "", "-----BEGIN KEY-----"
	g.Expect(f.store.UpdateRepositoryCredential(f.ctx, f.db, got)).To(Succeed())
	list, err := f.store.ListRepositoryCredentials(f.ctx, f.db, tenant.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(list).To(HaveLen(1))
	g.Expect(list[0].RepositoryURL).To(HavePrefix("ssh://"))
	g.Expect(list[0].SSHPrivateKey).To(Equal(db.Secret("-----BEGIN KEY-----")))
	g.Expect(list[0].Password).To(BeEmpty())

	g.Expect(f.store.DeleteEngineInstance(f.ctx, f.db, f.instance.ID)).To(MatchError(db.ErrReferenced))
	g.Expect(f.store.DeleteRepositoryCredential(f.ctx, f.db, tenant.ID, rc.ID)).To(Succeed())
	g.Expect(f.store.DeleteRepositoryCredential(f.ctx, f.db, tenant.ID, rc.ID)).To(MatchError(db.ErrNotFound))
	g.Expect(f.store.UpdateRepositoryCredential(f.ctx, f.db, got)).To(MatchError(db.ErrNotFound))
}

func TestAppProjectCRUD(t *testing.T) {
	t.Parallel()
	g, f := g(t), newFixture(t)
	tenant := f.newTenant(t)
	env, _ := f.newEnv(t, tenant.ID)

	added, err := f.store.AddAppProjectRepository(f.ctx, f.db, tenant.ID, "https://github.com/b")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(added).To(BeTrue())
	added, err = f.store.AddAppProjectRepository(f.ctx, f.db, tenant.ID, "https://github.com/b")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(added).To(BeFalse())
	_, err = f.store.AddAppProjectRepository(f.ctx, f.db, tenant.ID, "https://github.com/a")
	g.Expect(err).NotTo(HaveOccurred())
	repos, err := f.store.ListAppProjectRepositories(f.ctx, f.db, tenant.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(repos).To(Equal([]string{"https://github.com/a", "https://github.com/b"}))
	removed, err := f.store.RemoveAppProjectRepository(f.ctx, f.db, tenant.ID, "https://github.com/a")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(removed).To(BeTrue())
	removed, err = f.store.RemoveAppProjectRepository(f.ctx, f.db, tenant.ID, "https://github.com/a")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(removed).To(BeFalse())

	added, err = f.store.AddAppProjectDestination(f.ctx, f.db, tenant.ID, env.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(added).To(BeTrue())
	added, err = f.store.AddAppProjectDestination(f.ctx, f.db, tenant.ID, env.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(added).To(BeFalse())
	dests, err := f.store.ListAppProjectDestinations(f.ctx, f.db, tenant.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(dests).To(Equal([]string{env.ID}))
	removed, err = f.store.RemoveAppProjectDestination(f.ctx, f.db, tenant.ID, env.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(removed).To(BeTrue())

	// A destination goes with its environment.
	_, err = f.store.AddAppProjectDestination(f.ctx, f.db, tenant.ID, env.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.store.DeleteManagedEnvironment(f.ctx, f.db, tenant.ID, env.ID)).To(Succeed())
	dests, err = f.store.ListAppProjectDestinations(f.ctx, f.db, tenant.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(dests).To(BeEmpty())
	_, err = f.store.AddAppProjectRepository(f.ctx, f.db, tenant.ID, "")
	g.Expect(err).To(MatchError(db.ErrCheck))
}

func TestDeploymentMappingCRUD(t *testing.T) {
	t.Parallel()
	g, f := g(t), newFixture(t)
	tenant := f.newTenant(t)
	app, m := f.newApp(t, tenant.ID, "")

	again, err := f.store.GetOrCreateDeploymentMapping(f.ctx, f.db, &db.DeploymentMapping{
		DeploymentUID: m.DeploymentUID, TenantID: tenant.ID, DeploymentName: "other", DeploymentNamespace: "ns", ApplicationID: app.ID})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.DeploymentName).To(Equal(m.DeploymentName), "the stored mapping wins")

	byApp, err := f.store.GetDeploymentMappingByApplication(f.ctx, f.db, app.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(byApp.DeploymentUID).To(Equal(m.DeploymentUID))
	byName, err := f.store.ListDeploymentMappingsByName(f.ctx, f.db, tenant.ID, m.DeploymentName)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(byName).To(HaveLen(1))
	all, err := f.store.ListDeploymentMappings(f.ctx, f.db, tenant.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(all).To(HaveLen(1))

	// One application has one deployment.
	_, err = f.store.GetOrCreateDeploymentMapping(f.ctx, f.db, &db.DeploymentMapping{
		DeploymentUID: newUID(), TenantID: tenant.ID, DeploymentName: "d", DeploymentNamespace: "ns", ApplicationID: app.ID})
	g.Expect(err).To(MatchError(db.ErrConflict))

	g.Expect(f.store.DeleteDeploymentMapping(f.ctx, f.db, tenant.ID, m.DeploymentUID)).To(Succeed())
	g.Expect(f.store.DeleteDeploymentMapping(f.ctx, f.db, tenant.ID, m.DeploymentUID)).To(MatchError(db.ErrNotFound))
	_, err = f.store.GetApplication(f.ctx, f.db, tenant.ID, app.ID)
	g.Expect(err).NotTo(HaveOccurred(), "the application stays")
}

func TestAPICRMappingCRUD(t *testing.T) {
	t.Parallel()
	g, f := g(t), newFixture(t)
	tenant := f.newTenant(t)
	env, _ := f.newEnv(t, tenant.ID)
	rc := &db.RepositoryCredential{TenantID: tenant.ID, EngineInstanceID: f.instance.ID, RepositoryURL: "https://x", Password: "p"}
	g.Expect(f.store.CreateRepositoryCredential(f.ctx, f.db, rc)).To(Succeed())
	sop := &db.SyncOperation{TenantID: tenant.ID, DeploymentName: "d"}
	g.Expect(f.store.CreateSyncOperation(f.ctx, f.db, sop)).To(Succeed())

	for _, m := range []*db.APICRMapping{
		{APIResourceType: db.APIResourceManagedEnvironment, ManagedEnvironmentID: env.ID},
		{APIResourceType: db.APIResourceRepositoryCredential, RepositoryCredentialID: rc.ID},
		{APIResourceType: db.APIResourceSyncRun, SyncOperationID: sop.ID},
	} {
		m.APIResourceUID, m.APIResourceName, m.APIResourceNamespace, m.TenantID = newUID(), "cr", "team-a", tenant.ID
		target := m.TargetID()
		got, err := f.store.GetOrCreateAPICRMapping(f.ctx, f.db, m)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got.TargetID()).To(Equal(target))
		again, err := f.store.GetOrCreateAPICRMapping(f.ctx, f.db, m)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(again.CreatedAt).To(Equal(got.CreatedAt))

		byUID, err := f.store.GetAPICRMapping(f.ctx, f.db, tenant.ID, m.APIResourceType, m.APIResourceUID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(byUID.TargetID()).To(Equal(target))
		byTarget, err := f.store.GetAPICRMappingByTarget(f.ctx, f.db, tenant.ID, m.APIResourceType, target)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(byTarget.APIResourceUID).To(Equal(m.APIResourceUID))
		g.Expect(byTarget.APIResourceName).To(Equal("cr"))
		byName, err := f.store.ListAPICRMappingsByName(f.ctx, f.db, tenant.ID, m.APIResourceType, "cr")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(byName).To(HaveLen(1))
		list, err := f.store.ListAPICRMappings(f.ctx, f.db, tenant.ID, m.APIResourceType)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(list).To(HaveLen(1))

		// A second CR for the same row is a conflict.
		dup := *m
		dup.APIResourceUID = newUID()
		_, err = f.store.GetOrCreateAPICRMapping(f.ctx, f.db, &dup)
		g.Expect(err).To(MatchError(db.ErrConflict))
	}

	// The target must match the kind.
	_, err := f.store.GetOrCreateAPICRMapping(f.ctx, f.db, &db.APICRMapping{APIResourceType: db.APIResourceSyncRun,
		APIResourceUID: newUID(), APIResourceName: "x", APIResourceNamespace: "n", TenantID: tenant.ID, ManagedEnvironmentID: env.ID})
	g.Expect(err).To(MatchError(db.ErrCheck))

	// The reverse lookup: a row without a CR, another kind's row, and a malformed id.
	unmapped, _ := f.newEnv(t, tenant.ID)
	_, err = f.store.GetAPICRMappingByTarget(f.ctx, f.db, tenant.ID, db.APIResourceManagedEnvironment, unmapped.ID)
	g.Expect(err).To(MatchError(db.ErrNotFound))
	_, err = f.store.GetAPICRMappingByTarget(f.ctx, f.db, tenant.ID, db.APIResourceRepositoryCredential, env.ID)
	g.Expect(err).To(MatchError(db.ErrNotFound))
	_, err = f.store.GetAPICRMappingByTarget(f.ctx, f.db, tenant.ID, db.APIResourceManagedEnvironment, "not-a-uuid")
	g.Expect(err).To(MatchError(db.ErrInvalid))
	_, err = f.store.GetAPICRMappingByTarget(f.ctx, f.db, tenant.ID, "Unknown", env.ID)
	g.Expect(err).To(MatchError(db.ErrInvalid))

	// Mappings go with their rows, or on their own.
	g.Expect(f.store.DeleteSyncOperation(f.ctx, f.db, tenant.ID, sop.ID)).To(Succeed())
	list, err := f.store.ListAPICRMappings(f.ctx, f.db, tenant.ID, db.APIResourceSyncRun)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(list).To(BeEmpty())
	list, err = f.store.ListAPICRMappings(f.ctx, f.db, tenant.ID, db.APIResourceManagedEnvironment)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.store.DeleteAPICRMapping(f.ctx, f.db, tenant.ID, db.APIResourceManagedEnvironment, list[0].APIResourceUID)).To(Succeed())
	g.Expect(f.store.DeleteAPICRMapping(f.ctx, f.db, tenant.ID, db.APIResourceManagedEnvironment, list[0].APIResourceUID)).To(MatchError(db.ErrNotFound))
	_, err = f.store.GetManagedEnvironment(f.ctx, f.db, tenant.ID, env.ID)
	g.Expect(err).NotTo(HaveOccurred())
}

func TestOperationCRUD(t *testing.T) {
	t.Parallel()
	g, f := g(t), newFixture(t)
	tenant := f.newTenant(t)
	app, _ := f.newApp(t, tenant.ID, "")

	op := &db.Operation{EngineInstanceID: f.instance.ID, ResourceType: db.OperationResourceApplication,
		ResourceID: app.ID, OwnerTenantID: tenant.ID, GCExpirationSeconds: 3600}
	g.Expect(f.store.CreateOperation(f.ctx, f.db, op)).To(Succeed())
	g.Expect(op.ID).NotTo(BeEmpty())
	g.Expect(op.State).To(Equal(db.OperationWaiting))
	g.Expect(op.GCExpiresAt).To(BeZero())

	appProject := &db.Operation{EngineInstanceID: f.instance.ID, ResourceType: db.OperationResourceAppProject, ResourceID: tenant.ID}
	g.Expect(f.store.CreateOperation(f.ctx, f.db, appProject)).To(Succeed())
	otherInstance := &db.Operation{EngineInstanceID: f.newInstance(t).ID, ResourceType: db.OperationResourceApplication, ResourceID: app.ID}
	g.Expect(f.store.CreateOperation(f.ctx, f.db, otherInstance)).To(Succeed())

	pending, err := f.store.ListPendingOperations(f.ctx, f.db, f.instance.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pending).To(HaveLen(2))
	g.Expect(pending[0].ID).To(Equal(op.ID))

	updated, err := f.store.UpdateOperationStates(f.ctx, f.db, f.instance.ID, []string{op.ID}, db.OperationInProgress, "working", notify.OperationChanged)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(updated).To(HaveLen(1))
	g.Expect(updated[0].GCExpiresAt).To(BeZero())
	_, err = f.store.UpdateOperationStates(f.ctx, f.db, otherInstance.EngineInstanceID, []string{op.ID}, db.OperationCompleted, "", notify.OperationChanged)
	g.Expect(err).To(MatchError(db.ErrNotFound), "scoped by engine instance")
	updated, err = f.store.UpdateOperationStates(f.ctx, f.db, f.instance.ID, []string{op.ID}, db.OperationCompleted, "done", notify.OperationChanged)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(updated).To(HaveLen(1))
	got := updated[0]
	g.Expect(got.State).To(Equal(db.OperationCompleted))
	g.Expect(got.HumanReadableState).To(Equal("done"))
	g.Expect(got.GCExpiresAt).To(BeTemporally("~", got.UpdatedAt.Add(time.Hour), time.Second))
	_, err = f.store.UpdateOperationStates(f.ctx, f.db, f.instance.ID, []string{op.ID}, "Done", "", notify.OperationChanged)
	g.Expect(err).To(MatchError(db.ErrCheck))

	pending, err = f.store.ListPendingOperations(f.ctx, f.db, f.instance.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pending).To(HaveLen(1))
	g.Expect(pending[0].ID).To(Equal(appProject.ID))

	byResource, err := f.store.ListOperationsForResource(f.ctx, f.db, db.OperationResourceApplication, app.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(byResource).To(HaveLen(2))

	fromDB, err := f.store.GetOperation(f.ctx, f.db, op.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fromDB.GCExpiresAt).To(BeTemporally("~", got.GCExpiresAt, time.Millisecond))

	// A failed operation without expiry is kept.
	_, err = f.store.UpdateOperationStates(f.ctx, f.db, f.instance.ID, []string{appProject.ID}, db.OperationFailed, "no", notify.OperationChanged)
	g.Expect(err).NotTo(HaveOccurred())

	gced, err := f.store.GarbageCollectOperations(f.ctx, f.db, time.Now(), 100)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(gced).To(BeEmpty(), "not expired yet")
	gced, err = f.store.GarbageCollectOperations(f.ctx, f.db, time.Now().Add(2*time.Hour), 100)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(gced).To(HaveLen(1))
	g.Expect(gced[0].ID).To(Equal(op.ID))
	g.Expect(gced[0].EngineInstanceID).To(Equal(f.instance.ID))
	_, err = f.store.GetOperation(f.ctx, f.db, op.ID)
	g.Expect(err).To(MatchError(db.ErrNotFound))

	g.Expect(f.store.DeleteOperation(f.ctx, f.db, appProject.ID)).To(Succeed())
	g.Expect(f.store.DeleteOperation(f.ctx, f.db, appProject.ID)).To(MatchError(db.ErrNotFound))

	// Operations go with their engine instance.
	g.Expect(f.store.DeleteEngineInstance(f.ctx, f.db, otherInstance.EngineInstanceID)).To(Succeed())
	g.Expect(f.count(t, "operations")).To(BeZero())
}

func TestGarbageCollectOperationsLimit(t *testing.T) {
	t.Parallel()
	g, f := g(t), newFixture(t)
	for range 5 {
		op := &db.Operation{EngineInstanceID: f.instance.ID, ResourceType: db.OperationResourceApplication, ResourceID: newUID(), GCExpirationSeconds: 1}
		g.Expect(f.store.CreateOperation(f.ctx, f.db, op)).To(Succeed())
		_, err := f.store.UpdateOperationStates(f.ctx, f.db, f.instance.ID, []string{op.ID}, db.OperationCompleted, "", notify.OperationChanged)
		g.Expect(err).NotTo(HaveOccurred())
	}
	later := time.Now().Add(time.Minute)
	gced, err := f.store.GarbageCollectOperations(f.ctx, f.db, later, 3)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(gced).To(HaveLen(3))
	gced, err = f.store.GarbageCollectOperations(f.ctx, f.db, later, 3)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(gced).To(HaveLen(2))
	g.Expect(errors.Is(err, db.ErrNotFound)).To(BeFalse())
}

func TestSetEngineClusterCredentials(t *testing.T) {
	t.Parallel()
	g, f := g(t), newFixture(t)
	before := f.count(t, "cluster_credentials")

	// A cluster its agent registered first, without credentials, gets them attached.
	registered, err := f.store.GetOrCreateEngineCluster(f.ctx, f.db, "east", "")
	g.Expect(err).NotTo(HaveOccurred())
	first := &db.ClusterCredentials{Host: "https://east:6443", Kubeconfig: "apiVersion: v1\nkind: Config\n# first\n"}
	set, err := f.store.SetEngineClusterCredentials(f.ctx, f.db, "east", first)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(set.ID).To(Equal(registered.ID))
	g.Expect(set.ClusterCredentialsID).To(Equal(first.ID))
	got, err := f.store.GetEngineCluster(f.ctx, f.db, registered.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.ClusterCredentialsID).To(Equal(first.ID))

	// Setting them again replaces them in place.
	second := &db.ClusterCredentials{Host: "https://east:6443", Kubeconfig: "apiVersion: v1\nkind: Config\n# second\n"}
	again, err := f.store.SetEngineClusterCredentials(f.ctx, f.db, "east", second)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.ClusterCredentialsID).To(Equal(first.ID))
	stored, err := f.store.GetClusterCredentials(f.ctx, f.db, first.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(stored.Kubeconfig)).To(ContainSubstring("# second"))
	g.Expect(f.count(t, "cluster_credentials")).To(Equal(before + 1))

	// A cluster not seen before is created with them.
	west, err := f.store.SetEngineClusterCredentials(f.ctx, f.db, "west", &db.ClusterCredentials{Host: "https://west:6443", BearerToken: "t"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(west.ID).NotTo(BeEmpty())
	g.Expect(west.ClusterCredentialsID).NotTo(BeEmpty())
	_, err = f.store.SetEngineClusterCredentials(f.ctx, f.db, "west", &db.ClusterCredentials{Host: "https://west:6443"})
	g.Expect(err).To(MatchError(db.ErrCheck), "credentials without a secret are refused")
}

func TestGetAppliedApplicationReadsTheRowItsTenantItsStateAndWhetherAnOperationWaits(t *testing.T) {
	t.Parallel()
	g, f := g(t), newFixture(t)
	tenant, other := f.newTenant(t), f.newTenant(t)
	app, _ := f.newApp(t, tenant.ID, "")

	got, err := f.store.GetAppliedApplication(f.ctx, f.db, tenant.NamespaceUID, app.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.ID).To(Equal(app.ID))
	g.Expect(got.Spec).To(Equal(app.Spec))
	g.Expect(got.EngineInstanceID).To(Equal(f.instance.ID))
	g.Expect(got.Tenant).NotTo(BeNil())
	g.Expect(got.Tenant.ID).To(Equal(tenant.ID))
	g.Expect(got.Tenant.NamespaceName).To(Equal(tenant.NamespaceName))
	g.Expect(got.Waiting).To(BeFalse())
	g.Expect(got.AppState()).To(BeNil(), "no state recorded yet")

	st := &db.ApplicationState{ApplicationID: app.ID, EngineInstanceID: f.instance.ID, Health: db.HealthHealthy,
		SyncStatus: db.SyncStatusSynced, Revision: "abc", OperationState: &argov1alpha1.OperationState{Phase: "Succeeded"}}
	_, err = f.store.RecordApplicationState(f.ctx, f.db, st, notify.ApplicationStateChanged)
	g.Expect(err).NotTo(HaveOccurred())
	got, err = f.store.GetAppliedApplication(f.ctx, f.db, tenant.NamespaceUID, app.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.AppState()).NotTo(BeNil())
	g.Expect(got.AppState().Health).To(Equal(db.HealthHealthy))
	g.Expect(got.AppState().Revision).To(Equal("abc"))
	g.Expect(got.AppState().OperationState.Phase).To(BeEquivalentTo("Succeeded"))
	g.Expect(got.AppState().UpdatedAt).To(BeTemporally("~", st.UpdatedAt, time.Microsecond))
	g.Expect(got.Spec).To(Equal(app.Spec), "the application's columns are not mixed up with the state's")

	op := &db.Operation{EngineInstanceID: f.instance.ID, ResourceType: db.OperationResourceApplication, ResourceID: app.ID}
	g.Expect(f.store.CreateOperation(f.ctx, f.db, op)).To(Succeed())
	got, err = f.store.GetAppliedApplication(f.ctx, f.db, tenant.NamespaceUID, app.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Waiting).To(BeTrue(), "an operation waits")
	_, err = f.store.UpdateOperationStates(f.ctx, f.db, f.instance.ID, []string{op.ID}, db.OperationCompleted, "done", notify.OperationChanged)
	g.Expect(err).NotTo(HaveOccurred())
	got, err = f.store.GetAppliedApplication(f.ctx, f.db, tenant.NamespaceUID, app.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Waiting).To(BeFalse(), "finished")

	_, err = f.store.GetAppliedApplication(f.ctx, f.db, other.NamespaceUID, app.ID)
	g.Expect(err).To(MatchError(db.ErrNotFound), "another namespace's tenant")
	_, err = f.store.GetAppliedApplication(f.ctx, f.db, tenant.NamespaceUID, newUID())
	g.Expect(err).To(MatchError(db.ErrNotFound), "no such row")
}

// SameAs, on a row read back from PostgreSQL, agrees with UpsertApplication's comparison.
func TestSameAsAgreesWithTheUpsert(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tenant := f.newTenant(t)
	env, _ := f.newEnv(t, tenant.ID)
	written, _ := f.newApp(t, tenant.ID, "")
	stored, err := f.store.GetApplication(f.ctx, f.db, tenant.ID, written.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := func(change func(*db.Application)) *db.Application {
		app := &db.Application{TenantID: tenant.ID, Name: written.Name, EngineInstanceID: f.instance.ID, Spec: appSpec(tenant.ID, "main")}
		change(app)
		return app
	}
	for _, tc := range []struct {
		name string
		want *db.Application
		same bool
	}{
		{"as written", want(func(*db.Application) {}), true},
		{"another revision", want(func(a *db.Application) { a.Spec.Source.TargetRevision = "v2" }), false},
		{"another sync option", want(func(a *db.Application) {
			a.Spec.SyncPolicy.SyncOptions = append(a.Spec.SyncPolicy.SyncOptions, "CreateNamespace=true")
		}), false},
		{"not automated", want(func(a *db.Application) { a.Spec.SyncPolicy.Automated = nil }), false},
		{"another engine instance", want(func(a *db.Application) { a.EngineInstanceID = newUID() }), false},
		{"a managed environment", want(func(a *db.Application) { a.ManagedEnvironmentID = env.ID }), false},
		{"a refresh", want(func(a *db.Application) { a.Refresh = "now" }), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(stored.SameAs(tc.want)).To(Equal(tc.same))
			if tc.same {
				changed, err := f.store.UpsertApplication(f.ctx, f.db, tc.want)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(changed).To(BeFalse(), "the upsert finds nothing to change either")
			}
		})
	}
	other := want(func(a *db.Application) {})
	other.TenantID = f.newTenant(t).ID
	NewWithT(t).Expect(stored.SameAs(other)).To(BeFalse(), "another tenant's")
}
