package e2e

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	. "github.com/gitops-service/gitops-service/tests-e2e/framework"
)

var _ = Describe("An AppStudio SnapshotEnvironmentBinding", func() {
	It("deploys every component of the snapshot to the environment and reports each", func(ctx SpecContext) {
		ns := tenant(ctx, "appstudio")
		url, sha := repository(ns, map[string]string{
			"components/api/overlays/dev/configmap.yaml": ConfigMap("api", "component", "api"),
			"components/web/overlays/dev/configmap.yaml": ConfigMap("web", "component", "web"),
		}, nil)

		Expect(f.Client.Create(ctx, &appstudio.Environment{
			ObjectMeta: metav1.ObjectMeta{Name: "dev", Namespace: ns},
			Spec:       appstudio.EnvironmentSpec{DisplayName: "Development", DeploymentStrategy: appstudio.DeploymentStrategyManual},
		})).To(Succeed())
		Expect(f.Client.Create(ctx, &appstudio.Snapshot{
			ObjectMeta: metav1.ObjectMeta{Name: "snap-1", Namespace: ns},
			Spec: appstudio.SnapshotSpec{Application: "shop", Components: []appstudio.SnapshotComponent{
				{Name: "api", ContainerImage: "quay.io/example/api@sha256:0001"},
				{Name: "web", ContainerImage: "quay.io/example/web@sha256:0002"},
			}},
		})).To(Succeed())
		binding := &appstudio.SnapshotEnvironmentBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "shop-dev", Namespace: ns},
			Spec: appstudio.SnapshotEnvironmentBindingSpec{Application: "shop", Environment: "dev", Snapshot: "snap-1",
				Components: []appstudio.BindingComponent{{Name: "api"}, {Name: "web"}}},
		}
		Expect(f.Client.Create(ctx, binding)).To(Succeed())

		By("the GitOps repository service reporting where each component lives")
		update(ctx, binding, true, func(b *appstudio.SnapshotEnvironmentBinding) {
			b.Status.Components = []appstudio.BindingComponentStatus{
				{Name: "api", GitOpsRepository: appstudio.BindingComponentGitOpsRepository{URL: url, Branch: "main", Path: "components/api/overlays/dev"}},
				{Name: "web", GitOpsRepository: appstudio.BindingComponentGitOpsRepository{URL: url, Branch: "main", Path: "components/web/overlays/dev"}},
			}
		})

		for _, component := range []string{"api", "web"} {
			Eventually(ConfigMapData(ctx, f.Client, ns, component)).Should(HaveKeyWithValue("component", component))
		}
		Eventually(Object(ctx, f.Client, binding)).Should(And(
			HaveField("Status.GitOpsDeployments", ConsistOf(
				And(HaveField("ComponentName", "api"), HaveField("SyncStatus", appstudio.DeploymentSyncStatus(v1.SyncStatusCodeSynced)),
					HaveField("Health", appstudio.DeploymentHealthStatus(v1.HealthStatusCodeHealthy)), HaveField("CommitID", sha)),
				And(HaveField("ComponentName", "web"), HaveField("SyncStatus", appstudio.DeploymentSyncStatus(v1.SyncStatusCodeSynced)),
					HaveField("Health", appstudio.DeploymentHealthStatus(v1.HealthStatusCodeHealthy)), HaveField("CommitID", sha)),
			)),
			HaveField("Status.ComponentDeploymentConditions", ContainElement(And(
				HaveField("Type", appstudio.ComponentDeploymentConditionAllComponentsDeployed),
				HaveField("Status", metav1.ConditionTrue)))),
		))

		By("a PromotionRun of the next snapshot to the environment")
		Expect(f.Client.Create(ctx, &appstudio.Snapshot{
			ObjectMeta: metav1.ObjectMeta{Name: "snap-2", Namespace: ns},
			Spec: appstudio.SnapshotSpec{Application: "shop", Components: []appstudio.SnapshotComponent{
				{Name: "api", ContainerImage: "quay.io/example/api@sha256:0011"},
				{Name: "web", ContainerImage: "quay.io/example/web@sha256:0012"},
			}},
		})).To(Succeed())
		// The GitOps repository service renders the new snapshot into the repository.
		commit(ns, map[string]string{
			"components/api/overlays/dev/configmap.yaml": ConfigMap("api", "component", "api-2"),
			"components/web/overlays/dev/configmap.yaml": ConfigMap("web", "component", "web-2"),
		})
		promotion := &appstudio.PromotionRun{
			ObjectMeta: metav1.ObjectMeta{Name: "promote-snap-2", Namespace: ns},
			Spec: appstudio.PromotionRunSpec{Snapshot: "snap-2", Application: "shop",
				ManualPromotion: &appstudio.ManualPromotionConfiguration{TargetEnvironment: "dev"}},
		}
		Expect(f.Client.Create(ctx, promotion)).To(Succeed())
		Eventually(Object(ctx, f.Client, binding)).Should(HaveField("Spec.Snapshot", "snap-2"))
		Eventually(Object(ctx, f.Client, promotion)).Should(And(
			HaveField("Status.State", appstudio.PromotionRunStateComplete),
			HaveField("Status.CompletionResult", appstudio.PromotionRunCompleteResultSuccess)))
		for _, component := range []string{"api", "web"} {
			Eventually(ConfigMapData(ctx, f.Client, ns, component)).Should(HaveKeyWithValue("component", component+"-2"))
		}

		By("a component removed from the binding: its GitOpsDeployment and resources go")
		update(ctx, binding, false, func(b *appstudio.SnapshotEnvironmentBinding) { b.Spec.Components = b.Spec.Components[:1] })
		update(ctx, binding, true, func(b *appstudio.SnapshotEnvironmentBinding) { b.Status.Components = b.Status.Components[:1] })
		Eventually(func() ([]string, error) {
			var list v1.GitOpsDeploymentList
			err := f.Client.List(ctx, &list, client.InNamespace(ns))
			var names []string
			for _, d := range list.Items {
				names = append(names, d.Name)
			}
			return names, err
		}).Should(ConsistOf(ContainSubstring("api")))
	})
})
