package e2e

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/testenv"
	. "github.com/gitops-service/gitops-service/tests-e2e/framework"
	"github.com/gitops-service/gitops-service/tests-e2e/stack"
)

// decodeArgoCDApplication reads the Argo CD Application of depl as Argo CD wrote it and
// decodes it into the service's own copy of Argo CD's types, which must lose nothing it has
// a field for.
func decodeArgoCDApplication(ctx SpecContext, g Gomega, depl *v1.GitOpsDeployment) *argov1alpha1.Application {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(argov1alpha1.SchemeGroupVersion.WithKind("Application"))
	g.Expect(f.Client.Get(ctx, client.ObjectKey{Namespace: stack.EngineNamespace, Name: argocd.ApplicationName(depl.UID)}, u)).To(Succeed())
	app := &argov1alpha1.Application{}
	lost, err := testenv.DecodeLoss(u.Object, app)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(lost).To(BeEmpty(), "fields of Argo CD's Application the service's types lose")
	return app
}

var _ = Describe("A GitOpsDeployment", func() {
	var ns string
	BeforeEach(func(ctx SpecContext) { ns = tenant(ctx, "deploy") })

	It("deploys a path of a repository into its own namespace and reports status", func(ctx SpecContext) {
		url, sha := repository(ns, map[string]string{
			"app/configmap.yaml": ConfigMap("hello", "greeting", "hi"),
			"other/ignored.yaml": ConfigMap("ignored", "x", "y"),
		}, nil)
		depl := gitopsDeployment(ns, "hello", url, "app", v1.GitOpsDeploymentSpecTypeAutomated)
		Expect(f.Client.Create(ctx, depl)).To(Succeed())

		Eventually(Object(ctx, f.Client, depl)).Should(And(
			BeSyncedAndHealthy(), HaveRevision(sha), HaveResource("ConfigMap", "hello")))
		Expect(ConfigMapData(ctx, f.Client, ns, "hello")()).To(HaveKeyWithValue("greeting", "hi"))
		Expect(ConfigMapData(ctx, f.Client, ns, "ignored")()).To(BeAbsent())

		// The service's own copy of Argo CD's types reads what the real Argo CD wrote. The
		// GitOpsDeployment reports Synced as soon as the live state matches, which can be a
		// moment before Argo CD records its sync operation as finished.
		Eventually(func(g Gomega) {
			app := decodeArgoCDApplication(ctx, g, depl)
			g.Expect(app.Status.Sync.Status).To(Equal(argov1alpha1.SyncStatusCodeSynced))
			g.Expect(app.Status.Sync.Revision).To(Equal(sha))
			g.Expect(app.Status.Sync.ComparedTo.Source.Path).To(Equal("app"))
			g.Expect(app.Status.Health.Status).To(Equal(argov1alpha1.HealthStatusHealthy))
			g.Expect(app.Status.Resources).To(ContainElement(And(
				HaveField("Kind", "ConfigMap"), HaveField("Name", "hello"), HaveField("Namespace", ns),
				HaveField("Status", argov1alpha1.SyncStatusCodeSynced))))
			g.Expect(app.Status.ReconciledAt).NotTo(BeNil())
			g.Expect(app.Status.OperationState).NotTo(BeNil())
			g.Expect(app.Status.OperationState.Phase).To(Equal(argov1alpha1.OperationSucceeded))
			g.Expect(app.Status.OperationState.SyncResult).NotTo(BeNil())
			g.Expect(app.Status.OperationState.SyncResult.Revision).To(Equal(sha))
			g.Expect(app.Status.OperationState.FinishedAt).NotTo(BeNil())
		}).Should(Succeed())
	})

	It("follows new commits, a new path and a pinned revision", func(ctx SpecContext) {
		url, first := repository(ns, map[string]string{"app/configmap.yaml": ConfigMap("hello", "greeting", "v1")}, nil)
		depl := gitopsDeployment(ns, "follow", url, "app", v1.GitOpsDeploymentSpecTypeAutomated)
		Expect(f.Client.Create(ctx, depl)).To(Succeed())
		Eventually(Object(ctx, f.Client, depl)).Should(And(BeSyncedAndHealthy(), HaveRevision(first)))

		By("a new commit on the branch")
		second := commit(ns, map[string]string{
			"app/configmap.yaml":   ConfigMap("hello", "greeting", "v2"),
			"other/configmap.yaml": ConfigMap("other", "greeting", "elsewhere"),
		})
		Eventually(ConfigMapData(ctx, f.Client, ns, "hello")).Should(HaveKeyWithValue("greeting", "v2"))
		Eventually(Object(ctx, f.Client, depl)).Should(And(BeSyncedAndHealthy(), HaveRevision(second)))

		By("a new path: the old path's resources are pruned")
		update(ctx, depl, false, func(d *v1.GitOpsDeployment) { d.Spec.Source.Path = "other" })
		Eventually(ConfigMapData(ctx, f.Client, ns, "other")).Should(HaveKeyWithValue("greeting", "elsewhere"))
		Eventually(ConfigMapData(ctx, f.Client, ns, "hello")).Should(BeAbsent())

		By("a pinned revision")
		update(ctx, depl, false, func(d *v1.GitOpsDeployment) { d.Spec.Source.Path, d.Spec.Source.TargetRevision = "app", first })
		Eventually(ConfigMapData(ctx, f.Client, ns, "hello")).Should(HaveKeyWithValue("greeting", "v1"))
		Eventually(Object(ctx, f.Client, depl)).Should(And(BeSyncedAndHealthy(), HaveRevision(first)))

		By("another repository")
		otherURL, otherSHA := repository(ns+"-moved", map[string]string{"app/configmap.yaml": ConfigMap("moved", "greeting", "moved")}, nil)
		update(ctx, depl, false, func(d *v1.GitOpsDeployment) { d.Spec.Source.RepoURL, d.Spec.Source.TargetRevision = otherURL, "" })
		Eventually(ConfigMapData(ctx, f.Client, ns, "moved")).Should(HaveKeyWithValue("greeting", "moved"))
		Eventually(ConfigMapData(ctx, f.Client, ns, "hello")).Should(BeAbsent())
		Eventually(Object(ctx, f.Client, depl)).Should(And(BeSyncedAndHealthy(), HaveRevision(otherSHA)))
	})

	It("accepts CreateNamespace=true for its own namespace", func(ctx SpecContext) {
		url, _ := repository(ns, map[string]string{"app/configmap.yaml": ConfigMap("hello", "greeting", "hi")}, nil)
		depl := gitopsDeployment(ns, "create-ns", url, "app", v1.GitOpsDeploymentSpecTypeAutomated)
		depl.Spec.SyncPolicy = &v1.SyncPolicy{SyncOptions: []v1.SyncOption{v1.SyncOptionCreateNamespaceTrue}}
		Expect(f.Client.Create(ctx, depl)).To(Succeed())
		Eventually(Object(ctx, f.Client, depl)).Should(BeSyncedAndHealthy())
		Expect(ConfigMapData(ctx, f.Client, ns, "hello")()).To(HaveKeyWithValue("greeting", "hi"))
	})

	It("cannot deploy cluster-scoped resources to the service's own cluster", func(ctx SpecContext) {
		name := "escape-" + ns
		url, _ := repository(ns, map[string]string{
			"app/configmap.yaml":   ConfigMap("hello", "greeting", "hi"),
			"app/clusterrole.yaml": clusterRole(name),
		}, nil)
		depl := gitopsDeployment(ns, "escape", url, "app", v1.GitOpsDeploymentSpecTypeAutomated)
		Expect(f.Client.Create(ctx, depl)).To(Succeed())
		// Argo CD reaches the tenant's namespace through the tenant's own entry, which manages
		// no cluster-scoped kind: the comparison fails and names the resource.
		Eventually(Object(ctx, f.Client, depl)).Should(And(
			Not(HaveField("Status.Sync.Status", v1.SyncStatusCodeSynced)),
			HaveField("Status.Conditions", ContainElement(And(
				HaveField("Type", v1.GitOpsDeploymentConditionComparisonError),
				HaveField("Message", ContainSubstring("ClusterRole")))))))
		Consistently(func() error {
			return f.Client.Get(ctx, client.ObjectKey{Name: name}, &rbacv1.ClusterRole{})
		}, "5s").Should(Satisfy(apierrors.IsNotFound))
	})

	It("with the resources finalizer, prunes what it deployed before it goes", func(ctx SpecContext) {
		url, _ := repository(ns, map[string]string{"app/configmap.yaml": ConfigMap("hello", "greeting", "hi")}, nil)
		depl := gitopsDeployment(ns, "pruned", url, "app", v1.GitOpsDeploymentSpecTypeAutomated)
		depl.Finalizers = []string{v1.FinalizerResourcesFinalizer}
		Expect(f.Client.Create(ctx, depl)).To(Succeed())
		Eventually(Object(ctx, f.Client, depl)).Should(BeSyncedAndHealthy())
		app := &argov1alpha1.Application{}
		app.Name, app.Namespace = argocd.ApplicationName(depl.UID), stack.EngineNamespace

		Expect(f.Client.Delete(ctx, depl)).To(Succeed())
		Eventually(ConfigMapData(ctx, f.Client, ns, "hello")).Should(BeAbsent())
		Eventually(Gone(ctx, f.Client, depl)).Should(BeTrue())
		Eventually(Gone(ctx, f.Client, app)).Should(BeTrue())
	})

	It("without the finalizer, goes at once and its Argo CD Application follows", func(ctx SpecContext) {
		url, _ := repository(ns, map[string]string{"app/configmap.yaml": ConfigMap("hello", "greeting", "hi")}, nil)
		depl := gitopsDeployment(ns, "plain", url, "app", v1.GitOpsDeploymentSpecTypeAutomated)
		Expect(f.Client.Create(ctx, depl)).To(Succeed())
		Eventually(Object(ctx, f.Client, depl)).Should(BeSyncedAndHealthy())
		app := &argov1alpha1.Application{}
		app.Name, app.Namespace = argocd.ApplicationName(depl.UID), stack.EngineNamespace
		Expect(f.Client.Get(ctx, client.ObjectKeyFromObject(app), app)).To(Succeed())

		Expect(f.Client.Delete(ctx, depl)).To(Succeed())
		Eventually(Gone(ctx, f.Client, depl)).Should(BeTrue())
		Eventually(Gone(ctx, f.Client, app)).Should(BeTrue())
	})

	It("reports a ComparisonError for a path that does not exist, and recovers when fixed", func(ctx SpecContext) {
		url, _ := repository(ns, map[string]string{"app/configmap.yaml": ConfigMap("hello", "greeting", "hi")}, nil)
		depl := gitopsDeployment(ns, "typo", url, "ap", v1.GitOpsDeploymentSpecTypeAutomated)
		Expect(f.Client.Create(ctx, depl)).To(Succeed())
		Eventually(Object(ctx, f.Client, depl)).Should(HaveCondition(v1.GitOpsDeploymentConditionComparisonError, v1.GitOpsConditionStatusTrue))
		Expect(ConfigMapData(ctx, f.Client, ns, "hello")()).To(BeAbsent())

		update(ctx, depl, false, func(d *v1.GitOpsDeployment) { d.Spec.Source.Path = "app" })
		Eventually(Object(ctx, f.Client, depl)).Should(And(BeSyncedAndHealthy(),
			Not(HaveCondition(v1.GitOpsDeploymentConditionComparisonError, v1.GitOpsConditionStatusTrue))))
		Expect(ConfigMapData(ctx, f.Client, ns, "hello")()).To(HaveKeyWithValue("greeting", "hi"))
	})
})
