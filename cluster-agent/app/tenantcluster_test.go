package app_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	agent "github.com/gitops-service/gitops-service/cluster-agent/app"
)

// Argo CD deploys into a tenant's namespace through the tenant's own cluster entry, with a
// token of a ServiceAccount bound to the configured role in that namespace only.
func TestTenantsDeployAsTheirOwnDeployer(t *testing.T) {
	// Without a controller-manager, `admin` aggregates nothing: a role of the test's own.
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{GenerateName: "deployer-"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"*"}}}}
	NewWithT(t).Expect(cp.Client.Create(context.Background(), role)).To(Succeed())
	e := startAgent(t, true, func(o *agent.Options) {
		o.TenantClusterRole = role.Name
		o.SweepInterval = time.Second
		o.TenantRenewInterval = time.Second
	})
	g := e.g()
	tenant := e.tenant()
	g.Expect(cp.Client.Create(e.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenant.NamespaceName}})).To(Succeed())
	uid := uuid.NewString()
	name := argocd.ApplicationName(types.UID(uid))
	row := e.application(tenant, uid, repoURL, "apps/one", tenant.NamespaceName, true)
	e.completed(e.signal(db.OperationResourceApplication, row.ID, tenant.ID).ID)

	server := argocd.TenantServer(cp.Config.Host, tenant.ID)
	g.Expect(e.argoApp(name).Spec.Destination).To(Equal(argov1alpha1.ApplicationDestination{Server: server, Namespace: tenant.NamespaceName}))
	project := &argov1alpha1.AppProject{}
	g.Expect(e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: argocd.AppProjectName(tenant.ID)}, project)).To(Succeed())
	g.Expect(project.Spec.Destinations).To(Equal([]argov1alpha1.ApplicationDestination{{Server: server, Namespace: tenant.NamespaceName}}))

	sec, err := e.secret(argocd.TenantClusterSecretName(tenant.ID))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sec.Labels).To(HaveKeyWithValue(argocd.LabelSecretType, argocd.SecretTypeCluster))
	g.Expect(string(sec.Data["server"])).To(Equal(server))
	g.Expect(string(sec.Data["namespaces"])).To(Equal(tenant.NamespaceName))
	g.Expect(string(sec.Data["clusterResources"])).To(Equal("false"))
	var config argov1alpha1.ClusterConfig
	g.Expect(json.Unmarshal(sec.Data["config"], &config)).To(Succeed())
	g.Expect(config.CAData).NotTo(BeEmpty())

	// The token is the deployer's, and Kubernetes gives it the tenant's namespace only, and
	// in it only what its role may do.
	cfg := rest.AnonymousClientConfig(cp.Config)
	cfg.BearerToken = config.BearerToken
	deployer, err := client.New(cfg, client.Options{Scheme: cp.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	review := &authenticationv1.SelfSubjectReview{}
	g.Expect(deployer.Create(e.ctx, review)).To(Succeed())
	g.Expect(review.Status.UserInfo.Username).To(Equal("system:serviceaccount:" + tenant.NamespaceName + ":" + argocd.TenantDeployerName))
	g.Expect(deployer.Create(e.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "allowed", Namespace: tenant.NamespaceName}})).To(Succeed())
	g.Expect(apierrors.IsForbidden(deployer.Create(e.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere", Namespace: e.ns}}))).To(BeTrue())
	g.Expect(apierrors.IsForbidden(deployer.Create(e.ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "more", Namespace: tenant.NamespaceName}}))).To(BeTrue())

	// The tenant's Secret deleted by hand is written again, with a new token.
	g.Expect(e.c.Delete(e.ctx, sec)).To(Succeed())
	g.Eventually(func() error {
		_, err := e.secret(argocd.TenantClusterSecretName(tenant.ID))
		return err
	}, timeout, interval).Should(Succeed())

	// An Application written before the tenant had its own entry (by an older agent) keeps
	// its project's admission, and the sweep has it written through the tenant's entry.
	e.argoUpdate(name, func(a *argov1alpha1.Application) { a.Spec.Destination.Server = argocd.InClusterServer })
	g.Eventually(func() string { return e.argoApp(name).Spec.Destination.Server }, timeout, interval).Should(Equal(server))

	// Its last Application gone, the tenant's entry goes with its AppProject.
	g.Expect(e.store.DeleteApplication(e.ctx, e.db, tenant.ID, row.ID)).To(Succeed())
	e.completed(e.signal(db.OperationResourceApplication, row.ID, tenant.ID).ID)
	g.Eventually(func() bool {
		_, err := e.secret(argocd.TenantClusterSecretName(tenant.ID))
		return apierrors.IsNotFound(err)
	}, timeout, interval).Should(BeTrue())
}
