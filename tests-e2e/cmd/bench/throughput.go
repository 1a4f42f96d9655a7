package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	"github.com/gitops-service/gitops-service/tests-e2e/stack"
)

// floorNamespace holds the floor's Applications: not the engine namespace, whose
// Applications the cluster-agent caches and reconciles.
const floorNamespace = "bench-floor"

// bench is one stack under measurement.
type bench struct {
	cfg        config
	s          *stack.Stack
	c          client.WithWatch
	writer     *statusWriter
	namespaces []string
}

func newBench(ctx context.Context, s *stack.Stack, cfg config) (*bench, error) {
	c, err := benchClient(s.ControlPlane.Config, s.ControlPlane.Scheme)
	if err != nil {
		return nil, err
	}
	b := &bench{cfg: cfg, s: s, c: c}
	if err := createNamespaces(ctx, c, []string{floorNamespace}); err != nil {
		return nil, err
	}
	b.writer = startStatusWriter(ctx, c, []string{floorNamespace, stack.EngineNamespace}, cfg.WriterConcurrency)
	return b, nil
}

func (b *bench) close() { b.writer.stop() }

// benchClient is an uncached client whose rate limits do not throttle the benchmark.
func benchClient(cfg *rest.Config, scheme *k8sruntime.Scheme) (client.WithWatch, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 5000, 5000
	return client.NewWithWatch(cfg, client.Options{Scheme: scheme})
}

// throughput runs P1 at size: the floor, then the pipeline.
func (b *bench) throughput(ctx context.Context, size int) (*Throughput, error) {
	tp := &Throughput{N: size, Namespaces: b.cfg.Namespaces}
	var err error
	if tp.FloorQuiet, err = waitQuiet(ctx, "floor"); err != nil {
		return nil, err
	}
	progress("P1 floor: creating %d Argo CD Applications directly", size)
	floorCPU := stack.CPUSecondsByProgram(programs)
	floorWrites, err := apiWrites(ctx, b.s.ControlPlane.Config)
	if err != nil {
		return nil, err
	}
	if tp.FloorAppsSeconds, tp.FloorStatusSeconds, err = b.floor(ctx, size); err != nil {
		return nil, err
	}
	afterFloor, err := apiWrites(ctx, b.s.ControlPlane.Config)
	if err != nil {
		return nil, err
	}
	tp.FloorWritesPerDeployment = writesPerDeployment(floorWrites, afterFloor, size)
	tp.FloorCPUSeconds = map[string]float64{}
	for name, after := range stack.CPUSecondsByProgram(programs) {
		tp.FloorCPUSeconds[name] = after - floorCPU[name]
	}
	b.namespaces = make([]string, b.cfg.Namespaces)
	for i := range b.namespaces {
		b.namespaces[i] = fmt.Sprintf("bench-tenant-%d", i)
	}
	if err := createNamespaces(ctx, b.c, b.namespaces); err != nil {
		return nil, err
	}
	if err := resetStatements(ctx, b.s.DatabaseURL); err != nil {
		return nil, err
	}
	if tp.PipelineQuiet, err = waitQuiet(ctx, "pipeline"); err != nil {
		return nil, err
	}
	progress("P1 pipeline: creating %d GitOpsDeployments in %d namespaces", size, b.cfg.Namespaces)
	cpuBefore := stack.CPUSecondsByProgram(programs)
	metricsBefore, err := b.s.ScrapeAll(ctx)
	if err != nil {
		return nil, err
	}
	pipelineWrites, err := apiWrites(ctx, b.s.ControlPlane.Config)
	if err != nil {
		return nil, err
	}
	profiled := b.profilePipeline(ctx, size, time.Duration(2*tp.FloorStatusSeconds*float64(time.Second)))
	if err := b.pipeline(ctx, size, tp); err != nil {
		return nil, err
	}
	tp.APIServer, tp.Binaries = profiled()
	metricsAfter, err := b.s.ScrapeAll(ctx)
	if err != nil {
		return nil, err
	}
	afterPipeline, err := apiWrites(ctx, b.s.ControlPlane.Config)
	if err != nil {
		return nil, err
	}
	tp.WritesPerDeployment = writesPerDeployment(pipelineWrites, afterPipeline, size)
	tp.APIRequestsPerDeployment, tp.ReconcilesPerDeployment = map[string]float64{}, map[string]float64{}
	for name := range b.s.MetricsAddr {
		for _, d := range diffByLabel(metricsBefore[name], metricsAfter[name], "rest_client_requests_total", "method") {
			tp.APIRequestsPerDeployment[name] += d / float64(size)
		}
		for controller, d := range diffByLabel(metricsBefore[name], metricsAfter[name], "controller_runtime_reconcile_total", "controller") {
			tp.ReconcilesPerDeployment[name+"/"+controller] = d / float64(size)
		}
	}
	tp.CPUSeconds = map[string]float64{}
	for name, after := range stack.CPUSecondsByProgram(programs) {
		tp.CPUSeconds[name] = after - cpuBefore[name]
	}
	tp.AppsRatio = tp.PipelineAppsSeconds / tp.FloorAppsSeconds
	tp.StatusRatio = tp.PipelineStatusSeconds / tp.FloorStatusSeconds
	statements, err := countStatements(ctx, b.s.DatabaseURL)
	if err != nil {
		return nil, err
	}
	tp.StatementsPerDeployment = float64(statements) / float64(size)
	if tp.TopStatements, err = topStatements(ctx, b.s.DatabaseURL, 15); err != nil {
		return nil, err
	}
	progress("P1 at N = %d: floor %.2f s / %.2f s, pipeline %.2f s / %.2f s (Applications / statuses)",
		size, tp.FloorAppsSeconds, tp.FloorStatusSeconds, tp.PipelineAppsSeconds, tp.PipelineStatusSeconds)
	return tp, nil
}

// profiledBinaries are the service's binaries the benchmark profiles beside the
// kube-apiserver.
var profiledBinaries = []string{"backend", "cluster-agent"}

// profilePipeline starts CPU profiles of the kube-apiserver and the profiledBinaries over
// d, the part of the pipeline phase the floor's time suggests, saving each to
// <out>/<name>-<program>-<size>.pprof; the function it returns waits for them. A profile
// that fails is reported and left out.
func (b *bench) profilePipeline(ctx context.Context, size int, d time.Duration) func() (*CPUProfile, map[string]*CPUProfile) {
	file := func(program string) string {
		return filepath.Join(b.cfg.Out, fmt.Sprintf("%s-%s-%d.pprof", b.cfg.Name, program, size))
	}
	type taken struct {
		program string
		p       *CPUProfile
	}
	results := make(chan taken, 1+len(profiledBinaries))
	take := func(program string, profile func() (*CPUProfile, error)) {
		p, err := profile()
		if err != nil {
			progress("profiling %s failed: %v", program, err)
		}
		results <- taken{program, p}
	}
	go take("kube-apiserver", func() (*CPUProfile, error) {
		return profileAPIServer(ctx, b.s.ControlPlane.Config, d, file("kube-apiserver"))
	})
	for _, name := range profiledBinaries {
		go take(name, func() (*CPUProfile, error) { return profileBinary(ctx, b.s.PprofAddr[name], d, file(name)) })
	}
	return func() (apiServer *CPUProfile, binaries map[string]*CPUProfile) {
		binaries = map[string]*CPUProfile{}
		for range 1 + len(profiledBinaries) {
			t := <-results
			if t.p == nil {
				continue
			}
			if t.program == "kube-apiserver" {
				apiServer = t.p
			} else {
				binaries[t.program] = t.p
			}
		}
		return apiServer, binaries
	}
}

// floor creates N Applications directly, as fast as the pipeline's client could, and
// returns when they all existed and when all had their status.
func (b *bench) floor(ctx context.Context, size int) (apps, statuses float64, err error) {
	spec := argocd.ApplicationSpec(argocd.ApplicationInput{
		RepoURL: "https://github.com/example/gitops", Path: "deploy", Project: "default",
		Destination: argocd.Destination{Namespace: floorNamespace}, Automated: true,
	})
	start := time.Now()
	if err := parallel(size, b.cfg.Concurrency, func(i int) error {
		return b.c.Create(ctx, argocd.Application(floorNamespace, fmt.Sprintf("floor-%d", i), "floor", "floor", spec))
	}); err != nil {
		return 0, 0, err
	}
	apps = time.Since(start).Seconds()
	last, err := b.writer.waitWritten(ctx, floorNamespace, size, b.cfg.PhaseTimeout)
	if err != nil {
		return 0, 0, err
	}
	return apps, last.Sub(start).Seconds(), nil
}

// createNamespaces creates the namespaces and waits until kube-controller-manager has
// filled them (their default ServiceAccount and root CA ConfigMap), as in a cluster where a
// tenant's namespace exists before its deployments: its writes are then in neither phase.
func createNamespaces(ctx context.Context, c client.Client, names []string) error {
	for _, name := range names {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		accounts, err := namespacesHolding(ctx, c, &corev1.ServiceAccountList{}, "default", names)
		if err != nil {
			return err
		}
		certificates, err := namespacesHolding(ctx, c, &corev1.ConfigMapList{}, "kube-root-ca.crt", names)
		if err != nil {
			return err
		}
		if accounts == len(names) && certificates == len(names) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kube-controller-manager filled %d and %d of %d new namespaces: %w",
				accounts, certificates, len(names), ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// namespacesHolding counts the namespaces among names that hold an object called name.
func namespacesHolding(ctx context.Context, c client.Client, list client.ObjectList, name string, names []string) (int, error) {
	if err := c.List(ctx, list, client.MatchingFields{"metadata.name": name}); err != nil {
		return 0, err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, item := range items {
		if obj, ok := item.(client.Object); ok && slices.Contains(names, obj.GetNamespace()) {
			n++
		}
	}
	return n, nil
}

// pipeline creates N GitOpsDeployments and records in tp when the cluster-agent had created
// all N Argo CD Applications (as the status writer saw them appear) and when all N
// GitOpsDeployments showed the written status (watched, not polled). The writer's watch of
// the Applications is in the floor's phase too; a second one here would be a cost the
// floor does not have.
func (b *bench) pipeline(ctx context.Context, size int, tp *Throughput) error {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	version, err := currentVersion(ctx, b.c, &v1.GitOpsDeploymentList{})
	if err != nil {
		return err
	}
	deployments := watchFrom(ctx, b.c, &v1.GitOpsDeploymentList{}, version)
	writerRestarts := b.writer.watchRestarts()
	defer func() {
		tp.BenchWatchRestarts = deployments.restarts.Load() + b.writer.watchRestarts() - writerRestarts
	}()
	start := time.Now()
	createErr := make(chan error, 1)
	go func() {
		createErr <- parallel(size, b.cfg.Concurrency, func(i int) error {
			return b.c.Create(ctx, deployment(b.namespaces[i%len(b.namespaces)], fmt.Sprintf("app-%d", i)))
		})
	}()
	populated := map[client.ObjectKey]bool{}
	timeout := time.After(b.cfg.PhaseTimeout)
	for len(populated) < size {
		select {
		case ev, ok := <-deployments.events:
			if !ok {
				return fmt.Errorf("watching GitOpsDeployments: %w", ctx.Err())
			}
			d, isDepl := ev.Object.(*v1.GitOpsDeployment)
			if isDepl && (ev.Type == watch.Added || ev.Type == watch.Modified) && showsWriterStatus(d) {
				populated[client.ObjectKeyFromObject(d)] = true
			}
		case err := <-createErr:
			if err != nil {
				return err
			}
		case <-timeout:
			err := fmt.Errorf("after %s: %d of %d Applications, %d of %d statuses",
				b.cfg.PhaseTimeout, b.writer.arrivalsIn(stack.EngineNamespace).n, size, len(populated), size)
			if werr := b.writer.failed(); werr != nil {
				err = fmt.Errorf("%w (status writer: %w)", err, werr)
			}
			return err
		}
	}
	tp.PipelineStatusSeconds = time.Since(start).Seconds()
	// A status shows what the writer wrote on its Application, so the writer saw all N.
	apps := b.writer.arrivalsIn(stack.EngineNamespace)
	if apps.n < size {
		return fmt.Errorf("the status writer saw %d Applications appear in %s, want %d", apps.n, stack.EngineNamespace, size)
	}
	tp.PipelineFirstAppSeconds, tp.PipelineAppsSeconds = apps.first.Sub(start).Seconds(), apps.last.Sub(start).Seconds()
	return nil
}

// showsWriterStatus reports whether a GitOpsDeployment's status shows what the status
// writer wrote on its Application.
func showsWriterStatus(d *v1.GitOpsDeployment) bool {
	return d.Status.Sync.Status == v1.SyncStatusCodeSynced && d.Status.Sync.Revision == writerRevision &&
		d.Status.Health.Status == v1.HealthStatusCodeHealthy
}

func deployment(namespace, name string) *v1.GitOpsDeployment {
	return &v1.GitOpsDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: v1.GitOpsDeploymentSpec{
			Source: v1.ApplicationSource{RepoURL: "https://github.com/example/gitops", Path: "deploy"},
			Type:   v1.GitOpsDeploymentSpecTypeAutomated,
		},
	}
}

// parallel runs fn(i) for i in [0, n) on concurrency workers and returns the first error.
func parallel(n, concurrency int, fn func(i int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, concurrency)
	for w := range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					errs[w] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
