// Command bench measures the service on the local stack (a real kube-apiserver, etcd,
// PostgreSQL, and the backend and cluster-agent as separate processes built from this
// checkout; no Argo CD) in one run:
//
//   - P1 throughput: N GitOpsDeployments in 100 namespaces until all N Argo CD Applications
//     exist and until all N GitOpsDeployment statuses show the sync and health status
//     written on their Application, against the floor: N Applications created directly
//     through the API server. A status writer plays Argo CD for both: it writes a status
//     (Synced at a revision, Healthy) once on every Application as it appears.
//   - P2 status latency: an Application status change until the GitOpsDeployment's status
//     shows it, p50/p95/p99.
//   - P3 idle cost: once settled, database statements per idle GitOpsDeployment per hour
//     and Kubernetes API requests per minute of each binary, over a quiet window.
//   - P4 resident memory (current and peak) and CPU seconds of each binary at N.
//   - P6 placement: `backend engine-instances simulate` (balance and moved share of tenant
//     placement over engine instances).
//
// -sizes runs P1 at several N, each on a fresh stack, to show how the cost grows. Results go
// to <out>/<name>.{json,md} and PNG charts beside them (see docs/performance.md).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/gitops-service/gitops-service/tests-e2e/stack"
)

type config struct {
	N                 int
	Sizes             []int
	Repeat            int
	Namespaces        int
	Concurrency       int
	WriterConcurrency int
	LatencySamples    int
	Settle            time.Duration
	IdleWindow        time.Duration
	SweepInterval     time.Duration
	PhaseTimeout      time.Duration
	Phases            map[string]bool
	PlacementArgs     string
	Out               string
	Name              string
}

// allPhases are the phases -phases accepts, in run order (P5 is not a benchmark's).
var allPhases = []string{"p1", "p2", "p3", "p4", "p6"}

func main() {
	var cfg config
	var sizes, phases string
	var reportOnly bool
	flag.IntVar(&cfg.N, "n", 1000, "GitOpsDeployments (and floor Applications) of the main run: P1 to P4 run at this size. The documented full run uses -n 10000.")
	flag.StringVar(&sizes, "sizes", "", "Comma-separated sizes to run P1 at as well (e.g. 1000,2000,5000,10000), each on a fresh stack; default only -n.")
	flag.IntVar(&cfg.Repeat, "repeat", 1, "P1: runs at each size, each on a fresh stack; the report gives the median and range of the ratios (P2 to P4 run in the first run at -n only).")
	flag.IntVar(&cfg.Namespaces, "namespaces", 100, "Tenant namespaces to spread the GitOpsDeployments over.")
	flag.IntVar(&cfg.Concurrency, "concurrency", 16, "Parallel creating clients, the same for the floor and the pipeline.")
	flag.IntVar(&cfg.WriterConcurrency, "writer-concurrency", 16, "Parallel status writes of the Argo CD stand-in, the same for the floor and the pipeline.")
	flag.IntVar(&cfg.LatencySamples, "latency-samples", 200, "P2: status changes to time, one at a time.")
	flag.DurationVar(&cfg.Settle, "settle", 10*time.Second, "P3: minimum wait before the idle window; the binaries' work queues must also be empty.")
	flag.DurationVar(&cfg.IdleWindow, "idle-window", 2*time.Minute, "P3: length of the quiet window.")
	flag.DurationVar(&cfg.SweepInterval, "sweep-interval", 0, "P3: --sweep-interval of the backend and the cluster-agent, so that the idle window holds sweep runs (0: the binaries' default, 10m).")
	flag.DurationVar(&cfg.PhaseTimeout, "timeout", 30*time.Minute, "Give up a P1 phase (floor or pipeline) after this long.")
	flag.StringVar(&phases, "phases", strings.Join(allPhases, ","), "Phases to run: any of p1,p2,p3,p4,p6 (p2 and p3 need the deployments of p1).")
	flag.StringVar(&cfg.PlacementArgs, "placement-args", "--instances 10 --tenants 10000", "P6: arguments of `backend engine-instances simulate -o json`.")
	flag.StringVar(&cfg.Out, "out", ".local/bench", "Directory for the stack, the results and the charts.")
	flag.StringVar(&cfg.Name, "name", "bench", "Base name of the result files (<out>/<name>.json, .md, -latency.png, -scaling.png).")
	flag.BoolVar(&reportOnly, "report-only", false, "Run nothing: rewrite <out>/<name>.md and the charts from <out>/<name>.json.")
	flag.Parse()
	if reportOnly {
		if err := rewriteReport(cfg); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	var err error
	if cfg.Sizes, err = parseSizes(sizes, cfg.N); err == nil {
		cfg.Phases, err = parsePhases(phases)
	}
	if err == nil && (cfg.N <= 0 || cfg.Repeat <= 0 || cfg.Namespaces <= 0 || cfg.Concurrency <= 0 || cfg.WriterConcurrency <= 0) {
		err = errors.New("-n, -repeat, -namespaces, -concurrency and -writer-concurrency must be positive")
	}
	if err == nil {
		err = run(cfg)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// parseSizes returns the sizes of -sizes with n, sorted, without duplicates.
func parseSizes(s string, n int) ([]int, error) {
	sizes := []int{n}
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		v, err := strconv.Atoi(f)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("-sizes: %q is not a positive integer", f)
		}
		sizes = append(sizes, v)
	}
	slices.Sort(sizes)
	return slices.Compact(sizes), nil
}

func parsePhases(s string) (map[string]bool, error) {
	out := map[string]bool{}
	for f := range strings.SplitSeq(s, ",") {
		f = strings.ToLower(strings.TrimSpace(f))
		if !slices.Contains(allPhases, f) {
			return nil, fmt.Errorf("-phases: unknown phase %q (want any of %s)", f, strings.Join(allPhases, ","))
		}
		out[f] = true
	}
	if (out["p2"] || out["p3"]) && !out["p1"] {
		return nil, errors.New("-phases: p2 and p3 need p1 (the deployments they measure)")
	}
	return out, nil
}

func progress(format string, args ...any) { fmt.Fprintf(os.Stderr, "==> "+format+"\n", args...) }

func run(cfg config) error {
	ctrl.SetLogger(logr.Discard())
	// Ctrl-C ends the phase under way; the stack is stopped and what was measured reported.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res := &Result{Machine: machine(), Started: time.Now().UTC(), Config: resultConfig(cfg)}
	stackDir := filepath.Join(cfg.Out, "stack")
	if cfg.Phases["p1"] || cfg.Phases["p4"] {
		// One fresh stack per size: each size starts from the same empty API server,
		// database and informer caches (see docs/performance.md).
		sizes := cfg.Sizes
		if !cfg.Phases["p1"] {
			sizes = []int{cfg.N} // P4 alone: one stack, no deployments
		}
		for run := range cfg.Repeat {
			for _, size := range sizes {
				if err := runSize(ctx, cfg, stackDir, size, run, res); err != nil {
					if size == cfg.N && run == 0 {
						return errors.Join(err, report(cfg, res))
					}
					progress("N = %d failed: %v", size, err)
					res.Throughput = append(res.Throughput, Throughput{N: size, Run: run, Error: err.Error()})
				}
			}
			if !cfg.Phases["p1"] {
				break
			}
		}
	}
	if cfg.Phases["p6"] {
		progress("P6: backend engine-instances simulate -o json %s", cfg.PlacementArgs)
		res.Placement = simulatePlacement(ctx, stackDir, cfg.PlacementArgs)
	}
	return report(cfg, res)
}

// runSize starts a fresh stack and runs P1 at size, and in the first run (run 0) at the
// main size P2 to P4 too.
func runSize(ctx context.Context, cfg config, stackDir string, size, run int, res *Result) (err error) {
	main := size == cfg.N && run == 0
	progress("N = %d, run %d of %d: starting a fresh stack", size, run+1, cfg.Repeat)
	var args map[string][]string
	if cfg.SweepInterval > 0 {
		sweep := "--sweep-interval=" + cfg.SweepInterval.String()
		args = map[string][]string{"backend": {sweep}, "cluster-agent": {sweep}}
	}
	s, err := stack.Start(ctx, stack.Options{
		Dir:      stackDir,
		Binaries: []string{"backend", "cluster-agent"},
		Args:     args,
		Progress: func(step string) { progress("%s", step) },
	})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.Stop()) }()
	b, err := newBench(ctx, s, cfg)
	if err != nil {
		return err
	}
	defer b.close()
	if !cfg.Phases["p1"] {
		res.Processes = b.processes()
		return nil
	}
	tp, err := b.throughput(ctx, size)
	if err != nil {
		return err
	}
	tp.Main, tp.Run = main, run
	if !main {
		res.Throughput = append(res.Throughput, *tp)
		return nil
	}
	if tp.ApplicationWrite, err = b.applicationWriteCost(ctx, min(size, writeCostMax)); err != nil {
		return err
	}
	res.Throughput = append(res.Throughput, *tp)
	if cfg.Phases["p2"] {
		progress("P2: status latency over %d samples", min(cfg.LatencySamples, size))
		if res.StatusLatency, err = b.statusLatency(ctx, size); err != nil {
			return err
		}
	}
	if cfg.Phases["p3"] {
		if res.Idle, err = b.idle(ctx, size); err != nil {
			return err
		}
	}
	if cfg.Phases["p4"] {
		res.Processes = b.processes()
	}
	return nil
}
