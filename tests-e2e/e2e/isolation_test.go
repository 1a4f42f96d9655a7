package e2e

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	. "github.com/gitops-service/gitops-service/tests-e2e/framework"
	"github.com/gitops-service/gitops-service/tests-e2e/gitserver"
)

var _ = Describe("Tenants", func() {
	It("read a private repository with their own GitOpsDeploymentRepositoryCredential, and only they do", func(ctx SpecContext) {
		owner, other := tenant(ctx, "owner"), tenant(ctx, "other")
		creds := &gitserver.Credentials{Username: "deployer", Password: "s3cret-token"}
		url, sha := repository(owner, map[string]string{"app/configmap.yaml": ConfigMap("private", "greeting", "secret")}, creds)

		Expect(f.Client.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "git-creds", Namespace: owner},
			Type:       v1.RepositoryCredentialSecretType,
			StringData: map[string]string{
				v1.RepositoryCredentialSecretUsernameKey: creds.Username,
				v1.RepositoryCredentialSecretPasswordKey: creds.Password,
			},
		})).To(Succeed())
		credential := &v1.GitOpsDeploymentRepositoryCredential{
			ObjectMeta: metav1.ObjectMeta{Name: "private", Namespace: owner},
			Spec:       v1.GitOpsDeploymentRepositoryCredentialSpec{Repository: url, Secret: "git-creds"},
		}
		Expect(f.Client.Create(ctx, credential)).To(Succeed())
		Eventually(Object(ctx, f.Client, credential)).Should(HaveField("Status.Conditions", ContainElement(And(
			HaveField("Type", v1.RepositoryCredentialConditionValidRepositoryCredential),
			HaveField("Status", metav1.ConditionTrue)))))

		depl := gitopsDeployment(owner, "private", url, "app", v1.GitOpsDeploymentSpecTypeAutomated)
		Expect(f.Client.Create(ctx, depl)).To(Succeed())
		Eventually(Object(ctx, f.Client, depl)).Should(And(BeSyncedAndHealthy(), HaveRevision(sha)))
		Expect(ConfigMapData(ctx, f.Client, owner, "private")()).To(HaveKeyWithValue("greeting", "secret"))

		By("another tenant pointing at the same repository without credentials of its own")
		theirs := gitopsDeployment(other, "private", url, "app", v1.GitOpsDeploymentSpecTypeAutomated)
		Expect(f.Client.Create(ctx, theirs)).To(Succeed())
		Eventually(Object(ctx, f.Client, theirs)).Should(HaveCondition(v1.GitOpsDeploymentConditionComparisonError, v1.GitOpsConditionStatusTrue))
		Consistently(ConfigMapData(ctx, f.Client, other, "private")).Should(BeAbsent())
	})

	It("cannot deploy into another tenant's namespace", func(ctx SpecContext) {
		victim, attacker := tenant(ctx, "victim"), tenant(ctx, "attacker")
		intrusion := ConfigMap("intrusion", "owned", "yes")
		intrusion = intrusion[:len("apiVersion: v1\nkind: ConfigMap\nmetadata:\n")] + "  namespace: " + victim + "\n" +
			intrusion[len("apiVersion: v1\nkind: ConfigMap\nmetadata:\n"):]
		url, _ := repository(attacker, map[string]string{
			"app/intrusion.yaml": intrusion,
			"app/own.yaml":       ConfigMap("own", "fine", "yes"),
		}, nil)
		depl := gitopsDeployment(attacker, "intrude", url, "app", v1.GitOpsDeploymentSpecTypeAutomated)
		Expect(f.Client.Create(ctx, depl)).To(Succeed())

		// Argo CD refuses the whole sync: the resource's namespace is outside the tenant's project.
		Eventually(Object(ctx, f.Client, depl)).ShouldNot(HaveField("Status.Sync.Status", BeEmpty()))
		Consistently(ConfigMapData(ctx, f.Client, victim, "intrusion"), "15s").Should(BeAbsent())
		Expect(f.Client.Get(ctx, client.ObjectKeyFromObject(depl), depl)).To(Succeed())
		Expect(depl.Status.Sync.Status).NotTo(Equal(v1.SyncStatusCodeSynced))
	})
})

var _ = Describe("Managed environments of two tenants on one cluster", func() {
	It("reach only the namespaces their credentials give them", func(ctx SpecContext) {
		remote, _, err := StartRemoteCluster(ctx)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(remote.Stop)
		for _, ns := range []string{"ns-a", "ns-b"} {
			Expect(remote.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		}
		kubeconfigA, err := NamespaceAdminKubeconfig(ctx, remote, "ns-a", "sa-a", "ns-a")
		Expect(err).NotTo(HaveOccurred())
		kubeconfigB, err := NamespaceAdminKubeconfig(ctx, remote, "ns-b", "sa-b", "ns-b")
		Expect(err).NotTo(HaveOccurred())

		tenantA, tenantB := tenant(ctx, "iso-a"), tenant(ctx, "iso-b")
		envA := isolationEnvironment(ctx, tenantA, "cluster", remote.Config.Host, kubeconfigA, "ns-a")
		envB := isolationEnvironment(ctx, tenantB, "cluster", remote.Config.Host, kubeconfigB, "ns-b")
		for _, env := range []*v1.GitOpsDeploymentManagedEnvironment{envA, envB} {
			Eventually(Object(ctx, f.Client, env)).Should(HaveField("Status.Conditions", ContainElement(And(
				HaveField("Type", v1.ManagedEnvironmentConditionConnectionInitializationSucceeded),
				HaveField("Status", metav1.ConditionTrue)))))
		}

		By("a cluster-wide environment with tenant A's namespace-scoped credentials is refused")
		wide := isolationEnvironment(ctx, tenantA, "cluster-wide", remote.Config.Host, kubeconfigA)
		Eventually(Object(ctx, f.Client, wide)).Should(HaveField("Status.Conditions", ContainElement(And(
			HaveField("Type", v1.ManagedEnvironmentConditionConnectionInitializationSucceeded),
			HaveField("Status", metav1.ConditionFalse),
			HaveField("Reason", string(v1.ManagedEnvironmentReasonUnableToValidateClusterCredentials)),
			HaveField("Message", ContainSubstring("may not list namespaces")),
		))))

		By("tenant A deploys to its own namespace")
		urlA, shaA := repository(tenantA, map[string]string{
			"own/configmap.yaml":     ConfigMap("from-a", "tenant", "a"),
			"intrude/configmap.yaml": ConfigMap("intrusion-from-a", "tenant", "a"),
		}, nil)
		ownA := gitopsDeployment(tenantA, "own", urlA, "own", v1.GitOpsDeploymentSpecTypeAutomated)
		ownA.Spec.Destination = v1.ApplicationDestination{Environment: "cluster", Namespace: "ns-a"}
		Expect(f.Client.Create(ctx, ownA)).To(Succeed())
		Eventually(Object(ctx, f.Client, ownA)).Should(And(BeSyncedAndHealthy(), HaveRevision(shaA)))
		Expect(ConfigMapData(ctx, remote.Client, "ns-a", "from-a")()).To(HaveKeyWithValue("tenant", "a"))

		By("tenant A's deployment to tenant B's namespace through its own environment")
		intrude := gitopsDeployment(tenantA, "intrude", urlA, "intrude", v1.GitOpsDeploymentSpecTypeAutomated)
		intrude.Spec.Destination = v1.ApplicationDestination{Environment: "cluster", Namespace: "ns-b"}
		Expect(f.Client.Create(ctx, intrude)).To(Succeed())
		// Argo CD refuses to compare it: ns-b is not among the namespaces of tenant A's cluster
		// Secret. Nothing reaches ns-b, and the status says why.
		Eventually(Object(ctx, f.Client, intrude)).Should(And(
			HaveCondition(v1.GitOpsDeploymentConditionComparisonError, v1.GitOpsConditionStatusTrue),
			HaveField("Status.Conditions", ContainElement(HaveField("Message", And(
				ContainSubstring(`namespace "ns-b"`), ContainSubstring("is not managed"))))),
			HaveField("Status.Sync.Status", v1.SyncStatusCodeUnknown)))
		Consistently(func(g Gomega) {
			g.Expect(ConfigMapData(ctx, remote.Client, "ns-b", "intrusion-from-a")()).To(BeAbsent())
			g.Expect(f.Client.Get(ctx, client.ObjectKeyFromObject(intrude), intrude)).To(Succeed())
			g.Expect(intrude.Status.Sync.Status).NotTo(Equal(v1.SyncStatusCodeSynced))
		}, "20s").Should(Succeed())

		By("tenant A's environment naming ns-b too, which its credentials do not reach")
		// Every namespace of spec.namespaces is checked when connecting: this environment does
		// not connect, and a deployment through it deploys nothing.
		both := isolationEnvironment(ctx, tenantA, "both", remote.Config.Host, kubeconfigA, "ns-a", "ns-b")
		Eventually(Object(ctx, f.Client, both)).Should(HaveField("Status.Conditions", ContainElement(And(
			HaveField("Type", v1.ManagedEnvironmentConditionConnectionInitializationSucceeded),
			HaveField("Status", metav1.ConditionFalse),
			HaveField("Message", ContainSubstring(`may not get namespace "ns-b" (403 Forbidden)`))))))
		intrude2 := gitopsDeployment(tenantA, "intrude-rbac", urlA, "intrude", v1.GitOpsDeploymentSpecTypeAutomated)
		intrude2.Spec.Destination = v1.ApplicationDestination{Environment: "both", Namespace: "ns-b"}
		Expect(f.Client.Create(ctx, intrude2)).To(Succeed())
		Eventually(Object(ctx, f.Client, intrude2)).Should(And(
			HaveCondition(v1.GitOpsDeploymentConditionErrorOccurred, v1.GitOpsConditionStatusTrue),
			HaveField("Status.Conditions", ContainElement(HaveField("Message", ContainSubstring(`GitOpsDeploymentManagedEnvironment "both" is not connected`))))))
		Consistently(func(g Gomega) {
			g.Expect(ConfigMapData(ctx, remote.Client, "ns-b", "intrusion-from-a")()).To(BeAbsent())
			g.Expect(f.Client.Get(ctx, client.ObjectKeyFromObject(intrude2), intrude2)).To(Succeed())
			g.Expect(intrude2.Status.Sync.Status).NotTo(Equal(v1.SyncStatusCodeSynced))
		}, "10s").Should(Succeed())

		By("tenant B deploys to its own namespace")
		urlB, shaB := repository(tenantB, map[string]string{"own/configmap.yaml": ConfigMap("from-b", "tenant", "b")}, nil)
		ownB := gitopsDeployment(tenantB, "own", urlB, "own", v1.GitOpsDeploymentSpecTypeAutomated)
		ownB.Spec.Destination = v1.ApplicationDestination{Environment: "cluster", Namespace: "ns-b"}
		Expect(f.Client.Create(ctx, ownB)).To(Succeed())
		Eventually(Object(ctx, f.Client, ownB)).Should(And(BeSyncedAndHealthy(), HaveRevision(shaB)))
		Expect(ConfigMapData(ctx, remote.Client, "ns-b", "from-b")()).To(HaveKeyWithValue("tenant", "b"))
		Expect(ConfigMapData(ctx, remote.Client, "ns-b", "intrusion-from-a")()).To(BeAbsent())
		Expect(ConfigMapData(ctx, remote.Client, "ns-a", "from-b")()).To(BeAbsent())
	})
})

// isolationEnvironment creates a managed environment of namespace (the tenant) named name,
// with kubeconfig in a Secret, limited to namespaces (cluster-wide when none), and deletes
// it at the end of the spec, before the remote cluster stops.
func isolationEnvironment(ctx SpecContext, namespace, name, apiURL string, kubeconfig []byte, namespaces ...string) *v1.GitOpsDeploymentManagedEnvironment {
	GinkgoHelper()
	Expect(f.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-kubeconfig", Namespace: namespace},
		Type:       v1.ManagedEnvironmentSecretType,
		Data:       map[string][]byte{"kubeconfig": kubeconfig},
	})).To(Succeed())
	env := &v1.GitOpsDeploymentManagedEnvironment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: v1.GitOpsDeploymentManagedEnvironmentSpec{
			APIURL: apiURL, ClusterCredentialsSecret: name + "-kubeconfig", Namespaces: namespaces,
		},
	}
	Expect(f.Client.Create(ctx, env)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(f.Client.Delete(ctx, env))).To(Succeed()) })
	return env
}
