package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Result is what the benchmark reports (<out>/<name>.json).
type Result struct {
	Machine string       `json:"machine"`
	Started time.Time    `json:"started"`
	Config  ResultConfig `json:"config"`
	// Throughput is P1, one entry per size; Main marks the -n one.
	Throughput    []Throughput `json:"throughput"`
	StatusLatency *Latency     `json:"statusLatency,omitempty"`
	Idle          *Idle        `json:"idle,omitempty"`
	Processes     *Processes   `json:"processes,omitempty"`
	Placement     *Placement   `json:"placement,omitempty"`
}

// ResultConfig is the run's configuration.
type ResultConfig struct {
	N                 int      `json:"n"`
	Sizes             []int    `json:"sizes"`
	Repeat            int      `json:"repeat,omitempty"`
	Namespaces        int      `json:"namespaces"`
	Concurrency       int      `json:"concurrency"`
	WriterConcurrency int      `json:"writerConcurrency"`
	LatencySamples    int      `json:"latencySamples"`
	SettleSeconds     float64  `json:"settleSeconds"`
	IdleWindowSeconds float64  `json:"idleWindowSeconds"`
	Phases            []string `json:"phases"`
}

func resultConfig(cfg config) ResultConfig {
	rc := ResultConfig{N: cfg.N, Sizes: cfg.Sizes, Repeat: cfg.Repeat, Namespaces: cfg.Namespaces, Concurrency: cfg.Concurrency,
		WriterConcurrency: cfg.WriterConcurrency, LatencySamples: cfg.LatencySamples,
		SettleSeconds: cfg.Settle.Seconds(), IdleWindowSeconds: cfg.IdleWindow.Seconds()}
	for _, p := range allPhases {
		if cfg.Phases[p] {
			rc.Phases = append(rc.Phases, p)
		}
	}
	return rc
}

// Throughput is P1 at one size.
type Throughput struct {
	N          int  `json:"n"`
	Namespaces int  `json:"namespaces"`
	Main       bool `json:"main,omitempty"`
	// Run numbers the runs at this size (-repeat), from 0.
	Run   int    `json:"run,omitempty"`
	Error string `json:"error,omitempty"`
	// From the first create until all N Applications existed, and until all N showed the
	// status the writer wrote: the floor (Applications created directly) and the pipeline
	// (GitOpsDeployments; statuses on the GitOpsDeployments).
	FloorAppsSeconds      float64 `json:"floorAppsSeconds"`
	FloorStatusSeconds    float64 `json:"floorStatusSeconds"`
	PipelineAppsSeconds   float64 `json:"pipelineAppsSeconds"`
	PipelineStatusSeconds float64 `json:"pipelineStatusSeconds"`
	// PipelineFirstAppSeconds is when the first Application appeared.
	PipelineFirstAppSeconds float64 `json:"pipelineFirstAppSeconds"`
	// BenchWatchRestarts is how often the API server ended one of the benchmark's own
	// watches in the pipeline phase (each resumes where it ended); many mean the
	// benchmark fell behind the events it measures.
	BenchWatchRestarts int64 `json:"benchWatchRestarts"`
	// The waits for a quiet stack before the floor and before the pipeline.
	FloorQuiet    Quiet   `json:"floorQuiet"`
	PipelineQuiet Quiet   `json:"pipelineQuiet"`
	AppsRatio     float64 `json:"appsRatio"`
	StatusRatio   float64 `json:"statusRatio"`
	// Database statements per deployment during the pipeline phase, and the most frequent.
	StatementsPerDeployment float64     `json:"statementsPerDeployment"`
	TopStatements           []Statement `json:"topStatements,omitempty"`
	// CPU seconds of each program during the pipeline phase.
	CPUSeconds map[string]float64 `json:"pipelineCpuSeconds,omitempty"`
	// Kubernetes API requests of each binary, and reconciles of each binary/controller, per
	// deployment during the pipeline phase.
	APIRequestsPerDeployment map[string]float64 `json:"apiRequestsPerDeployment,omitempty"`
	ReconcilesPerDeployment  map[string]float64 `json:"reconcilesPerDeployment,omitempty"`
	// Writes the kube-apiserver served per deployment, by "resource[/subresource] VERB",
	// in the pipeline phase and in the floor (every client's, the user's creates included).
	WritesPerDeployment      map[string]float64 `json:"apiWritesPerDeployment,omitempty"`
	FloorWritesPerDeployment map[string]float64 `json:"floorApiWritesPerDeployment,omitempty"`
	// CPU seconds of each program during the floor phase.
	FloorCPUSeconds map[string]float64 `json:"floorCpuSeconds,omitempty"`
	// APIServer is a CPU profile of the kube-apiserver during the pipeline phase.
	APIServer *CPUProfile `json:"apiServerProfile,omitempty"`
	// Binaries are CPU profiles of the backend and the cluster-agent over the same time.
	Binaries map[string]*CPUProfile `json:"binaryProfiles,omitempty"`
	// ApplicationWrite is what an Application's creation costs by POST and by server-side
	// apply (the main run only, after the pipeline).
	ApplicationWrite *WriteCost `json:"applicationWrite,omitempty"`
}

// Latency is P2, in milliseconds.
type Latency struct {
	P50           float64   `json:"p50Millis"`
	P95           float64   `json:"p95Millis"`
	P99           float64   `json:"p99Millis"`
	Max           float64   `json:"maxMillis"`
	SamplesMillis []float64 `json:"samplesMillis"`
}

// Idle is P3.
type Idle struct {
	SettleSeconds               float64     `json:"settleSeconds"`
	WindowSeconds               float64     `json:"windowSeconds"`
	Deployments                 int         `json:"deployments"`
	Statements                  int64       `json:"statements"`
	StatementsPerDeploymentHour float64     `json:"statementsPerDeploymentHour"`
	TopStatements               []Statement `json:"topStatements,omitempty"`
	// Kubernetes API requests per minute of each binary, in all and by HTTP method.
	APIRequestsPerMinute map[string]float64            `json:"apiRequestsPerMinute"`
	APIRequestsByMethod  map[string]map[string]float64 `json:"apiRequestsPerMinuteByMethod"`
	// Reconciles per minute of each binary's controllers.
	ReconcilesPerMinute map[string]map[string]float64 `json:"reconcilesPerMinute"`
	CPUSeconds          map[string]float64            `json:"cpuSeconds"`
}

// Processes is P4: at the end of the main run.
type Processes struct {
	RSSMiB     map[string]float64 `json:"rssMiB"`
	PeakRSSMiB map[string]float64 `json:"peakRssMiB"`
	CPUSeconds map[string]float64 `json:"cpuSeconds"`
}

// Targets.
const (
	targetRatio          = 2.5
	targetP99Millis      = 1000
	targetIdleStatements = 0.1 // "≈ 0" statements per idle deployment per hour
	targetRSSMiB         = 300
	targetMaxOverMin     = 1.1
	targetMovedSlack     = 0.02
)

var binaries = []string{"backend", "cluster-agent"}

// report writes <out>/<name>.{json,md} and the charts, and prints the Markdown.
func report(cfg config, res *Result) error {
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return err
	}
	base := filepath.Join(cfg.Out, cfg.Name)
	var charts []string
	if l := res.StatusLatency; l != nil && len(l.SamplesMillis) > 0 {
		if err := latencyChart(l).save(base + "-latency.png"); err != nil {
			return err
		}
		charts = append(charts, cfg.Name+"-latency.png")
	}
	if tps := okThroughput(res.Throughput); len(tps) > 0 {
		if err := scalingChart(tps).save(base + "-scaling.png"); err != nil {
			return err
		}
		charts = append(charts, cfg.Name+"-scaling.png")
	}
	md := markdown(res, charts)
	fmt.Print(md)
	data, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(base+".json", data, 0o644); err != nil {
		return err
	}
	return os.WriteFile(base+".md", []byte(md), 0o644)
}

// rewriteReport writes the Markdown and the charts again from <out>/<name>.json.
func rewriteReport(cfg config) error {
	data, err := os.ReadFile(filepath.Join(cfg.Out, cfg.Name+".json"))
	if err != nil {
		return err
	}
	res := &Result{}
	if err := json.Unmarshal(data, res); err != nil {
		return err
	}
	cfg.Out, cfg.Name = filepath.Clean(cfg.Out), filepath.Base(cfg.Name)
	return report(cfg, res)
}

// okThroughput returns the successful entries of the first run, by size: the scaling
// chart's points.
func okThroughput(tps []Throughput) []Throughput {
	var out []Throughput
	for _, tp := range tps {
		if tp.Error == "" && tp.Run == 0 {
			out = append(out, tp)
		}
	}
	slices.SortFunc(out, func(a, b Throughput) int { return a.N - b.N })
	return out
}

func met(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}

func markdown(res *Result, charts []string) string {
	var b strings.Builder
	c := res.Config
	fmt.Fprintf(&b, "Machine: %s. Started %s. N = %d in %d namespaces, %d creating clients, %d status writers.\n\n",
		res.Machine, res.Started.Format(time.RFC3339), c.N, c.Namespaces, c.Concurrency, c.WriterConcurrency)
	fmt.Fprintf(&b, "| | measure | value | target | met |\n| --- | --- | --- | --- | --- |\n")
	row := func(phase, measure, value, target, ok string) {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", phase, measure, value, target, ok)
	}
	for _, tp := range res.Throughput {
		if !tp.Main {
			continue
		}
		if tp.Error != "" {
			row("P1", "throughput", "error: "+tp.Error, "", "")
			continue
		}
		row("P1", fmt.Sprintf("floor: %d Applications created directly", tp.N), fmt.Sprintf("%.2f s", tp.FloorAppsSeconds), "", "")
		row("P1", "floor: … and their statuses written", fmt.Sprintf("%.2f s", tp.FloorStatusSeconds), "", "")
		row("P1", fmt.Sprintf("pipeline: %d GitOpsDeployments until %d Applications exist", tp.N, tp.N),
			fmt.Sprintf("%.2f s (%.2f× floor)", tp.PipelineAppsSeconds, tp.AppsRatio), fmt.Sprintf("≤ %.1f× floor", targetRatio), met(tp.AppsRatio <= targetRatio))
		row("P1", "pipeline: … until all GitOpsDeployment statuses are populated",
			fmt.Sprintf("%.2f s (%.2f× floor)", tp.PipelineStatusSeconds, tp.StatusRatio), fmt.Sprintf("≤ %.1f× floor", targetRatio), met(tp.StatusRatio <= targetRatio))
		row("P1", "pipeline: first Application after", fmt.Sprintf("%.2f s", tp.PipelineFirstAppSeconds), "", "")
		row("P1", "pipeline: the benchmark's watches ended by the API server", fmt.Sprintf("%d", tp.BenchWatchRestarts), "", "")
		row("P1", fmt.Sprintf("waited for a quiet stack (under %.2f cores for %s) before the floor / the pipeline", quietCores, quietWindow),
			quietWaits(tp.FloorQuiet, tp.PipelineQuiet), "", "")
		row("P1", "database statements per deployment (pipeline phase)", fmt.Sprintf("%.1f", tp.StatementsPerDeployment), "", "")
		row("P1", "API writes per deployment at the kube-apiserver: pipeline", summarizeWrites(tp.WritesPerDeployment), "", "")
		row("P1", "API writes per deployment at the kube-apiserver: floor", summarizeWrites(tp.FloorWritesPerDeployment), "", "")
		if crs := tp.WritesPerDeployment["operations POST"] * float64(tp.N); crs > 0 {
			row("P1", "Operation CRs created in the pipeline phase", fmt.Sprintf("%.0f for %d changes (one per %.0f)", crs, tp.N, float64(tp.N)/crs), "", "")
		}
		row("P1", "kube-apiserver CPU per deployment: pipeline / floor",
			fmt.Sprintf("%.1f / %.1f ms", 1000*tp.CPUSeconds["kube-apiserver"]/float64(tp.N), 1000*tp.FloorCPUSeconds["kube-apiserver"]/float64(tp.N)), "", "")
		if p := tp.APIServer; p != nil {
			row("P1", fmt.Sprintf("kube-apiserver CPU by work (%.0f s profiled in the pipeline phase)", p.Seconds), summarizeShares(p.Areas), "", "")
			row("P1", "kube-apiserver CPU: costs across that work (overlapping)", summarizeShares(p.Costs), "", "")
			row("P1", "kube-apiserver functions with the most CPU of their own", summarizeShares(p.Top), "", "")
		}
		for _, name := range profiledBinaries {
			if p := tp.Binaries[name]; p != nil {
				row("P1", fmt.Sprintf("%s CPU by work (%.0f s profiled in the pipeline phase)", name, p.Seconds), summarizeShares(p.Areas), "", "")
				row("P1", name+" CPU: costs across that work (overlapping)", summarizeShares(p.Costs), "", "")
				row("P1", name+" functions with the most CPU of their own", summarizeShares(p.Top), "", "")
			}
		}
		if w := tp.ApplicationWrite; w != nil {
			row("P1", fmt.Sprintf("CPU per Application created, %d each way: by create (as the floor) / by server-side apply (as the cluster-agent)", w.PerWay),
				fmt.Sprintf("kube-apiserver %.2f / %.2f ms, etcd %.2f / %.2f ms", w.CPUMillis["create"]["kube-apiserver"], w.CPUMillis["apply"]["kube-apiserver"],
					w.CPUMillis["create"]["etcd"], w.CPUMillis["apply"]["etcd"]), "", "")
		}
		row("P1", "Kubernetes API requests per deployment (pipeline phase): backend / cluster-agent",
			fmt.Sprintf("%.1f / %.1f", tp.APIRequestsPerDeployment["backend"], tp.APIRequestsPerDeployment["cluster-agent"]), "", "")
		var cpu []string
		for _, p := range programs {
			cpu = append(cpu, fmt.Sprintf("%s %.1f", p, tp.CPUSeconds[p]))
		}
		row("P1", "CPU seconds during the pipeline phase", strings.Join(cpu, ", "), "", "")
		row("P1", "CPU per deployment, pipeline / floor (both phases keep the cores busy: the ratio of times follows)",
			cpuPerDeployment(tp.CPUSeconds, tp.FloorCPUSeconds, tp.N), "", "")
	}
	if l := res.StatusLatency; l != nil {
		row("P2", fmt.Sprintf("status latency p50 / p95 / p99 (max), %d samples", len(l.SamplesMillis)),
			fmt.Sprintf("%.0f / %.0f / %.0f (%.0f) ms", l.P50, l.P95, l.P99, l.Max), "p99 ≤ 1 s", met(l.P99 <= targetP99Millis))
	}
	if i := res.Idle; i != nil {
		row("P3", fmt.Sprintf("DB statements per idle GitOpsDeployment per hour (%d in %.0f s: %.0f per hour, %d deployments)",
			i.Statements, i.WindowSeconds, float64(i.Statements)/i.WindowSeconds*3600, i.Deployments),
			fmt.Sprintf("%.3g", i.StatementsPerDeploymentHour), fmt.Sprintf("≈ 0 (≤ %g)", targetIdleStatements), met(i.StatementsPerDeploymentHour <= targetIdleStatements))
		for _, name := range binaries {
			row("P3", name+": Kubernetes API requests per minute, idle", fmt.Sprintf("%.1f", i.APIRequestsPerMinute[name]), "", "")
		}
		for _, name := range binaries {
			row("P3", name+": CPU seconds in the idle window", fmt.Sprintf("%.2f", i.CPUSeconds[name]), "", "")
		}
	}
	if p := res.Processes; p != nil {
		at := fmt.Sprintf("≤ %d MiB at N = 10,000", targetRSSMiB)
		for _, name := range binaries {
			row("P4", name+": RSS now (peak)", fmt.Sprintf("%.0f MiB (%.0f MiB) at N = %d", p.RSSMiB[name], p.PeakRSSMiB[name], c.N), at, met(p.PeakRSSMiB[name] <= targetRSSMiB))
		}
		for _, name := range binaries {
			row("P4", name+": CPU seconds since start", fmt.Sprintf("%.1f", p.CPUSeconds[name]), "", "")
		}
	}
	if p := res.Placement; p != nil {
		if p.Error != "" {
			row("P6", "engine-instances simulate "+p.Args, "error: "+strings.ReplaceAll(p.Error, "|", `\|`), "", "")
		} else {
			row("P6", fmt.Sprintf("max/min load, %d tenants on %d instances (ε = %g)", p.Tenants, p.Instances, p.Epsilon),
				fmt.Sprintf("%.3f (%.0f / %.0f)", p.MaxOverMin, p.MaxLoad, p.MinLoad), fmt.Sprintf("≤ %.1f", targetMaxOverMin), met(p.MaxOverMin <= targetMaxOverMin))
			row("P6", "max/min after adding / removing an instance",
				fmt.Sprintf("%.3f / %.3f", p.MaxOverMinAfterAdd, p.MaxOverMinAfterRemove), fmt.Sprintf("≤ %.1f", targetMaxOverMin),
				met(p.MaxOverMinAfterAdd <= targetMaxOverMin && p.MaxOverMinAfterRemove <= targetMaxOverMin))
			row("P6", "tenants moved when adding an instance", fmt.Sprintf("%.2f%% (ideal %.2f%%)", 100*p.AddedInstanceMovedShare, 100*p.AddedInstanceIdealShare),
				"≤ ideal + 2%", met(p.AddedInstanceMovedShare <= p.AddedInstanceIdealShare+targetMovedSlack))
			row("P6", "tenants moved when removing an instance", fmt.Sprintf("%.2f%% (ideal %.2f%%)", 100*p.RemovedInstanceMovedShare, 100*p.RemovedInstanceIdealShare),
				"≤ ideal + 2%", met(p.RemovedInstanceMovedShare <= p.RemovedInstanceIdealShare+targetMovedSlack))
			row("P6", "simulation time", fmt.Sprintf("%.2f s", p.Seconds), "", "")
		}
	}
	if len(res.Throughput) > 1 {
		fmt.Fprintf(&b, "\nP1 by size (a fresh stack each):\n\n| N | floor: Applications / statuses | pipeline: Applications / statuses | ratio: Applications / statuses | statements per deployment |\n| --- | --- | --- | --- | --- |\n")
		tps := slices.Clone(res.Throughput)
		slices.SortFunc(tps, func(a, b Throughput) int { return a.N - b.N })
		for _, tp := range tps {
			if tp.Error != "" {
				fmt.Fprintf(&b, "| %d | error: %s | | | |\n", tp.N, tp.Error)
				continue
			}
			fmt.Fprintf(&b, "| %s | %.2f / %.2f s | %.2f / %.2f s | %.2f× / %.2f× | %.1f |\n", sizeAndRun(tp, c.Repeat), tp.FloorAppsSeconds, tp.FloorStatusSeconds,
				tp.PipelineAppsSeconds, tp.PipelineStatusSeconds, tp.AppsRatio, tp.StatusRatio, tp.StatementsPerDeployment)
		}
	}
	if c.Repeat > 1 {
		fmt.Fprintf(&b, "\nP1 over %d runs at each size, median (range) of the ratio to the floor of the same run:\n\n"+
			"| N | runs | Applications | statuses | median ≤ %.1f× |\n| --- | --- | --- | --- | --- |\n", c.Repeat, targetRatio)
		for _, s := range ratioSpreads(res.Throughput) {
			fmt.Fprintf(&b, "| %d | %d | %s | %s | %s |\n", s.N, s.Runs, s.Apps, s.Status, met(s.Apps.Median <= targetRatio && s.Status.Median <= targetRatio))
		}
	}
	if len(charts) > 0 {
		b.WriteString("\n")
		for _, ch := range charts {
			fmt.Fprintf(&b, "![%s](%s)\n", strings.TrimSuffix(ch, ".png"), ch)
		}
	}
	return b.String()
}

func latencyChart(l *Latency) chart {
	sorted := slices.Clone(l.SamplesMillis)
	slices.Sort(sorted)
	cdf := series{name: "share of status changes shown within x ms", color: palette[0]}
	for i, v := range sorted {
		cdf.xs, cdf.ys = append(cdf.xs, v), append(cdf.ys, float64(i+1)/float64(len(sorted)))
	}
	ch := chart{title: fmt.Sprintf("P2: Application status change to GitOpsDeployment status (%d samples)", len(sorted)),
		xLabel: "latency (ms)", yLabel: "cumulative share", series: []series{cdf}, yMax: 1, legendBottomRight: true}
	for i, q := range []struct {
		name string
		v    float64
	}{{"p50", l.P50}, {"p95", l.P95}, {"p99", l.P99}} {
		ch.series = append(ch.series, series{name: fmt.Sprintf("%s = %.0f ms", q.name, q.v), color: palette[i+1],
			xs: []float64{q.v, q.v}, ys: []float64{0, 1}, dashed: true})
	}
	return ch
}

func scalingChart(tps []Throughput) chart {
	mk := func(name string, i int, dashed bool, f func(Throughput) float64) series {
		s := series{name: name, color: palette[i], dashed: dashed, points: true}
		for _, tp := range tps {
			s.xs, s.ys = append(s.xs, float64(tp.N)), append(s.ys, f(tp))
		}
		return s
	}
	return chart{title: "P1: time until N Applications exist / N statuses populated", xLabel: "N", yLabel: "seconds", xFromZero: true,
		series: []series{
			mk("floor: Applications exist", 0, false, func(tp Throughput) float64 { return tp.FloorAppsSeconds }),
			mk("floor: statuses written", 2, false, func(tp Throughput) float64 { return tp.FloorStatusSeconds }),
			mk("pipeline: Applications exist", 1, false, func(tp Throughput) float64 { return tp.PipelineAppsSeconds }),
			mk("pipeline: statuses populated", 3, false, func(tp Throughput) float64 { return tp.PipelineStatusSeconds }),
			mk(fmt.Sprintf("target: %.1f x floor statuses", targetRatio), 4, true, func(tp Throughput) float64 { return targetRatio * tp.FloorStatusSeconds }),
		}}
}

// cpuPerDeployment lists each program's CPU per deployment in the pipeline and the floor
// phase, in milliseconds, and the totals; programs without CPU in either are left out.
func cpuPerDeployment(pipeline, floor map[string]float64, n int) string {
	ms := func(seconds float64) float64 { return 1000 * seconds / float64(n) }
	var parts []string
	var total, floorTotal float64
	for _, p := range programs {
		if pipeline[p] < 0.005 && floor[p] < 0.005 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %.1f / %.1f", p, ms(pipeline[p]), ms(floor[p])))
		total += pipeline[p]
		floorTotal += floor[p]
	}
	return strings.Join(append(parts, fmt.Sprintf("total %.1f / %.1f ms", ms(total), ms(floorTotal))), ", ")
}

func sizeAndRun(tp Throughput, repeat int) string {
	if repeat <= 1 {
		return fmt.Sprint(tp.N)
	}
	return fmt.Sprintf("%d (run %d)", tp.N, tp.Run+1)
}

// spread is the median and range of a ratio over runs.
type spread struct{ Median, Min, Max float64 }

func (s spread) String() string { return fmt.Sprintf("%.2f× (%.2f–%.2f)", s.Median, s.Min, s.Max) }

func spreadOf(vs []float64) spread {
	slices.Sort(vs)
	median := vs[len(vs)/2]
	if len(vs)%2 == 0 {
		median = (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
	}
	return spread{Median: median, Min: vs[0], Max: vs[len(vs)-1]}
}

// ratioSpread is how the ratios to the floor spread over the successful runs at one size.
type ratioSpread struct {
	N, Runs      int
	Apps, Status spread
}

// ratioSpreads returns the spread of the ratios at each size with a successful run, by size.
func ratioSpreads(tps []Throughput) []ratioSpread {
	apps, statuses := map[int][]float64{}, map[int][]float64{}
	for _, tp := range tps {
		if tp.Error == "" {
			apps[tp.N] = append(apps[tp.N], tp.AppsRatio)
			statuses[tp.N] = append(statuses[tp.N], tp.StatusRatio)
		}
	}
	var out []ratioSpread
	for _, n := range slices.Sorted(maps.Keys(apps)) {
		out = append(out, ratioSpread{N: n, Runs: len(apps[n]), Apps: spreadOf(apps[n]), Status: spreadOf(statuses[n])})
	}
	return out
}
