package webhook_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/testenv"
	"github.com/gitops-service/gitops-service/backend/internal/webhook"
)

var cp *testenv.ControlPlane

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

// run starts an API server that calls the webhook configuration of manifests/webhook,
// served by a manager in this process.
func run(m *testing.M) int {
	root, err := testenv.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	install := &envtest.WebhookInstallOptions{Paths: []string{filepath.Join(root, "manifests", "webhook")}}
	if cp, err = testenv.StartControlPlane(testenv.Options{Webhooks: install}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = cp.Stop() }()
	opts := cp.Env.WebhookInstallOptions
	mgr, err := ctrl.NewManager(cp.Config, ctrl.Options{
		Scheme:                 cp.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer: crwebhook.NewServer(crwebhook.Options{
			Host: opts.LocalServingHost, Port: opts.LocalServingPort, CertDir: opts.LocalServingCertDir,
		}),
	})
	if err == nil {
		err = webhook.Setup(mgr)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = mgr.Start(ctx) }()
	return m.Run()
}

func TestWebhookRejectsANamespaceOutsideTheTenantWithoutEnvironment(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "tenant-"}}
	g.Expect(cp.Client.Create(ctx, ns)).To(Succeed())
	deployment := func(name, namespace, env, path string) *v1.GitOpsDeployment {
		return &v1.GitOpsDeployment{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns.Name},
			Spec: v1.GitOpsDeploymentSpec{
				Source:      v1.ApplicationSource{RepoURL: "https://github.com/example/gitops", Path: path},
				Destination: v1.ApplicationDestination{Namespace: namespace, Environment: env},
				Type:        v1.GitOpsDeploymentSpecTypeAutomated,
			},
		}
	}

	// The webhook may need a moment to serve after the manager starts.
	g.Eventually(func() error {
		return cp.Client.Create(ctx, deployment("escape", "kube-system", "", "deploy"))
	}, "10s", "100ms").Should(MatchError(ContainSubstring(
		`spec.destination.namespace "kube-system": without spec.destination.environment a GitOpsDeployment can only deploy to its own namespace`)))

	g.Expect(cp.Client.Create(ctx, deployment("own", ns.Name, "", "deploy"))).To(Succeed())
	g.Expect(cp.Client.Create(ctx, deployment("remote", "kube-system", "prod", "deploy"))).To(Succeed(), "another namespace through an environment")
	g.Expect(cp.Client.Create(ctx, deployment("root", "", "", "/"))).To(Succeed(), "an unusable path is reported in a condition, not refused")

	// A refresh request that cannot be stored nor passed on is refused.
	for i, value := range []string{"now\a", "now\x7f", "now\x00"} {
		bad := deployment(fmt.Sprintf("refresh-%d", i), "", "", "deploy")
		bad.Annotations = map[string]string{v1.RefreshAnnotation: value}
		g.Expect(cp.Client.Create(ctx, bad)).To(MatchError(ContainSubstring("contains the control character")), "%q", value)
	}

	// Updates are checked too.
	own := &v1.GitOpsDeployment{}
	g.Expect(cp.Client.Get(ctx, keyOf(ns.Name, "own"), own)).To(Succeed())
	own.Spec.Destination.Namespace = "default"
	g.Expect(cp.Client.Update(ctx, own)).To(MatchError(ContainSubstring("can only deploy to its own namespace")))
}

func keyOf(namespace, name string) client.ObjectKey {
	return client.ObjectKey{Namespace: namespace, Name: name}
}
