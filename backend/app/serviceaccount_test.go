package app_test

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/testenv"
	"github.com/gitops-service/gitops-service/backend/internal/managedenv"
)

// startRemote starts a second API server, with a controller-manager that fills
// ServiceAccount token Secrets and garbage-collects owned objects, for the test.
func startRemote(t *testing.T) *testenv.ControlPlane {
	t.Helper()
	remote, err := testenv.StartControlPlane(testenv.Options{ControllerManager: true, WithoutServiceCRDs: true, WithoutArgoCDCRDs: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = remote.Stop() })
	return remote
}

// certUser adds a client-certificate user to a control plane and returns its kubeconfig
// (certificate and key inline, server without the trailing slash) and client configuration.
func certUser(t *testing.T, plane *testenv.ControlPlane, name string, groups ...string) ([]byte, *rest.Config) {
	t.Helper()
	data, cfg, err := plane.ClientCertKubeconfig(name, groups...)
	if err != nil {
		t.Fatal(err)
	}
	return data, cfg
}

func TestCreateNewServiceAccount(t *testing.T) {
	t.Parallel()
	remote := startRemote(t)
	h := startBackend(t)
	adminKubeconfig, adminConfig := certUser(t, remote, "installer", "system:masters")
	env := h.newEnvironment("sa", v1.ManagedEnvironmentSecretType, map[string][]byte{"kubeconfig": adminKubeconfig},
		func(e *v1.GitOpsDeploymentManagedEnvironment) {
			// The kubeconfig's server has no trailing slash: it is the same server.
			e.Spec.APIURL = strings.TrimSuffix(remote.Config.Host, "/") + "/"
			e.Spec.CreateNewServiceAccount = true
		})
	h.g.Eventually(h.connection(env), 2*eventually, poll).Should(And(
		HaveField("Status", metav1.ConditionTrue), HaveField("Reason", string(v1.ManagedEnvironmentReasonSucceeded))))

	// What was installed on the target cluster.
	name := managedenv.ServiceAccountName(env.UID)
	rc := remote.Client
	sa := &corev1.ServiceAccount{}
	h.g.Expect(rc.Get(h.ctx, client.ObjectKey{Namespace: "kube-system", Name: name}, sa)).To(Succeed())
	role := &rbacv1.ClusterRole{}
	h.g.Expect(rc.Get(h.ctx, client.ObjectKey{Name: name}, role)).To(Succeed())
	h.g.Expect(role.Rules).To(ContainElements(
		rbacv1.PolicyRule{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}},
		rbacv1.PolicyRule{NonResourceURLs: []string{"*"}, Verbs: []string{"*"}}))
	binding := &rbacv1.ClusterRoleBinding{}
	h.g.Expect(rc.Get(h.ctx, client.ObjectKey{Name: name}, binding)).To(Succeed())
	h.g.Expect(binding.RoleRef.Name).To(Equal(name))
	h.g.Expect(binding.Subjects).To(ConsistOf(rbacv1.Subject{Kind: "ServiceAccount", Name: name, Namespace: "kube-system"}))
	tokenSecret := &corev1.Secret{}
	h.g.Expect(rc.Get(h.ctx, client.ObjectKey{Namespace: "kube-system", Name: name + "-token"}, tokenSecret)).To(Succeed())
	h.g.Expect(tokenSecret.Type).To(Equal(corev1.SecretTypeServiceAccountToken))
	h.g.Expect(tokenSecret.Annotations).To(HaveKeyWithValue(corev1.ServiceAccountNameKey, name))
	token := string(tokenSecret.Data[corev1.ServiceAccountTokenKey])
	h.g.Expect(token).NotTo(BeEmpty())

	// What is stored: the ServiceAccount's token, none of the user's credentials.
	tenant := h.tenantRow()
	mapping, err := h.store.GetAPICRMapping(h.ctx, h.db, tenant.ID, db.APIResourceManagedEnvironment, string(env.UID))
	h.g.Expect(err).NotTo(HaveOccurred())
	envID := mapping.TargetID()
	creds, err := h.store.GetManagedEnvironmentCredentials(h.ctx, h.db, tenant.ID, envID)
	h.g.Expect(err).NotTo(HaveOccurred())
	h.g.Expect(string(creds.BearerToken)).To(Equal(token))
	h.g.Expect(creds.ServiceAccountNamespace).To(Equal("kube-system"))
	h.g.Expect(creds.Host).To(Equal(env.Spec.APIURL))
	stored, err := clientcmd.Load([]byte(creds.Kubeconfig))
	h.g.Expect(err).NotTo(HaveOccurred())
	for _, user := range stored.AuthInfos {
		h.g.Expect(user.ClientKeyData).To(BeEmpty())
		h.g.Expect(user.ClientCertificateData).To(BeEmpty())
		h.g.Expect(user.Token).To(Equal(token))
	}
	h.g.Expect(string(creds.Kubeconfig)).NotTo(ContainSubstring(string(adminConfig.KeyData)))
	h.g.Expect(h.operations(db.OperationResourceManagedEnvironment, envID)).To(HaveLen(1))

	// The token works on the target cluster.
	saClient, err := kubernetes.NewForConfig(&rest.Config{Host: remote.Config.Host, BearerToken: token,
		TLSClientConfig: rest.TLSClientConfig{CAData: remote.Config.CAData}})
	h.g.Expect(err).NotTo(HaveOccurred())
	namespaces, err := saClient.CoreV1().Namespaces().List(h.ctx, metav1.ListOptions{})
	h.g.Expect(err).NotTo(HaveOccurred())
	h.g.Expect(namespaces.Items).NotTo(BeEmpty())

	// Re-reconciling repairs what is missing and duplicates nothing: remove the binding,
	// touch the environment, and wait for a new binding. A reconcile still queued from the
	// status write may recreate it first, so the test looks for a new UID rather than for
	// the moment it is gone.
	h.g.Expect(rc.Delete(h.ctx, binding)).To(Succeed())
	touched := &v1.GitOpsDeploymentManagedEnvironment{}
	h.g.Expect(cp.Client.Get(h.ctx, client.ObjectKeyFromObject(env), touched)).To(Succeed())
	touched.Annotations = map[string]string{"touched": "yes"}
	h.g.Expect(cp.Client.Update(h.ctx, touched)).To(Succeed())
	h.g.Eventually(func() (string, error) {
		recreated := &rbacv1.ClusterRoleBinding{}
		err := rc.Get(h.ctx, client.ObjectKey{Name: name}, recreated)
		return string(recreated.UID), err
	}, eventually, poll).Should(And(Not(BeEmpty()), Not(Equal(string(binding.UID)))))
	selector := client.MatchingLabels{managedenv.LabelManagedEnvironmentUID: string(env.UID)}
	var (
		sas      corev1.ServiceAccountList
		secrets  corev1.SecretList
		roles    rbacv1.ClusterRoleList
		bindings rbacv1.ClusterRoleBindingList
	)
	// The binding comes back before the repair has gone through the rest: one of each
	// once it has.
	h.g.Eventually(func(g Gomega) {
		for _, list := range []client.ObjectList{&sas, &secrets, &roles, &bindings} {
			g.Expect(rc.List(h.ctx, list, selector)).To(Succeed())
			g.Expect(meta.LenList(list)).To(Equal(1), "%T", list)
		}
	}, eventually, poll).Should(Succeed())
	again, err := h.store.GetManagedEnvironmentCredentials(h.ctx, h.db, tenant.ID, envID)
	h.g.Expect(err).NotTo(HaveOccurred())
	h.g.Expect(string(again.BearerToken)).To(Equal(token))
	h.g.Expect(h.operations(db.OperationResourceManagedEnvironment, envID)).To(HaveLen(1), "unchanged credentials signal nothing")

	// Namespace-scoped: a Role and RoleBinding in each listed namespace, and a ClusterRole
	// that only reads namespaces.
	for _, ns := range []string{"team-a", "team-b"} {
		h.g.Expect(rc.Create(h.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	}
	scoped := h.newEnvironment("sa-scoped", v1.ManagedEnvironmentSecretType, map[string][]byte{"kubeconfig": adminKubeconfig},
		func(e *v1.GitOpsDeploymentManagedEnvironment) {
			e.Spec.APIURL = remote.Config.Host
			e.Spec.CreateNewServiceAccount = true
			e.Spec.Namespaces = []string{"team-a", "team-b"}
		})
	h.g.Eventually(h.connection(scoped), 2*eventually, poll).Should(HaveField("Status", metav1.ConditionTrue))
	scopedName := managedenv.ServiceAccountName(scoped.UID)
	for _, ns := range []string{"team-a", "team-b"} {
		h.g.Expect(rc.Get(h.ctx, client.ObjectKey{Namespace: ns, Name: scopedName}, &rbacv1.Role{})).To(Succeed())
		h.g.Expect(rc.Get(h.ctx, client.ObjectKey{Namespace: ns, Name: scopedName}, &rbacv1.RoleBinding{})).To(Succeed())
	}
	scopedRole := &rbacv1.ClusterRole{}
	h.g.Expect(rc.Get(h.ctx, client.ObjectKey{Name: scopedName}, scopedRole)).To(Succeed())
	h.g.Expect(scopedRole.Rules).NotTo(ContainElement(HaveField("Resources", ContainElement("*"))))
	scopedMapping, err := h.store.GetAPICRMapping(h.ctx, h.db, tenant.ID, db.APIResourceManagedEnvironment, string(scoped.UID))
	h.g.Expect(err).NotTo(HaveOccurred())
	scopedCreds, err := h.store.GetManagedEnvironmentCredentials(h.ctx, h.db, tenant.ID, scopedMapping.TargetID())
	h.g.Expect(err).NotTo(HaveOccurred())
	scopedClient, err := kubernetes.NewForConfig(&rest.Config{Host: remote.Config.Host, BearerToken: string(scopedCreds.BearerToken),
		TLSClientConfig: rest.TLSClientConfig{CAData: remote.Config.CAData}})
	h.g.Expect(err).NotTo(HaveOccurred())
	_, err = scopedClient.CoreV1().ConfigMaps("team-a").List(h.ctx, metav1.ListOptions{})
	h.g.Expect(err).NotTo(HaveOccurred())
	_, err = scopedClient.CoreV1().Secrets("kube-system").List(h.ctx, metav1.ListOptions{})
	h.g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "no access outside spec.namespaces")

	// Deleting the environments removes what was installed for them.
	h.g.Expect(cp.Client.Delete(h.ctx, env)).To(Succeed())
	h.g.Expect(cp.Client.Delete(h.ctx, scoped)).To(Succeed())
	for _, n := range []string{name, scopedName} {
		h.g.Eventually(func() bool {
			return apierrors.IsNotFound(rc.Get(h.ctx, client.ObjectKey{Name: n}, &rbacv1.ClusterRole{}))
		}, eventually, poll).Should(BeTrue(), n)
		h.g.Eventually(func() bool {
			return apierrors.IsNotFound(rc.Get(h.ctx, client.ObjectKey{Namespace: "kube-system", Name: n}, &corev1.ServiceAccount{}))
		}, eventually, poll).Should(BeTrue(), n)
	}
	h.g.Eventually(func() bool {
		return apierrors.IsNotFound(rc.Get(h.ctx, client.ObjectKey{Namespace: "team-a", Name: scopedName}, &rbacv1.RoleBinding{}))
	}, eventually, poll).Should(BeTrue())
}

func TestCreateNewServiceAccountWithoutPermission(t *testing.T) {
	t.Parallel()
	h := startBackend(t)
	// The user may read everything (so the credentials verify) but change nothing.
	viewerKubeconfig, viewerConfig := certUser(t, cp, "sa-viewer")
	h.g.Expect(cp.Client.Create(h.ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "sa-viewer"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}}},
	})).To(Succeed())
	h.g.Expect(cp.Client.Create(h.ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "sa-viewer-"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "sa-viewer"},
		Subjects:   []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "sa-viewer"}},
	})).To(Succeed())
	viewer, err := kubernetes.NewForConfig(viewerConfig)
	h.g.Expect(err).NotTo(HaveOccurred())
	h.g.Eventually(func() error { // the API server's RBAC cache catches up
		_, err := viewer.CoreV1().Namespaces().List(h.ctx, metav1.ListOptions{Limit: 1})
		return err
	}, eventually, poll).Should(Succeed())
	env := h.newEnvironment("sa-denied", v1.ManagedEnvironmentSecretType, map[string][]byte{"kubeconfig": viewerKubeconfig},
		func(e *v1.GitOpsDeploymentManagedEnvironment) { e.Spec.CreateNewServiceAccount = true })
	h.g.Eventually(h.connection(env), eventually, poll).Should(And(
		HaveField("Status", metav1.ConditionFalse),
		HaveField("Reason", string(v1.ManagedEnvironmentReasonUnableToInstallServiceAccount)),
		HaveField("Message", ContainSubstring("403 Forbidden")),
		HaveField("Message", ContainSubstring(`"patch" on clusterroles.rbac.authorization.k8s.io`)),
	))
	msg := h.connection(env)().Message
	for _, secret := range [][]byte{viewerConfig.KeyData, viewerConfig.CertData, viewerKubeconfig} {
		h.g.Expect(msg).NotTo(ContainSubstring(strings.TrimSpace(string(secret))))
	}
	h.g.Expect(msg).NotTo(ContainSubstring("BEGIN"))
	h.g.Expect(cp.Client.Get(h.ctx, client.ObjectKey{Name: managedenv.ServiceAccountName(env.UID)}, &rbacv1.ClusterRole{})).
		To(Satisfy(apierrors.IsNotFound), "nothing installed")
	h.g.Expect(cp.Client.Get(h.ctx, client.ObjectKey{Namespace: "kube-system", Name: managedenv.ServiceAccountName(env.UID)}, &corev1.ServiceAccount{})).
		To(Satisfy(apierrors.IsNotFound), "nothing installed")
	mappings, err := h.store.ListAPICRMappings(h.ctx, h.db, h.tenantRowOrEmpty(), db.APIResourceManagedEnvironment)
	h.g.Expect(err).NotTo(HaveOccurred())
	h.g.Expect(mappings).To(BeEmpty(), "nothing is stored")
}

func TestClientCertificateKubeconfigConnects(t *testing.T) {
	t.Parallel()
	h := startBackend(t)
	data, _ := certUser(t, cp, "cert-admin", "system:masters")
	env := h.newEnvironment("cert", v1.ManagedEnvironmentSecretType, map[string][]byte{"kubeconfig": data},
		func(e *v1.GitOpsDeploymentManagedEnvironment) {
			e.Spec.APIURL = strings.TrimSuffix(cp.Config.Host, "/") + "/"
		})
	h.g.Eventually(h.connection(env), eventually, poll).Should(And(
		HaveField("Status", metav1.ConditionTrue), HaveField("Reason", string(v1.ManagedEnvironmentReasonSucceeded))))
	tenant := h.tenantRow()
	mapping, err := h.store.GetAPICRMapping(h.ctx, h.db, tenant.ID, db.APIResourceManagedEnvironment, string(env.UID))
	h.g.Expect(err).NotTo(HaveOccurred())
	creds, err := h.store.GetManagedEnvironmentCredentials(h.ctx, h.db, tenant.ID, mapping.TargetID())
	h.g.Expect(err).NotTo(HaveOccurred())
	h.g.Expect(creds.Host).To(Equal(env.Spec.APIURL))
	h.g.Expect(string(creds.Kubeconfig)).To(Equal(string(data)))
	h.g.Expect(creds.ServiceAccountNamespace).To(BeEmpty())
}

// Without a token controller (this control plane runs no controller-manager) the token
// Secret stays empty: the install falls back to the TokenRequest API.
func TestCreateNewServiceAccountFallsBackToTokenRequest(t *testing.T) {
	t.Parallel()
	h := startBackend(t)
	data, _ := certUser(t, cp, "sa-installer", "system:masters")
	env := h.newEnvironment("sa-request", v1.ManagedEnvironmentSecretType, map[string][]byte{"kubeconfig": data},
		func(e *v1.GitOpsDeploymentManagedEnvironment) { e.Spec.CreateNewServiceAccount = true })
	h.g.Eventually(h.connection(env), 3*eventually, poll).Should(HaveField("Status", metav1.ConditionTrue))
	tenant := h.tenantRow()
	mapping, err := h.store.GetAPICRMapping(h.ctx, h.db, tenant.ID, db.APIResourceManagedEnvironment, string(env.UID))
	h.g.Expect(err).NotTo(HaveOccurred())
	creds, err := h.store.GetManagedEnvironmentCredentials(h.ctx, h.db, tenant.ID, mapping.TargetID())
	h.g.Expect(err).NotTo(HaveOccurred())
	h.g.Expect(creds.BearerToken).NotTo(BeEmpty())
	h.g.Expect(creds.ServiceAccountNamespace).To(Equal("kube-system"))
	saClient, err := kubernetes.NewForConfig(&rest.Config{Host: cp.Config.Host, BearerToken: string(creds.BearerToken),
		TLSClientConfig: rest.TLSClientConfig{CAData: cp.Config.CAData}})
	h.g.Expect(err).NotTo(HaveOccurred())
	_, err = saClient.CoreV1().Namespaces().List(h.ctx, metav1.ListOptions{})
	h.g.Expect(err).NotTo(HaveOccurred())

	// A later reconcile keeps the stored token while it works: nothing changes.
	touched := &v1.GitOpsDeploymentManagedEnvironment{}
	h.g.Expect(cp.Client.Get(h.ctx, client.ObjectKeyFromObject(env), touched)).To(Succeed())
	touched.Annotations = map[string]string{"touched": "yes"}
	h.g.Expect(cp.Client.Update(h.ctx, touched)).To(Succeed())
	h.g.Consistently(func() db.Secret {
		again, err := h.store.GetManagedEnvironmentCredentials(h.ctx, h.db, tenant.ID, mapping.TargetID())
		h.g.Expect(err).NotTo(HaveOccurred())
		return again.BearerToken
	}, 12*time.Second, time.Second).Should(Equal(creds.BearerToken))
	h.g.Expect(h.operations(db.OperationResourceManagedEnvironment, mapping.TargetID())).To(HaveLen(1))
}
