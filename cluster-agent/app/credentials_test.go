package app_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
)

const (
	envAPIURL  = "https://api.cluster.example.com:6443"
	envToken   = "sa-token-do-not-leak"
	repoPasswd = "repo-password-do-not-leak"
)

func (e *env) managedEnvironment(tenant *db.Tenant) *db.ManagedEnvironment {
	e.t.Helper()
	env := &db.ManagedEnvironment{TenantID: tenant.ID, Name: "staging"}
	creds := &db.ClusterCredentials{Host: envAPIURL, BearerToken: envToken, Namespaces: []string{"app-1", "app-2"}}
	e.g().Expect(e.store.CreateManagedEnvironment(e.ctx, e.db, env, creds)).To(Succeed())
	return env
}

func (e *env) secret(name string) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	return s, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: name}, s)
}

func TestManagedEnvironmentAndRepositoryCredentialSecrets(t *testing.T) {
	e := startAgent(t, true, nil)
	g := e.g()
	tenant := e.tenant()

	// Managed environment: the cluster Secret.
	env := e.managedEnvironment(tenant)
	op := e.completed(e.signal(db.OperationResourceManagedEnvironment, env.ID, tenant.ID).ID)
	g.Expect(op.HumanReadableState).NotTo(ContainSubstring(envToken))
	secret, err := e.secret(argocd.ClusterSecretName(env.ID))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(secret.Labels).To(HaveKeyWithValue(argocd.LabelSecretType, argocd.SecretTypeCluster))
	g.Expect(secret.Labels).To(HaveKeyWithValue(argocd.LabelTenantID, tenant.ID))
	g.Expect(string(secret.Data["server"])).To(Equal(envAPIURL + "?managedEnvironment=" + env.ID))
	g.Expect(string(secret.Data["namespaces"])).To(Equal("app-1,app-2"))
	g.Expect(string(secret.Data["project"])).To(Equal(argocd.RemoteAppProjectName(tenant.ID)))
	var config argov1alpha1.ClusterConfig
	g.Expect(json.Unmarshal(secret.Data["config"], &config)).To(Succeed())
	g.Expect(config.BearerToken).To(Equal(envToken))

	// The tenant's managed-environment AppProject allows the environment, any namespace and
	// any kind; its in-cluster AppProject, with no in-cluster destination, is not made. A
	// variant spelling of a repository is one sourceRepos entry.
	_, err = e.store.AddAppProjectDestination(e.ctx, e.db, tenant.ID, env.ID)
	g.Expect(err).NotTo(HaveOccurred())
	for _, url := range []string{repoURL, strings.ToUpper(strings.TrimSuffix(repoURL, ".git")) + "/"} {
		_, err = e.store.AddAppProjectRepository(e.ctx, e.db, tenant.ID, url)
		g.Expect(err).NotTo(HaveOccurred())
	}
	op = e.completed(e.signal(db.OperationResourceAppProject, tenant.ID, tenant.ID).ID)
	g.Expect(op.HumanReadableState).To(Equal("AppProject " + argocd.RemoteAppProjectName(tenant.ID) + " is up to date"))
	project := &argov1alpha1.AppProject{}
	g.Expect(e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: argocd.RemoteAppProjectName(tenant.ID)}, project)).To(Succeed())
	g.Expect(project.Spec.Destinations).To(Equal([]argov1alpha1.ApplicationDestination{{Name: argocd.ClusterSecretName(env.ID), Namespace: "*"}}))
	g.Expect(project.Spec.SourceRepos).To(HaveLen(1))
	g.Expect(argocd.RepositoryKey(project.Spec.SourceRepos[0])).To(Equal(argocd.RepositoryKey(repoURL)))
	g.Expect(project.Spec.ClusterResourceWhitelist).To(Equal([]metav1.GroupKind{{Group: "*", Kind: "*"}}))
	err = e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: argocd.AppProjectName(tenant.ID)}, &argov1alpha1.AppProject{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue())

	// Repository credential: the repository Secret.
	cred := &db.RepositoryCredential{TenantID: tenant.ID, EngineInstanceID: e.id.InstanceID, RepositoryURL: repoURL,
		Username: "bot", Password: repoPasswd}
	g.Expect(e.store.CreateRepositoryCredential(e.ctx, e.db, cred)).To(Succeed())
	op = e.completed(e.signal(db.OperationResourceRepositoryCredential, cred.ID, tenant.ID).ID)
	g.Expect(op.HumanReadableState).NotTo(ContainSubstring(repoPasswd))
	// One repository Secret per AppProject: Argo CD gives a project-scoped Secret only to
	// that project's Applications.
	for name, project := range map[string]string{
		argocd.RepositorySecretName(cred.ID):       argocd.AppProjectName(tenant.ID),
		argocd.RemoteRepositorySecretName(cred.ID): argocd.RemoteAppProjectName(tenant.ID),
	} {
		secret, err = e.secret(name)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(secret.Labels).To(HaveKeyWithValue(argocd.LabelSecretType, argocd.SecretTypeRepository))
		g.Expect(string(secret.Data["project"])).To(Equal(project))
		g.Expect(string(secret.Data["url"])).To(Equal(repoURL))
		g.Expect(string(secret.Data["username"])).To(Equal("bot"))
		g.Expect(string(secret.Data["password"])).To(Equal(repoPasswd))
	}

	// An ownerless operation (the sweep's, for Secrets it found without a row here, before
	// the credential moved back) leaves the Secrets of a credential served here alone.
	op = e.completed(e.signal(db.OperationResourceRepositoryCredential, cred.ID, "").ID)
	g.Expect(op.HumanReadableState).To(ContainSubstring("kept"))
	for _, name := range []string{argocd.RepositorySecretName(cred.ID), argocd.RemoteRepositorySecretName(cred.ID)} {
		_, err = e.secret(name)
		g.Expect(err).NotTo(HaveOccurred())
	}

	// Rows deleted: Secrets deleted; the AppProject with nothing left goes too.
	g.Expect(e.store.DeleteManagedEnvironment(e.ctx, e.db, tenant.ID, env.ID)).To(Succeed())
	e.completed(e.signal(db.OperationResourceManagedEnvironment, env.ID, tenant.ID).ID)
	_, err = e.secret(argocd.ClusterSecretName(env.ID))
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
	g.Expect(e.store.DeleteRepositoryCredential(e.ctx, e.db, tenant.ID, cred.ID)).To(Succeed())
	e.completed(e.signal(db.OperationResourceRepositoryCredential, cred.ID, tenant.ID).ID)
	for _, name := range []string{argocd.RepositorySecretName(cred.ID), argocd.RemoteRepositorySecretName(cred.ID)} {
		_, err = e.secret(name)
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
	}
	g.Expect(e.store.RemoveAppProjectDestination(e.ctx, e.db, tenant.ID, env.ID)).Error().NotTo(HaveOccurred())
	op = e.completed(e.signal(db.OperationResourceAppProject, tenant.ID, tenant.ID).ID)
	g.Expect(op.HumanReadableState).To(HavePrefix("AppProjects of tenant " + tenant.ID + " deleted"))
	err = e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: argocd.RemoteAppProjectName(tenant.ID)}, &argov1alpha1.AppProject{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
}

func TestCredentialsWithoutKeyring(t *testing.T) {
	e := startAgent(t, false, nil)
	g := e.g()
	tenant := e.tenant()
	env := e.managedEnvironment(tenant)
	op := e.finished(e.signal(db.OperationResourceManagedEnvironment, env.ID, tenant.ID).ID)
	g.Expect(op.State).To(Equal(db.OperationFailed))
	g.Expect(op.HumanReadableState).To(Equal("cannot decrypt the credentials: the cluster-agent runs without --credentials-keys-file"))
	_, err := e.secret(argocd.ClusterSecretName(env.ID))
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
	g.Expect(counter(t, "gitops_cluster_agent_operations_total", "ManagedEnvironment", "failed")).To(BeNumerically(">=", 1))
}

func TestClusterSecretOfATenantPlacedElsewhereStaysWhileItsAppProjectsRemain(t *testing.T) {
	e := startAgent(t, true, nil)
	g := e.g()
	tenant := e.tenant()
	env := e.managedEnvironment(tenant)
	_, err := e.store.AddAppProjectDestination(e.ctx, e.db, tenant.ID, env.ID)
	g.Expect(err).NotTo(HaveOccurred())
	e.completed(e.signal(db.OperationResourceManagedEnvironment, env.ID, tenant.ID).ID)
	e.completed(e.signal(db.OperationResourceAppProject, tenant.ID, tenant.ID).ID)
	remote := client.ObjectKey{Namespace: e.ns, Name: argocd.RemoteAppProjectName(tenant.ID)}
	g.Expect(e.c.Get(e.ctx, remote, &argov1alpha1.AppProject{})).To(Succeed())

	// The tenant is placed on another instance: its AppProject is still here, and with it
	// the cluster Secret, which an Argo CD Application here could still need.
	uid := uuid.NewString()
	_, elsewhere, err := e.store.RegisterEngineInstance(e.ctx, e.db, e.id.ClusterName, "elsewhere-"+uid[:8], uid)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(e.store.SetTenantEngineInstance(e.ctx, e.db, tenant.ID, elsewhere.ID)).To(Succeed())
	kept := e.signal(db.OperationResourceManagedEnvironment, env.ID, tenant.ID)
	g.Eventually(func() string { return e.operation(kept.ID).HumanReadableState }, timeout, interval).
		Should(ContainSubstring("kept while AppProject " + remote.Name + " remains"))
	g.Expect(e.operation(kept.ID).State).To(Equal(db.OperationInProgress))
	_, err = e.secret(argocd.ClusterSecretName(env.ID))
	g.Expect(err).NotTo(HaveOccurred())

	// The AppProject operation removes the project of a tenant served elsewhere, and leaves
	// the Secret alone; the waiting cluster operation then deletes it.
	op := e.completed(e.signal(db.OperationResourceAppProject, tenant.ID, tenant.ID).ID)
	g.Expect(op.HumanReadableState).To(HavePrefix("AppProjects of tenant " + tenant.ID + " deleted"))
	g.Expect(apierrors.IsNotFound(e.c.Get(e.ctx, remote, &argov1alpha1.AppProject{}))).To(BeTrue())
	op = e.completed(kept.ID)
	g.Expect(op.HumanReadableState).To(ContainSubstring("deleted: the tenant is placed on another engine instance"))
	_, err = e.secret(argocd.ClusterSecretName(env.ID))
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
}
