package e2e

import (
	"os/exec"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/testenv"
	. "github.com/gitops-service/gitops-service/tests-e2e/framework"
)

var _ = Describe("Kubernetes status conventions", func() {
	var ns string
	BeforeEach(func(ctx SpecContext) { ns = tenant(ctx, "ready") })

	It("make kubectl wait --for=condition=Ready return once a GitOpsDeployment is deployed, and report a broken one", func(ctx SpecContext) {
		url, sha := repository(ns, map[string]string{"app/configmap.yaml": ConfigMap("hello", "greeting", "hi")}, nil)
		depl := gitopsDeployment(ns, "hello", url, "app", v1.GitOpsDeploymentSpecTypeAutomated)
		Expect(f.Client.Create(ctx, depl)).To(Succeed())

		Expect(kubectl(ctx, "wait", "--for=condition=Ready", "--timeout=90s", "-n", ns, "gitopsdeployment/hello")).To(ContainSubstring("condition met"))
		// Ready means deployed: when the wait returns, Argo CD has compared this generation
		// and the commit is live.
		Expect(Object(ctx, f.Client, depl)()).To(And(BeSyncedAndHealthy(), HaveRevision(sha),
			HaveField("Status.ObservedGeneration", depl.Generation)))
		Expect(ConfigMapData(ctx, f.Client, ns, "hello")()).To(HaveKeyWithValue("greeting", "hi"))

		By("a path that does not exist: Ready=False with Argo CD's reason, Stalled, within seconds")
		update(ctx, depl, false, func(d *v1.GitOpsDeployment) { d.Spec.Source.Path = "missing" })
		Expect(kubectl(ctx, "wait", "--for=condition=Stalled", "--timeout=30s", "-n", ns, "gitopsdeployment/hello")).To(ContainSubstring("condition met"))
		Expect(Object(ctx, f.Client, depl)()).To(And(
			HaveReady(v1.GitOpsConditionStatusFalse, "ComparisonError"),
			HaveField("Status.ObservedGeneration", depl.Generation)))
		// What was deployed stays deployed.
		Expect(ConfigMapData(ctx, f.Client, ns, "hello")()).To(HaveKeyWithValue("greeting", "hi"))

		By("the path fixed: Ready again")
		update(ctx, depl, false, func(d *v1.GitOpsDeployment) { d.Spec.Source.Path = "app" })
		Eventually(Object(ctx, f.Client, depl)).Should(And(HaveReady(v1.GitOpsConditionStatusTrue, "Deployed"),
			HaveField("Status.ObservedGeneration", depl.Generation)))
		Expect(kubectl(ctx, "get", "-n", ns, "gitopsdeployment/hello", "-o", "wide")).To(MatchRegexp(`hello\s+True\s+Synced\s+Healthy\s+` + sha[:7]))
	})
})

// kubectl runs kubectl as the stack's admin and returns its output.
func kubectl(ctx SpecContext, args ...string) (string, error) {
	dir, err := testenv.KubeBinDir()
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, filepath.Join(dir, "kubectl"), append([]string{"--kubeconfig", f.Stack.Kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
