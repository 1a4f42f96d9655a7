package main

import (
	"context"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/gitops-service/gitops-service/tests-e2e/stack"
)

// idle (P3) waits until the binaries have settled, then counts over a quiet window the
// database statements (pg_stat_statements) and the Kubernetes API requests of each binary
// (client-go's rest_client_requests_total on its /metrics).
func (b *bench) idle(ctx context.Context, size int) (*Idle, error) {
	progress("P3: waiting for the binaries to settle (at least %s, then empty work queues)", b.cfg.Settle)
	settled, err := b.settle(ctx)
	if err != nil {
		return nil, err
	}
	res := &Idle{SettleSeconds: settled.Seconds(), Deployments: size, APIRequestsPerMinute: map[string]float64{},
		APIRequestsByMethod: map[string]map[string]float64{}, ReconcilesPerMinute: map[string]map[string]float64{},
		CPUSeconds: map[string]float64{}}
	progress("P3: idle window of %s", b.cfg.IdleWindow)
	// Scraping /metrics runs the backend's and the agent's database-backed gauges: scrape
	// before the reset and after the count, so that the window holds only what the service
	// does on its own.
	before, err := b.s.ScrapeAll(ctx)
	if err != nil {
		return nil, err
	}
	if err := resetStatements(ctx, b.s.DatabaseURL); err != nil {
		return nil, err
	}
	cpuBefore := stack.CPUSecondsByProgram(programs)
	start := time.Now()
	select {
	case <-time.After(b.cfg.IdleWindow):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	statements, err := countStatements(ctx, b.s.DatabaseURL)
	if err != nil {
		return nil, err
	}
	window := time.Since(start)
	cpuAfter := stack.CPUSecondsByProgram(programs)
	if res.TopStatements, err = topStatements(ctx, b.s.DatabaseURL, 10); err != nil {
		return nil, err
	}
	after, err := b.s.ScrapeAll(ctx)
	if err != nil {
		return nil, err
	}
	res.WindowSeconds, res.Statements = window.Seconds(), statements
	res.StatementsPerDeploymentHour = float64(statements) / float64(size) / window.Hours()
	perMinute := func(d float64) float64 { return d / window.Minutes() }
	for name := range b.s.MetricsAddr {
		res.CPUSeconds[name] = cpuAfter[name] - cpuBefore[name]
		byMethod := diffByLabel(before[name], after[name], "rest_client_requests_total", "method")
		res.APIRequestsByMethod[name] = map[string]float64{}
		for method, d := range byMethod {
			res.APIRequestsPerMinute[name] += perMinute(d)
			res.APIRequestsByMethod[name][method] = perMinute(d)
		}
		res.ReconcilesPerMinute[name] = map[string]float64{}
		for controller, d := range diffByLabel(before[name], after[name], "controller_runtime_reconcile_total", "controller") {
			res.ReconcilesPerMinute[name][controller] = perMinute(d)
		}
	}
	return res, nil
}

// settle waits at least cfg.Settle, then until every work queue of both binaries has been
// empty for three polls in a row (at most five minutes more), and returns how long it took.
func (b *bench) settle(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	select {
	case <-time.After(b.cfg.Settle):
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	deadline := time.Now().Add(5 * time.Minute)
	for quiet := 0; quiet < 3; {
		scrapes, err := b.s.ScrapeAll(ctx)
		if err != nil {
			return 0, err
		}
		depth := 0.0
		for _, mfs := range scrapes {
			for _, d := range sumByLabel(mfs, "workqueue_depth", "name") {
				depth += d
			}
		}
		if depth == 0 {
			quiet++
		} else {
			quiet = 0
		}
		if time.Now().After(deadline) {
			progress("P3: work queues still hold %.0f items; measuring anyway", depth)
			break
		}
		time.Sleep(time.Second)
	}
	return time.Since(start), nil
}

// sumByLabel sums a counter or gauge family's samples by the value of one label.
func sumByLabel(mfs map[string]*dto.MetricFamily, family, label string) map[string]float64 {
	out := map[string]float64{}
	for _, m := range mfs[family].GetMetric() {
		key := ""
		for _, l := range m.GetLabel() {
			if l.GetName() == label {
				key = l.GetValue()
			}
		}
		out[key] += m.GetCounter().GetValue() + m.GetGauge().GetValue()
	}
	return out
}

// diffByLabel is after - before of sumByLabel.
func diffByLabel(before, after map[string]*dto.MetricFamily, family, label string) map[string]float64 {
	b, out := sumByLabel(before, family, label), sumByLabel(after, family, label)
	for k, v := range b {
		out[k] -= v
	}
	return out
}
