package app_test

import (
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	"github.com/gitops-service/gitops-service/backend-shared/db"
)

// serviceAccountToken creates a ServiceAccount on the test cluster, optionally bound to
// cluster-admin, and returns a token for it.
func (h *harness) serviceAccountToken(name string, clusterAdmin bool) string {
	h.t.Helper()
	_, token := h.serviceAccount(name, clusterAdmin)
	return token
}

// serviceAccount is serviceAccountToken that also returns the ServiceAccount, for bindings.
func (h *harness) serviceAccount(name string, clusterAdmin bool) (rbacv1.Subject, string) {
	h.t.Helper()
	ns := cp.NewNamespace(h.t, "remote-")
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	h.g.Expect(cp.Client.Create(h.ctx, sa)).To(Succeed())
	if clusterAdmin {
		h.g.Expect(cp.Client.Create(h.ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "gitops-test-"},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns}},
		})).To(Succeed())
	}
	cs, err := kubernetes.NewForConfig(cp.Config)
	h.g.Expect(err).NotTo(HaveOccurred())
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(h.ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	h.g.Expect(err).NotTo(HaveOccurred())
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}, tr.Status.Token
}

// kubeconfig is a kubeconfig for the test cluster with a bearer token.
func kubeconfig(server, token string) []byte { return cp.TokenKubeconfig(server, token) }

func (h *harness) newEnvironment(name string, secretType corev1.SecretType, data map[string][]byte, mutate ...func(*v1.GitOpsDeploymentManagedEnvironment)) *v1.GitOpsDeploymentManagedEnvironment {
	h.t.Helper()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name + "-secret", Namespace: h.tenant}, Type: secretType, Data: data}
	h.g.Expect(cp.Client.Create(h.ctx, secret)).To(Succeed())
	env := &v1.GitOpsDeploymentManagedEnvironment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.tenant},
		Spec:       v1.GitOpsDeploymentManagedEnvironmentSpec{APIURL: cp.Config.Host, ClusterCredentialsSecret: secret.Name},
	}
	for _, m := range mutate {
		m(env)
	}
	h.g.Expect(cp.Client.Create(h.ctx, env)).To(Succeed())
	return env
}

func (h *harness) connection(env *v1.GitOpsDeploymentManagedEnvironment) func() *metav1.Condition {
	return func() *metav1.Condition {
		got := &v1.GitOpsDeploymentManagedEnvironment{}
		h.g.Expect(cp.Client.Get(h.ctx, client.ObjectKeyFromObject(env), got)).To(Succeed())
		return meta.FindStatusCondition(got.Status.Conditions, v1.ManagedEnvironmentConditionConnectionInitializationSucceeded)
	}
}

func TestManagedEnvironmentConnectsAndDeploymentsUseIt(t *testing.T) {
	t.Parallel()
	h := startBackend(t)
	config := kubeconfig(cp.Config.Host, h.serviceAccountToken("deployer", true))
	env := h.newEnvironment("prod", v1.ManagedEnvironmentSecretType, map[string][]byte{"kubeconfig": config},
		func(e *v1.GitOpsDeploymentManagedEnvironment) { e.Spec.Namespaces = []string{"default"} })

	h.g.Eventually(h.connection(env), eventually, poll).Should(And(
		HaveField("Status", metav1.ConditionTrue), HaveField("Reason", string(v1.ManagedEnvironmentReasonSucceeded))))
	tenant := h.tenantRow()
	mapping, err := h.store.GetAPICRMapping(h.ctx, h.db, tenant.ID, db.APIResourceManagedEnvironment, string(env.UID))
	h.g.Expect(err).NotTo(HaveOccurred())
	envID := mapping.TargetID()
	creds, err := h.store.GetManagedEnvironmentCredentials(h.ctx, h.db, tenant.ID, envID)
	h.g.Expect(err).NotTo(HaveOccurred())
	h.g.Expect(string(creds.Kubeconfig)).To(Equal(string(config)))
	h.g.Expect(creds.Host).To(Equal(cp.Config.Host))
	h.g.Expect(creds.Namespaces).To(Equal([]string{"default"}))
	h.g.Expect(h.operations(db.OperationResourceManagedEnvironment, envID)).To(HaveLen(1))

	// A deployment to the environment targets its cluster Secret.
	depl := h.newDeployment("remote-app", v1.GitOpsDeploymentSpecTypeAutomated, func(d *v1.GitOpsDeployment) {
		d.Spec.Destination = v1.ApplicationDestination{Environment: "prod", Namespace: "default"}
	})
	app := h.application(depl.UID)
	h.g.Expect(app.ManagedEnvironmentID).To(Equal(envID))
	h.g.Expect(app.Spec.Destination.Name).To(Equal(argocd.ClusterSecretName(envID)))
	h.g.Expect(app.Spec.Destination.Namespace).To(Equal("default"))

	// Deleting the environment removes its row and leaves the deployment with a clear error.
	h.g.Expect(cp.Client.Delete(h.ctx, env)).To(Succeed())
	h.g.Eventually(func() error {
		_, err := h.store.GetManagedEnvironmentCredentials(h.ctx, h.db, tenant.ID, envID)
		return err
	}, eventually, poll).Should(MatchError(db.ErrNotFound))
	h.g.Expect(h.operations(db.OperationResourceManagedEnvironment, envID)).To(HaveLen(2))
	h.g.Eventually(func() *v1.GitOpsDeploymentCondition {
		return findCondition(h.get(depl).Status.Conditions, v1.GitOpsDeploymentConditionErrorOccurred)
	}, eventually, poll).Should(HaveField("Message", ContainSubstring(`"prod"`)))
}

func TestManagedEnvironmentProblemsAreReported(t *testing.T) {
	t.Parallel()
	h := startBackend(t)
	good := kubeconfig(cp.Config.Host, h.serviceAccountToken("admin", true))
	cases := []struct {
		name       string
		secretType corev1.SecretType
		data       map[string][]byte
		mutate     func(*v1.GitOpsDeploymentManagedEnvironment)
		reason     v1.ManagedEnvironmentConditionReason
		message    string
	}{
		{name: "wrong-type", secretType: corev1.SecretTypeOpaque, data: map[string][]byte{"kubeconfig": good},
			reason: v1.ManagedEnvironmentReasonInvalidSecretType, message: "must be of type"},
		{name: "no-key", secretType: v1.ManagedEnvironmentSecretType, data: map[string][]byte{"config": good},
			reason: v1.ManagedEnvironmentReasonMissingKubeConfigField, message: "no 'kubeconfig' key"},
		{name: "malformed", secretType: v1.ManagedEnvironmentSecretType, data: map[string][]byte{"kubeconfig": []byte("clusters: [: not yaml token-abc")},
			reason: v1.ManagedEnvironmentReasonUnableToParseKubeconfigData, message: "not a valid kubeconfig"},
		{name: "query", secretType: v1.ManagedEnvironmentSecretType, data: map[string][]byte{"kubeconfig": good},
			mutate: func(e *v1.GitOpsDeploymentManagedEnvironment) { e.Spec.APIURL += "?x=1" },
			reason: v1.ManagedEnvironmentReasonUnsupportedAPIURL, message: "must not contain a query"},
		{name: "other-url", secretType: v1.ManagedEnvironmentSecretType, data: map[string][]byte{"kubeconfig": good},
			mutate: func(e *v1.GitOpsDeploymentManagedEnvironment) {
				e.Spec.APIURL = "https://api.elsewhere.example.com:6443"
			},
			reason: v1.ManagedEnvironmentReasonUnableToLocateContext, message: "no context whose cluster's server is"},
		{name: "bad-token", secretType: v1.ManagedEnvironmentSecretType, data: map[string][]byte{"kubeconfig": kubeconfig(cp.Config.Host, "not-a-token")},
			reason: v1.ManagedEnvironmentReasonUnableToValidateClusterCredentials, message: "401 Unauthorized"},
		{name: "no-rbac", secretType: v1.ManagedEnvironmentSecretType, data: map[string][]byte{"kubeconfig": kubeconfig(cp.Config.Host, h.serviceAccountToken("nobody", false))},
			reason: v1.ManagedEnvironmentReasonUnableToValidateClusterCredentials, message: "may not list namespaces (403 Forbidden)"},
		{name: "second-namespace-missing", secretType: v1.ManagedEnvironmentSecretType, data: map[string][]byte{"kubeconfig": good},
			mutate: func(e *v1.GitOpsDeploymentManagedEnvironment) {
				e.Spec.Namespaces = []string{h.tenant, "no-such-namespace"}
			},
			reason: v1.ManagedEnvironmentReasonUnableToValidateClusterCredentials, message: `namespace "no-such-namespace" of spec.namespaces does not exist`},
		{name: "no-ca", secretType: v1.ManagedEnvironmentSecretType, data: map[string][]byte{"kubeconfig": withoutCA(good)},
			reason: v1.ManagedEnvironmentReasonUnableToValidateClusterCredentials, message: "signed by an unknown authority"},
		{name: "bad-namespaces", secretType: v1.ManagedEnvironmentSecretType, data: map[string][]byte{"kubeconfig": good},
			mutate: func(e *v1.GitOpsDeploymentManagedEnvironment) { e.Spec.Namespaces = []string{"Not_A_Namespace"} },
			reason: v1.ManagedEnvironmentReasonInvalidNamespaceList, message: "not a valid namespace name"},
	}
	for _, tc := range cases {
		mutate := tc.mutate
		if mutate == nil {
			mutate = func(*v1.GitOpsDeploymentManagedEnvironment) {}
		}
		env := h.newEnvironment(tc.name, tc.secretType, tc.data, mutate)
		h.g.Eventually(h.connection(env), eventually, poll).Should(And(
			HaveField("Status", metav1.ConditionFalse),
			HaveField("Reason", string(tc.reason)),
			HaveField("Message", ContainSubstring(tc.message)),
		), tc.name)
		cond := h.connection(env)()
		h.g.Expect(strings.Contains(cond.Message, "token-abc")).To(BeFalse(), "no credential in the message")
	}
	tenant := h.tenantRowOrEmpty()
	mappings, err := h.store.ListAPICRMappings(h.ctx, h.db, tenant, db.APIResourceManagedEnvironment)
	h.g.Expect(err).NotTo(HaveOccurred())
	h.g.Expect(mappings).To(BeEmpty(), "nothing is stored for environments that do not connect")

	// A missing Secret, then fixed: the environment connects.
	env := &v1.GitOpsDeploymentManagedEnvironment{
		ObjectMeta: metav1.ObjectMeta{Name: "later", Namespace: h.tenant},
		Spec:       v1.GitOpsDeploymentManagedEnvironmentSpec{APIURL: cp.Config.Host, ClusterCredentialsSecret: "later-secret"},
	}
	h.g.Expect(cp.Client.Create(h.ctx, env)).To(Succeed())
	h.g.Eventually(h.connection(env), eventually, poll).Should(HaveField("Message", ContainSubstring(`Secret "later-secret" (spec.credentialsSecret) does not exist`)))
	h.g.Expect(cp.Client.Create(h.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "later-secret", Namespace: h.tenant},
		Type: v1.ManagedEnvironmentSecretType, Data: map[string][]byte{"kubeconfig": good}})).To(Succeed())
	h.g.Eventually(h.connection(env), eventually, poll).Should(HaveField("Status", metav1.ConditionTrue))
}

// namespacedKindsBut lists every namespaced resource of the test cluster that can be
// listed, except those named in but.
func namespacedKindsBut(h *harness, but ...string) []rbacv1.PolicyRule {
	h.t.Helper()
	cs, err := kubernetes.NewForConfig(cp.Config)
	h.g.Expect(err).NotTo(HaveOccurred())
	lists, err := cs.Discovery().ServerPreferredNamespacedResources()
	h.g.Expect(err).NotTo(HaveOccurred())
	var rules []rbacv1.PolicyRule
	for _, list := range lists {
		group, _, found := strings.Cut(list.GroupVersion, "/")
		if !found {
			group = ""
		}
		for _, r := range list.APIResources {
			if !strings.Contains(r.Name, "/") && !slices.Contains(but, r.Name) {
				rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{r.Name}, Verbs: []string{"*"}})
			}
		}
	}
	return rules
}

// A token that may do everything in its namespace but list one kind "connects" to a cluster
// where Argo CD then cannot deploy (its cluster cache lists every kind): the check names
// the kind, and the environment connects once the token may list it.
func TestManagedEnvironmentNamesTheKindsItsTokenMayNotWatch(t *testing.T) {
	t.Parallel()
	h := startBackend(t)
	target := cp.NewNamespace(h.t, "target-")
	rules := append(namespacedKindsBut(h, "podtemplates"),
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get"}})
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "deployer", Namespace: target}, Rules: rules}
	h.g.Expect(cp.Client.Create(h.ctx, role)).To(Succeed())
	sa, token := h.serviceAccount("deployer", false)
	h.g.Expect(cp.Client.Create(h.ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "deployer", Namespace: target},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "deployer"},
		Subjects:   []rbacv1.Subject{sa},
	})).To(Succeed())
	env := h.newEnvironment("namespace-admin", v1.ManagedEnvironmentSecretType, map[string][]byte{"kubeconfig": kubeconfig(cp.Config.Host, token)},
		func(e *v1.GitOpsDeploymentManagedEnvironment) { e.Spec.Namespaces = []string{target} })

	h.g.Eventually(h.connection(env), eventually, poll).Should(And(
		HaveField("Status", metav1.ConditionFalse),
		HaveField("Reason", string(v1.ManagedEnvironmentReasonUnableToValidateClusterCredentials)),
		HaveField("Message", ContainSubstring(`may not list and watch podtemplates in namespace %q`, target)),
	))
	h.g.Expect(h.connection(env)().Message).NotTo(ContainSubstring("configmaps"), "only what is missing is named")

	// Granted, and the Secret touched: it connects.
	role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"podtemplates"}, Verbs: []string{"list", "watch"}})
	h.g.Expect(cp.Client.Update(h.ctx, role)).To(Succeed())
	secret := &corev1.Secret{}
	h.g.Expect(cp.Client.Get(h.ctx, client.ObjectKey{Namespace: h.tenant, Name: env.Spec.ClusterCredentialsSecret}, secret)).To(Succeed())
	secret.Labels = map[string]string{"touched": "yes"}
	h.g.Expect(cp.Client.Update(h.ctx, secret)).To(Succeed())
	h.g.Eventually(h.connection(env), eventually, poll).Should(HaveField("Status", metav1.ConditionTrue))
}

// withoutCA is kubeconfig without its clusters' certificate authorities.
func withoutCA(kubeconfig []byte) []byte {
	return editKubeconfig(kubeconfig, func(c *clientcmdapi.Cluster) { c.CertificateAuthorityData = nil })
}

func editKubeconfig(kubeconfig []byte, edit func(*clientcmdapi.Cluster)) []byte {
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		panic(err)
	}
	for _, c := range cfg.Clusters {
		edit(c)
	}
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		panic(err)
	}
	return data
}
