package e2e

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	. "github.com/gitops-service/gitops-service/tests-e2e/framework"
)

// What a tenant commits is applied as the tenant's deployer (a ServiceAccount bound to
// `admin` in its namespace), not as Argo CD: Kubernetes refuses for the service what it
// would refuse the tenant.
var _ = Describe("A tenant's repository", func() {
	It("cannot raise the ResourceQuota the platform set on its namespace", func(ctx SpecContext) {
		ns := tenant(ctx, "quota")
		quota := &corev1.ResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Name: "tenant-quota", Namespace: ns},
			Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"count/configmaps": resource.MustParse("50")}},
		}
		Expect(f.Client.Create(ctx, quota)).To(Succeed())
		url, _ := repository(ns, map[string]string{
			"app/configmap.yaml": ConfigMap("own", "fine", "yes"),
			"app/quota.yaml": "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: tenant-quota\n" +
				"spec:\n  hard:\n    count/configmaps: \"5000\"\n",
		}, nil)
		depl := gitopsDeployment(ns, "raise-quota", url, "app", v1.GitOpsDeploymentSpecTypeAutomated)
		Expect(f.Client.Create(ctx, depl)).To(Succeed())

		Eventually(Object(ctx, f.Client, depl)).Should(refusedToTheDeployer())
		Expect(f.Client.Get(ctx, client.ObjectKeyFromObject(quota), quota)).To(Succeed())
		Expect(quota.Spec.Hard).To(HaveKeyWithValue(corev1.ResourceName("count/configmaps"), resource.MustParse("50")))
		// What the tenant may deploy still arrives.
		Eventually(ConfigMapData(ctx, f.Client, ns, "own")).Should(HaveKeyWithValue("fine", "yes"))
	})

	It("cannot bind a ServiceAccount of its namespace to cluster-admin", func(ctx SpecContext) {
		ns := tenant(ctx, "escalate")
		url, _ := repository(ns, map[string]string{
			"app/binding.yaml": "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: escalate\n" +
				"roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: cluster-admin\n" +
				"subjects:\n  - kind: ServiceAccount\n    name: default\n    namespace: " + ns + "\n",
		}, nil)
		depl := gitopsDeployment(ns, "escalate", url, "app", v1.GitOpsDeploymentSpecTypeAutomated)
		Expect(f.Client.Create(ctx, depl)).To(Succeed())

		Eventually(Object(ctx, f.Client, depl)).Should(refusedToTheDeployer())
		Expect(Gone(ctx, f.Client, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "escalate", Namespace: ns}})()).To(BeTrue())
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:               "system:serviceaccount:" + ns + ":default",
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "kube-system", Verb: "list", Resource: "secrets"},
		}}
		Expect(f.Client.Create(ctx, review)).To(Succeed())
		Expect(review.Status.Allowed).To(BeFalse())
	})
})

// refusedToTheDeployer matches a GitOpsDeployment whose sync Kubernetes refused to the
// tenant's deployer.
func refusedToTheDeployer() OmegaMatcher {
	return HaveField("Status.OperationState", And(Not(BeNil()), HaveField("Message", And(
		ContainSubstring("forbidden"), ContainSubstring("gitops-service-deployer")))))
}
