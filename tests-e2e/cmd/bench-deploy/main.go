// Command bench-deploy measures, on the local stack with a real Argo CD, how long one
// deployment takes from `kubectl apply` to Synced/Healthy: a GitOpsDeployment through the
// whole service, against an Argo CD Application of the same repository created directly
// (the floor), alternating the two in the same run. It also reports how long the stack took
// to start and the resident memory of every process, and how long a push takes to be
// deployed: pushes whose Git server hook calls the backend's webhook receiver, against the
// same pushes left to Argo CD's default polling (3 minutes), in the same run. Last, P1 on
// the real Argo CD: N deployments at once to Synced/Healthy through the service, against the
// same N Applications created directly.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/tests-e2e/gitserver"
	"github.com/gitops-service/gitops-service/tests-e2e/stack"
)

// Result is what the benchmark writes to <out>/bench-deploy.json.
type Result struct {
	Samples      int     `json:"samples"`
	StartSeconds float64 `json:"stackStartSeconds"`
	// Seconds from create to Synced/Healthy, p50 and max of the samples.
	ServiceP50Seconds float64            `json:"serviceP50Seconds"`
	ServiceMaxSeconds float64            `json:"serviceMaxSeconds"`
	FloorP50Seconds   float64            `json:"floorP50Seconds"`
	FloorMaxSeconds   float64            `json:"floorMaxSeconds"`
	Ratio             float64            `json:"ratioP50"`
	RSSMiB            map[string]float64 `json:"rssMiB"`
	// Seconds from a push to the GitOpsDeployment showing its commit Synced/Healthy.
	Pushes                int     `json:"pushes"`
	PushWebhookP50Seconds float64 `json:"pushWebhookP50Seconds"`
	PushWebhookP99Seconds float64 `json:"pushWebhookP99Seconds"`
	PushPollingP50Seconds float64 `json:"pushPollingP50Seconds"`
	PushPollingP99Seconds float64 `json:"pushPollingP99Seconds"`
	PushRatioP50          float64 `json:"pushRatioP50"`
	// Throughput is P1 on the real Argo CD.
	Throughput *Throughput `json:"throughput,omitempty"`
}

func main() {
	samples := flag.Int("samples", 5, "Deployments of each kind to time.")
	pushes := flag.Int("pushes", 20, "Pushes to time with the webhook receiver and with polling (0 skips them).")
	throughput := flag.Int("throughput", 500, "Deployments created at once to time to Synced/Healthy, through the service and directly (0 skips them).")
	out := flag.String("out", ".local/bench-deploy", "Directory for the stack and the results.")
	flag.Parse()
	if err := run(*samples, *pushes, *throughput, *out); err != nil {
		fmt.Fprintln(os.Stderr, "bench-deploy:", err)
		os.Exit(1)
	}
}

func run(samples, pushes, throughput int, out string) error {
	ctrl.SetLogger(logr.Discard())
	ctx := context.Background()
	start := time.Now()
	hook := &webhookHook{}
	s, err := stack.Start(ctx, stack.Options{
		Dir: filepath.Join(out, "stack"), ArgoCD: true, GitServer: &gitserver.Options{Addr: "127.0.0.1:0", OnCommit: hook.onCommit},
		// Argo CD's default polling, which pushes without the receiver wait for.
		ArgoCDPolling: 3 * time.Minute, GitWebhook: true,
		Binaries: []string{"backend", "cluster-agent"},
		Progress: func(step string) { fmt.Fprintf(os.Stderr, "==> %s\n", step) },
	})
	if err != nil {
		return err
	}
	defer func() { _ = s.Stop() }()
	res := &Result{Samples: samples, StartSeconds: time.Since(start).Seconds(), RSSMiB: map[string]float64{}}
	if err := s.Git.Create("bench", nil); err != nil {
		return err
	}
	if _, err := s.Git.Commit("bench", map[string]string{
		"app/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bench\ndata:\n  k: v\n",
	}, "bench"); err != nil {
		return err
	}
	c := s.ControlPlane.Client
	var service, floor []float64
	for i := range samples {
		for _, kind := range []string{"floor", "service"} {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: kind + "-"}}
			if err := c.Create(ctx, ns); err != nil {
				return err
			}
			var took float64
			if kind == "floor" {
				took, err = timeApplication(ctx, c, ns.Name, s.Git.URL("bench"))
				floor = append(floor, took)
			} else {
				took, err = timeGitOpsDeployment(ctx, c, ns.Name, s.Git.URL("bench"))
				service = append(service, took)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "==> sample %d %s: %.2fs\n", i+1, kind, took)
		}
	}
	sort.Float64s(service)
	sort.Float64s(floor)
	res.ServiceP50Seconds, res.ServiceMaxSeconds = stack.Percentile(service, 0.5), service[len(service)-1]
	res.FloorP50Seconds, res.FloorMaxSeconds = stack.Percentile(floor, 0.5), floor[len(floor)-1]
	res.Ratio = res.ServiceP50Seconds / res.FloorP50Seconds
	for name, pid := range s.AllProcesses() {
		res.RSSMiB[name], _ = stack.RSSMiB(pid)
	}
	if pushes > 0 {
		hook.s = s
		if err := timePushes(ctx, s, hook, pushes, res); err != nil {
			return err
		}
	}
	if throughput > 0 {
		if res.Throughput, err = timeThroughput(ctx, s, throughput); err != nil {
			return err
		}
	}
	data, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	fmt.Println(string(data))
	return os.WriteFile(filepath.Join(out, "bench-deploy.json"), data, 0o644)
}

// timeGitOpsDeployment creates a GitOpsDeployment and times it to Synced/Healthy.
func timeGitOpsDeployment(ctx context.Context, c client.Client, namespace, repoURL string) (float64, error) {
	depl := &v1.GitOpsDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: namespace},
		Spec: v1.GitOpsDeploymentSpec{Source: v1.ApplicationSource{RepoURL: repoURL, Path: "app"},
			Type: v1.GitOpsDeploymentSpecTypeAutomated},
	}
	start := time.Now()
	if err := c.Create(ctx, depl); err != nil {
		return 0, err
	}
	return poll(ctx, start, func() (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(depl), depl)
		return depl.Status.Sync.Status == v1.SyncStatusCodeSynced && depl.Status.Health.Status == v1.HealthStatusCodeHealthy, err
	})
}

// timeApplication creates the Argo CD Application a user of Argo CD would write for the
// same deployment and times it to Synced/Healthy.
func timeApplication(ctx context.Context, c client.Client, namespace, repoURL string) (float64, error) {
	app := &argov1alpha1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: "floor-" + namespace, Namespace: stack.EngineNamespace},
		Spec: argov1alpha1.ApplicationSpec{
			Project:     "default",
			Source:      &argov1alpha1.ApplicationSource{RepoURL: repoURL, Path: "app"},
			Destination: argov1alpha1.ApplicationDestination{Server: argov1alpha1.KubernetesInternalAPIServerAddr, Namespace: namespace},
			SyncPolicy:  &argov1alpha1.SyncPolicy{Automated: &argov1alpha1.SyncPolicyAutomated{Prune: true, SelfHeal: true}},
		},
	}
	start := time.Now()
	if err := c.Create(ctx, app); err != nil {
		return 0, err
	}
	return poll(ctx, start, func() (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(app), app)
		return app.Status.Sync.Status == argov1alpha1.SyncStatusCodeSynced && app.Status.Health.Status == argov1alpha1.HealthStatusHealthy, err
	})
}

// poll checks done every 50ms for up to two minutes and returns the seconds since start.
func poll(ctx context.Context, start time.Time, done func() (bool, error)) (float64, error) {
	return pollFor(ctx, start, 2*time.Minute, done)
}

// pollFor checks done every 50ms for up to limit and returns the seconds since start.
func pollFor(ctx context.Context, start time.Time, limit time.Duration, done func() (bool, error)) (float64, error) {
	return pollEvery(ctx, start, limit, 50*time.Millisecond, done)
}

// pollEvery checks done every interval for up to limit and returns the seconds since start.
func pollEvery(ctx context.Context, start time.Time, limit, interval time.Duration, done func() (bool, error)) (float64, error) {
	deadline := start.Add(limit)
	for time.Now().Before(deadline) {
		ok, err := done()
		if err != nil {
			return 0, err
		}
		if ok {
			return time.Since(start).Seconds(), nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(interval):
		}
	}
	return 0, fmt.Errorf("not Synced/Healthy after %s", limit)
}
