package e2e

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	. "github.com/gitops-service/gitops-service/tests-e2e/framework"
)

var _ = Describe("A manual GitOpsDeployment", func() {
	It("deploys nothing until a GitOpsDeploymentSyncRun syncs it to the revision it names", func(ctx SpecContext) {
		ns := tenant(ctx, "manual")
		url, first := repository(ns, map[string]string{"app/configmap.yaml": ConfigMap("hello", "greeting", "v1"),
			"app/old.yaml": ConfigMap("old", "greeting", "v1")}, nil)
		second := commit(ns, map[string]string{"app/configmap.yaml": ConfigMap("hello", "greeting", "v2"), "app/old.yaml": ""})
		depl := gitopsDeployment(ns, "manual", url, "app", v1.GitOpsDeploymentSpecTypeManual)
		Expect(f.Client.Create(ctx, depl)).To(Succeed())

		Eventually(Object(ctx, f.Client, depl)).Should(HaveField("Status.Sync.Status", v1.SyncStatusCodeOutOfSync))
		Consistently(ConfigMapData(ctx, f.Client, ns, "hello")).Should(BeAbsent())

		run := &v1.GitOpsDeploymentSyncRun{
			ObjectMeta: metav1.ObjectMeta{Name: "to-first", Namespace: ns},
			Spec:       v1.GitOpsDeploymentSyncRunSpec{GitopsDeploymentName: "manual", RevisionID: first},
		}
		Expect(f.Client.Create(ctx, run)).To(Succeed())
		Eventually(ConfigMapData(ctx, f.Client, ns, "hello")).Should(HaveKeyWithValue("greeting", "v1"))
		Eventually(Object(ctx, f.Client, run)).Should(HaveField("Status.Health", v1.HealthStatusCodeHealthy))

		By("a second run to the newer commit")
		run2 := &v1.GitOpsDeploymentSyncRun{
			ObjectMeta: metav1.ObjectMeta{Name: "to-second", Namespace: ns},
			Spec:       v1.GitOpsDeploymentSyncRunSpec{GitopsDeploymentName: "manual", RevisionID: second},
		}
		Expect(f.Client.Create(ctx, run2)).To(Succeed())
		Eventually(ConfigMapData(ctx, f.Client, ns, "hello")).Should(HaveKeyWithValue("greeting", "v2"))
		Eventually(Object(ctx, f.Client, run2)).Should(HaveField("Status.Conditions", ContainElement(And(
			HaveField("Type", v1.GitOpsDeploymentConditionType("Ready")), HaveField("Reason", v1.GitOpsDeploymentReasonType("SyncSucceeded"))))))

		By("a manual sync does not prune: the ConfigMap removed from Git stays, and the deployment is OutOfSync")
		Expect(ConfigMapData(ctx, f.Client, ns, "old")()).To(HaveKey("greeting"))
		Eventually(Object(ctx, f.Client, depl)).Should(HaveField("Status.Sync.Status", v1.SyncStatusCodeOutOfSync))

		By("each run keeps its own sync's result")
		Expect(Object(ctx, f.Client, run)()).To(HaveField("Status.Conditions", ContainElement(And(
			HaveField("Type", v1.GitOpsDeploymentConditionType("Ready")), HaveField("Reason", v1.GitOpsDeploymentReasonType("SyncSucceeded"))))))
	})
})
