// Command bench-pipeline measures the core pipeline on the local stack (real kube-apiserver,
// PostgreSQL, backend and cluster-agent processes; no Argo CD):
//
//   - floor: N Argo CD Applications created directly through the API server;
//   - pipeline: N GitOpsDeployments in the given number of namespaces, until all N Argo CD
//     Applications exist (the same client concurrency as the floor), and the ratio;
//   - status latency: an Application status write (as Argo CD makes it) until the
//     GitOpsDeployment's status shows it, p50/p95/p99 over a sample;
//   - database statements per deployment (pg_stat_statements) and the RSS of each binary.
//
// Results go to stdout as Markdown and to <out>/bench-pipeline.{json,md}.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	"github.com/gitops-service/gitops-service/tests-e2e/stack"
)

type config struct {
	N              int
	Namespaces     int
	Concurrency    int
	LatencySamples int
	Out            string
}

// Result is what the benchmark reports.
type Result struct {
	Machine                 string             `json:"machine"`
	N                       int                `json:"n"`
	Namespaces              int                `json:"namespaces"`
	Concurrency             int                `json:"concurrency"`
	FloorSeconds            float64            `json:"floorSeconds"`
	PipelineSeconds         float64            `json:"pipelineSeconds"`
	Ratio                   float64            `json:"ratio"`
	StatusLatencyMillis     map[string]float64 `json:"statusLatencyMillis"`
	StatementsPerDeployment float64            `json:"statementsPerDeployment"`
	TopStatements           []Statement        `json:"topStatements"`
	PipelineCPUSeconds      map[string]float64 `json:"pipelineCpuSeconds"`
	RSSMiB                  map[string]float64 `json:"rssMiB"`
	PeakRSSMiB              map[string]float64 `json:"peakRssMiB"`
}

// Statement is a normalised SQL statement and how often it ran during the pipeline phase.
type Statement struct {
	Calls int64  `json:"calls"`
	Query string `json:"query"`
}

func main() {
	var cfg config
	flag.IntVar(&cfg.N, "n", 1000, "GitOpsDeployments (and floor Applications) to create.")
	flag.IntVar(&cfg.Namespaces, "namespaces", 100, "Tenant namespaces to spread them over.")
	flag.IntVar(&cfg.Concurrency, "concurrency", 16, "Parallel creating clients, the same for the floor and the pipeline.")
	flag.IntVar(&cfg.LatencySamples, "latency-samples", 200, "Status changes to time.")
	flag.StringVar(&cfg.Out, "out", ".local/bench", "Directory for the stack and the results.")
	flag.Parse()
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench-pipeline:", err)
		os.Exit(1)
	}
}

func run(cfg config) error {
	ctrl.SetLogger(logr.Discard())
	ctx := context.Background()
	s, err := stack.Start(ctx, stack.Options{
		Dir:      filepath.Join(cfg.Out, "stack"),
		Binaries: []string{"backend", "cluster-agent"},
		Progress: func(step string) { fmt.Fprintf(os.Stderr, "==> %s\n", step) },
	})
	if err != nil {
		return err
	}
	defer func() { _ = s.Stop() }()
	c, err := benchClient(s.ControlPlane.Config, s.ControlPlane.Scheme)
	if err != nil {
		return err
	}
	res := &Result{Machine: fmt.Sprintf("%s/%s, %d CPUs", runtime.GOOS, runtime.GOARCH, runtime.NumCPU()),
		N: cfg.N, Namespaces: cfg.Namespaces, Concurrency: cfg.Concurrency}

	progress("floor: creating %d Argo CD Applications directly", cfg.N)
	if res.FloorSeconds, err = floor(ctx, c, cfg); err != nil {
		return err
	}
	namespaces, err := createNamespaces(ctx, c, cfg.Namespaces)
	if err != nil {
		return err
	}
	if err := resetStatements(ctx, s.DatabaseURL); err != nil {
		return err
	}
	progress("pipeline: creating %d GitOpsDeployments in %d namespaces", cfg.N, cfg.Namespaces)
	cpuBefore := cpuByProgram()
	if res.PipelineSeconds, err = pipeline(ctx, c, cfg, namespaces); err != nil {
		return err
	}
	res.PipelineCPUSeconds = map[string]float64{}
	for name, after := range cpuByProgram() {
		res.PipelineCPUSeconds[name] = after - cpuBefore[name]
	}
	res.Ratio = res.PipelineSeconds / res.FloorSeconds
	statements, err := countStatements(ctx, s.DatabaseURL)
	if err != nil {
		return err
	}
	res.StatementsPerDeployment = float64(statements) / float64(cfg.N)
	if res.TopStatements, err = topStatements(ctx, s.DatabaseURL, 15); err != nil {
		return err
	}

	progress("status latency over %d samples", cfg.LatencySamples)
	if res.StatusLatencyMillis, err = statusLatency(ctx, c, cfg, namespaces); err != nil {
		return err
	}
	res.RSSMiB, res.PeakRSSMiB = map[string]float64{}, map[string]float64{}
	for name, p := range s.Processes {
		res.RSSMiB[name], res.PeakRSSMiB[name] = stack.RSSMiB(p.Pid())
	}
	return report(cfg.Out, res)
}

func progress(format string, args ...any) { fmt.Fprintf(os.Stderr, "==> "+format+"\n", args...) }

// benchClient is an uncached client whose rate limits do not throttle the benchmark.
func benchClient(cfg *rest.Config, scheme *k8sruntime.Scheme) (client.WithWatch, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 5000, 5000
	return client.NewWithWatch(cfg, client.Options{Scheme: scheme})
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

// floor creates N Applications directly, as fast as the pipeline's client could.
func floor(ctx context.Context, c client.Client, cfg config) (float64, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench-floor"}}
	if err := c.Create(ctx, ns); err != nil {
		return 0, err
	}
	spec := argocd.ApplicationSpec(argocd.ApplicationInput{
		RepoURL: "https://github.com/example/gitops", Path: "deploy", Project: "default",
		Destination: argocd.Destination{Namespace: "bench-floor"}, Automated: true,
	})
	start := time.Now()
	err := parallel(cfg.N, cfg.Concurrency, func(i int) error {
		app := argocd.Application(ns.Name, fmt.Sprintf("floor-%d", i), "floor", "floor", spec)
		return c.Create(ctx, app)
	})
	return time.Since(start).Seconds(), err
}

func createNamespaces(ctx context.Context, c client.Client, n int) ([]string, error) {
	names := make([]string, n)
	for i := range n {
		names[i] = fmt.Sprintf("bench-tenant-%d", i)
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: names[i]}}); err != nil {
			return nil, err
		}
	}
	return names, nil
}

// pipeline creates N GitOpsDeployments and waits until the cluster-agent has created all
// N Argo CD Applications, watching them appear.
func pipeline(ctx context.Context, c client.WithWatch, cfg config, namespaces []string) (float64, error) {
	w, err := c.Watch(ctx, &argov1alpha1.ApplicationList{}, client.InNamespace(stack.EngineNamespace),
		client.MatchingLabels{argocd.LabelManagedBy: argocd.ManagedByValue})
	if err != nil {
		return 0, err
	}
	defer w.Stop()
	start := time.Now()
	createErr := make(chan error, 1)
	go func() {
		createErr <- parallel(cfg.N, cfg.Concurrency, func(i int) error {
			return c.Create(ctx, deployment(namespaces[i%len(namespaces)], fmt.Sprintf("app-%d", i)))
		})
	}()
	seen := map[string]bool{}
	timeout := time.After(30 * time.Minute)
	for len(seen) < cfg.N {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return 0, fmt.Errorf("watch closed after %d Applications", len(seen))
			}
			if ev.Type == watch.Added {
				seen[ev.Object.(client.Object).GetName()] = true
			}
		case err := <-createErr:
			if err != nil {
				return 0, err
			}
		case <-timeout:
			return 0, fmt.Errorf("only %d of %d Applications after 30 minutes", len(seen), cfg.N)
		}
	}
	return time.Since(start).Seconds(), nil
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

// statusLatency writes Application statuses as Argo CD does, one at a time, and times each
// until the owning GitOpsDeployment's status shows the new revision.
func statusLatency(ctx context.Context, c client.WithWatch, cfg config, namespaces []string) (map[string]float64, error) {
	w, err := c.Watch(ctx, &v1.GitOpsDeploymentList{})
	if err != nil {
		return nil, err
	}
	defer w.Stop()
	samples := min(cfg.LatencySamples, cfg.N)
	latencies := make([]float64, 0, samples)
	for i := range samples {
		name := fmt.Sprintf("app-%d", i*(cfg.N/samples))
		depl := &v1.GitOpsDeployment{}
		ns := namespaces[(i*(cfg.N/samples))%len(namespaces)]
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, depl); err != nil {
			return nil, err
		}
		revision := fmt.Sprintf("rev-%d", i)
		app := &argov1alpha1.Application{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: stack.EngineNamespace, Name: argocd.ApplicationName(depl.UID)}, app); err != nil {
			return nil, err
		}
		patch := client.MergeFrom(app.DeepCopy())
		app.Status.Sync = argov1alpha1.SyncStatus{Status: argov1alpha1.SyncStatusCodeSynced, Revision: revision}
		app.Status.Health.Status = "Healthy"
		start := time.Now()
		if err := c.Patch(ctx, app, patch); err != nil {
			return nil, err
		}
		if err := waitRevision(w, ns, name, revision); err != nil {
			return nil, err
		}
		latencies = append(latencies, float64(time.Since(start).Microseconds())/1000)
	}
	slices.Sort(latencies)
	return map[string]float64{"p50": stack.Percentile(latencies, 0.50), "p95": stack.Percentile(latencies, 0.95), "p99": stack.Percentile(latencies, 0.99)}, nil
}

func waitRevision(w watch.Interface, namespace, name, revision string) error {
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return fmt.Errorf("watch closed")
			}
			d, isDepl := ev.Object.(*v1.GitOpsDeployment)
			if isDepl && d.Namespace == namespace && d.Name == name && d.Status.Sync.Revision == revision {
				return nil
			}
		case <-timeout:
			return fmt.Errorf("status of %s/%s never showed %s", namespace, name, revision)
		}
	}
}

func resetStatements(ctx context.Context, url string) error {
	return withConn(ctx, url, func(conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements; SELECT pg_stat_statements_reset()")
		return err
	})
}

// countStatements counts statements run on the service's database since the reset,
// leaving out the benchmark's own bookkeeping.
func countStatements(ctx context.Context, url string) (int64, error) {
	var n int64
	err := withConn(ctx, url, func(conn *pgx.Conn) error {
		return conn.QueryRow(ctx, `SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_statements
			WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
			AND query NOT ILIKE '%pg_stat_statements%'`).Scan(&n)
	})
	return n, err
}

// topStatements lists the most frequent statements since the reset, for profiling.
func topStatements(ctx context.Context, url string, limit int) ([]Statement, error) {
	var out []Statement
	err := withConn(ctx, url, func(conn *pgx.Conn) error {
		rows, err := conn.Query(ctx, `SELECT calls, left(regexp_replace(query, '\s+', ' ', 'g'), 160) FROM pg_stat_statements
			WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
			AND query NOT ILIKE '%pg_stat_statements%' ORDER BY calls DESC LIMIT $1`, limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var st Statement
			if err := rows.Scan(&st.Calls, &st.Query); err != nil {
				return err
			}
			out = append(out, st)
		}
		return rows.Err()
	})
	return out, err
}

func withConn(ctx context.Context, url string, fn func(*pgx.Conn) error) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close(ctx) }()
	return fn(conn)
}

// programs whose CPU time the benchmark reports, by executable name.
var programs = []string{"kube-apiserver", "etcd", "postgres", "backend", "cluster-agent", "bench-pipeline"}

// cpuByProgram sums user+system CPU seconds of every process of each program.
func cpuByProgram() map[string]float64 {
	out := map[string]float64{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid := e.Name()
		if pid[0] < '0' || pid[0] > '9' {
			continue
		}
		exe, err := os.Readlink("/proc/" + pid + "/exe")
		if err != nil || !slices.Contains(programs, filepath.Base(exe)) {
			continue
		}
		data, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil {
			continue
		}
		// Fields after the parenthesised command name; utime and stime are the 12th and 13th.
		fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
		if len(fields) < 13 {
			continue
		}
		var utime, stime float64
		_, _ = fmt.Sscan(fields[11], &utime)
		_, _ = fmt.Sscan(fields[12], &stime)
		out[filepath.Base(exe)] += (utime + stime) / 100 // USER_HZ is 100 on Linux
	}
	return out
}

func report(out string, res *Result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "| measure | value |\n| --- | --- |\n")
	fmt.Fprintf(&b, "| machine | %s |\n", res.Machine)
	fmt.Fprintf(&b, "| N / namespaces / client concurrency | %d / %d / %d |\n", res.N, res.Namespaces, res.Concurrency)
	fmt.Fprintf(&b, "| floor: N Applications created directly | %.2f s |\n", res.FloorSeconds)
	fmt.Fprintf(&b, "| pipeline: N GitOpsDeployments until N Applications exist | %.2f s |\n", res.PipelineSeconds)
	fmt.Fprintf(&b, "| ratio pipeline / floor | %.2f× |\n", res.Ratio)
	fmt.Fprintf(&b, "| status latency p50 / p95 / p99 | %.0f / %.0f / %.0f ms |\n", res.StatusLatencyMillis["p50"], res.StatusLatencyMillis["p95"], res.StatusLatencyMillis["p99"])
	fmt.Fprintf(&b, "| database statements per deployment (creation) | %.1f |\n", res.StatementsPerDeployment)
	for _, name := range []string{"backend", "cluster-agent"} {
		fmt.Fprintf(&b, "| %s RSS (peak) | %.0f MiB (%.0f MiB) |\n", name, res.RSSMiB[name], res.PeakRSSMiB[name])
	}
	for _, name := range programs {
		fmt.Fprintf(&b, "| CPU during the pipeline: %s | %.1f s |\n", name, res.PipelineCPUSeconds[name])
	}
	fmt.Print(b.String())
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "bench-pipeline.json"), data, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "bench-pipeline.md"), []byte(b.String()), 0o644)
}
