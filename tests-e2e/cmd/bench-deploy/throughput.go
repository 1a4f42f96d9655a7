package main

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/tests-e2e/stack"
)

// Throughput is P1 on a real Argo CD: n deployments, each of its own path and ConfigMap,
// created by 16 clients, until all are Synced and Healthy; the floor creates the same
// Argo CD Applications directly.
type Throughput struct {
	N                   int     `json:"n"`
	Namespaces          int     `json:"namespaces"`
	FloorSeconds        float64 `json:"floorSeconds"`
	ServiceSeconds      float64 `json:"serviceSeconds"`
	Ratio               float64 `json:"ratio"`
	FloorCPUSeconds     float64 `json:"floorCpuSeconds"`
	ServiceCPUSeconds   float64 `json:"serviceCpuSeconds"`
	ServiceAPIServerCPU float64 `json:"serviceKubeAPIServerCpuSeconds"`
	FloorAPIServerCPU   float64 `json:"floorKubeAPIServerCpuSeconds"`
}

const (
	throughputRepo        = "throughput"
	throughputClients     = 16
	throughputNamespaceN  = 50
	throughputDeadline    = 20 * time.Minute
	throughputListEvery   = time.Second
	throughputFloorPrefix = "floor-tp-"
)

// timeThroughput runs the floor, removes its Applications, then runs the service.
func timeThroughput(ctx context.Context, s *stack.Stack, n int) (*Throughput, error) {
	c := s.ControlPlane.Client
	tp := &Throughput{N: n, Namespaces: throughputNamespaceN}
	files := map[string]string{}
	for i := range n {
		files[fmt.Sprintf("p%d/configmap.yaml", i)] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\ndata:\n  k: v\n", i)
	}
	if err := s.Git.Create(throughputRepo, nil); err != nil {
		return nil, err
	}
	if _, err := s.Git.Commit(throughputRepo, files, "one path per deployment"); err != nil {
		return nil, err
	}
	repoURL := s.Git.URL(throughputRepo)
	floorNS, err := namespaces(ctx, c, "tp-floor-", throughputNamespaceN)
	if err != nil {
		return nil, err
	}
	serviceNS, err := namespaces(ctx, c, "tp-service-", throughputNamespaceN)
	if err != nil {
		return nil, err
	}

	progress("throughput floor: %d Argo CD Applications to Synced/Healthy", n)
	cpu := cpuOf()
	if tp.FloorSeconds, err = createAll(ctx, n, func(i int) error {
		return c.Create(ctx, floorApplication(i, repoURL, floorNS[i%len(floorNS)]))
	}, func() (int, error) { return readyApplications(ctx, c) }); err != nil {
		return nil, fmt.Errorf("floor: %w", err)
	}
	tp.FloorCPUSeconds, tp.FloorAPIServerCPU = cpu.since()
	// The floor's Applications go (their ConfigMaps stay), so that Argo CD serves only the
	// service's in the second phase.
	if err := c.DeleteAllOf(ctx, &argov1alpha1.Application{}, client.InNamespace(stack.EngineNamespace),
		client.MatchingLabels{"bench": "floor"}); err != nil {
		return nil, err
	}
	if _, err := pollFor(ctx, time.Now(), 5*time.Minute, func() (bool, error) {
		left, err := readyApplications(ctx, c)
		return left == 0, err
	}); err != nil {
		return nil, fmt.Errorf("removing the floor's Applications: %w", err)
	}

	progress("throughput service: %d GitOpsDeployments to Synced/Healthy", n)
	cpu = cpuOf()
	if tp.ServiceSeconds, err = createAll(ctx, n, func(i int) error {
		return c.Create(ctx, serviceDeployment(i, repoURL, serviceNS[i%len(serviceNS)]))
	}, func() (int, error) { return readyDeployments(ctx, c) }); err != nil {
		return nil, fmt.Errorf("service: %w", err)
	}
	tp.ServiceCPUSeconds, tp.ServiceAPIServerCPU = cpu.since()
	tp.Ratio = tp.ServiceSeconds / tp.FloorSeconds
	progress("throughput at N = %d: floor %.1f s, service %.1f s (%.2f×)", n, tp.FloorSeconds, tp.ServiceSeconds, tp.Ratio)
	return tp, nil
}

// createAll creates n objects with throughputClients clients and returns the seconds from
// the first create until ready reports all n.
func createAll(ctx context.Context, n int, create func(i int) error, ready func() (int, error)) (float64, error) {
	start := time.Now()
	work := make(chan int)
	errs := make(chan error, throughputClients)
	var wg sync.WaitGroup
	for range throughputClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if err := create(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	last := -1
	return pollEvery(ctx, start, throughputDeadline, throughputListEvery, func() (bool, error) {
		done, err := ready()
		if done/100 != last/100 {
			progress("  %d of %d Synced/Healthy after %.0f s", done, n, time.Since(start).Seconds())
		}
		last = done
		return done >= n, err
	})
}

func floorApplication(i int, repoURL, namespace string) *argov1alpha1.Application {
	return &argov1alpha1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s%d", throughputFloorPrefix, i), Namespace: stack.EngineNamespace,
			Labels: map[string]string{"bench": "floor"}},
		Spec: argov1alpha1.ApplicationSpec{
			Project:     "default",
			Source:      &argov1alpha1.ApplicationSource{RepoURL: repoURL, Path: fmt.Sprintf("p%d", i)},
			Destination: argov1alpha1.ApplicationDestination{Server: argov1alpha1.KubernetesInternalAPIServerAddr, Namespace: namespace},
			SyncPolicy:  &argov1alpha1.SyncPolicy{Automated: &argov1alpha1.SyncPolicyAutomated{Prune: true, SelfHeal: true}},
		},
	}
}

func serviceDeployment(i int, repoURL, namespace string) *v1.GitOpsDeployment {
	return &v1.GitOpsDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("tp-%d", i), Namespace: namespace},
		Spec: v1.GitOpsDeploymentSpec{Source: v1.ApplicationSource{RepoURL: repoURL, Path: fmt.Sprintf("p%d", i)},
			Type: v1.GitOpsDeploymentSpecTypeAutomated},
	}
}

// readyApplications counts the floor's Applications that are Synced and Healthy.
func readyApplications(ctx context.Context, c client.Client) (int, error) {
	list := &argov1alpha1.ApplicationList{}
	if err := c.List(ctx, list, client.InNamespace(stack.EngineNamespace), client.MatchingLabels{"bench": "floor"}); err != nil {
		return 0, err
	}
	n := 0
	for _, app := range list.Items {
		if app.Status.Sync.Status == argov1alpha1.SyncStatusCodeSynced && app.Status.Health.Status == argov1alpha1.HealthStatusHealthy {
			n++
		}
	}
	return n, nil
}

// readyDeployments counts the GitOpsDeployments that are Synced and Healthy.
func readyDeployments(ctx context.Context, c client.Client) (int, error) {
	list := &v1.GitOpsDeploymentList{}
	if err := c.List(ctx, list); err != nil {
		return 0, err
	}
	n := 0
	for _, d := range list.Items {
		if d.Status.Sync.Status == v1.SyncStatusCodeSynced && d.Status.Health.Status == v1.HealthStatusCodeHealthy {
			n++
		}
	}
	return n, nil
}

func namespaces(ctx context.Context, c client.Client, prefix string, n int) ([]string, error) {
	var names []string
	for i := range n {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s%d", prefix, i)}}
		if err := c.Create(ctx, ns); err != nil {
			return nil, err
		}
		names = append(names, ns.Name)
	}
	return names, nil
}

// cpuSnapshot holds the CPU seconds of the stack's programs at one moment.
type cpuSnapshot map[string]float64

func cpuOf() cpuSnapshot { return stack.CPUSecondsByProgram(nil) }

// since is the CPU seconds of all the stack's programs, and of the kube-apiserver, since
// the snapshot.
func (before cpuSnapshot) since() (all, apiServer float64) {
	for name, now := range cpuOf() {
		d := now - before[name]
		all += d
		if name == "kube-apiserver" {
			apiServer = d
		}
	}
	return all, apiServer
}

func progress(format string, args ...any) { fmt.Fprintf(os.Stderr, "==> "+format+"\n", args...) }
