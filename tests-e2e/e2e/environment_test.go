package e2e

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	. "github.com/gitops-service/gitops-service/tests-e2e/framework"
)

var _ = Describe("A GitOpsDeploymentManagedEnvironment", func() {
	It("lets a GitOpsDeployment deploy to a namespace of another cluster", func(ctx SpecContext) {
		remote, kubeconfig, err := StartRemoteCluster(ctx)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(remote.Stop)
		Expect(remote.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "prod"}})).To(Succeed())

		ns := tenant(ctx, "remote")
		Expect(f.Client.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "prod-cluster", Namespace: ns},
			Type:       v1.ManagedEnvironmentSecretType,
			Data:       map[string][]byte{"kubeconfig": kubeconfig},
		})).To(Succeed())
		env := &v1.GitOpsDeploymentManagedEnvironment{
			ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: ns},
			Spec: v1.GitOpsDeploymentManagedEnvironmentSpec{
				APIURL: remote.Config.Host, ClusterCredentialsSecret: "prod-cluster",
				Namespaces: []string{"prod"},
			},
		}
		Expect(f.Client.Create(ctx, env)).To(Succeed())
		// Runs before the remote cluster stops: Argo CD lets go of the cluster first.
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(f.Client.Delete(ctx, env))).To(Succeed()) })
		Eventually(Object(ctx, f.Client, env)).Should(HaveField("Status.Conditions", ContainElement(And(
			HaveField("Type", v1.ManagedEnvironmentConditionConnectionInitializationSucceeded),
			HaveField("Status", metav1.ConditionTrue)))))

		url, sha := repository(ns, map[string]string{"app/configmap.yaml": ConfigMap("remote", "cluster", "prod")}, nil)
		depl := gitopsDeployment(ns, "remote", url, "app", v1.GitOpsDeploymentSpecTypeAutomated)
		depl.Spec.Destination = v1.ApplicationDestination{Environment: "prod", Namespace: "prod"}
		Expect(f.Client.Create(ctx, depl)).To(Succeed())

		Eventually(Object(ctx, f.Client, depl)).Should(And(BeSyncedAndHealthy(), HaveRevision(sha)))
		Expect(ConfigMapData(ctx, remote.Client, "prod", "remote")()).To(HaveKeyWithValue("cluster", "prod"))
		Expect(ConfigMapData(ctx, f.Client, ns, "remote")()).To(BeAbsent())

	})

	It("lets a deployment to a cluster-wide environment create its namespace and cluster-scoped resources", func(ctx SpecContext) {
		remote, kubeconfig, err := StartRemoteCluster(ctx)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(remote.Stop)

		ns := tenant(ctx, "cluster-wide")
		Expect(f.Client.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "dev-cluster", Namespace: ns},
			Type:       v1.ManagedEnvironmentSecretType,
			Data:       map[string][]byte{"kubeconfig": kubeconfig},
		})).To(Succeed())
		env := &v1.GitOpsDeploymentManagedEnvironment{
			ObjectMeta: metav1.ObjectMeta{Name: "dev", Namespace: ns},
			Spec:       v1.GitOpsDeploymentManagedEnvironmentSpec{APIURL: remote.Config.Host, ClusterCredentialsSecret: "dev-cluster"},
		}
		Expect(f.Client.Create(ctx, env)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(f.Client.Delete(ctx, env))).To(Succeed()) })

		url, _ := repository(ns, map[string]string{
			"app/configmap.yaml":   ConfigMap("made", "by", "argo"),
			"app/clusterrole.yaml": clusterRole("reader-" + ns),
		}, nil)
		depl := gitopsDeployment(ns, "cluster-wide", url, "app", v1.GitOpsDeploymentSpecTypeAutomated)
		depl.Spec.Destination = v1.ApplicationDestination{Environment: "dev", Namespace: "not-there-yet"}
		depl.Spec.SyncPolicy = &v1.SyncPolicy{SyncOptions: []v1.SyncOption{v1.SyncOptionCreateNamespaceTrue}}
		Expect(f.Client.Create(ctx, depl)).To(Succeed())

		Eventually(Object(ctx, f.Client, depl)).Should(BeSyncedAndHealthy())
		Expect(ConfigMapData(ctx, remote.Client, "not-there-yet", "made")()).To(HaveKeyWithValue("by", "argo"))
		Expect(remote.Client.Get(ctx, client.ObjectKey{Name: "reader-" + ns}, &rbacv1.ClusterRole{})).To(Succeed())
	})
})

// clusterRole is the manifest of a ClusterRole that reads ConfigMaps.
func clusterRole(name string) string {
	return `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: ` + name + `
rules:
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["get", "list"]
`
}
