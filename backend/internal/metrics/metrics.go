// Package metrics exports the backend's gauges: how many GitOpsDeployments the service
// manages and how many Operations are in each state. They are read from the database when
// Prometheus scrapes, with no per-object labels, so their cost does not grow with scrapes
// between changes nor their cardinality with tenants.
package metrics

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/uptrace/bun"
)

var (
	deploymentsDesc = prometheus.NewDesc("gitops_backend_applications",
		"Applications (GitOpsDeployments) the service manages.", nil, nil)
	operationsDesc = prometheus.NewDesc("gitops_backend_operations",
		"Operations by state (Waiting, In_Progress, Completed, Failed).", []string{"state"}, nil)
	oldestWaitingDesc = prometheus.NewDesc("gitops_backend_oldest_unfinished_operation_age_seconds",
		"Age of the oldest operation not yet Completed or Failed (0 when none).", nil, nil)
)

// Collector reads the gauges from the database on each scrape.
type Collector struct {
	DB  bun.IDB
	Log logr.Logger
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- deploymentsDesc
	ch <- operationsDesc
	ch <- oldestWaitingDesc
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var apps int
	if err := c.DB.NewRaw("SELECT count(*) FROM applications").Scan(ctx, &apps); err != nil {
		c.Log.Error(err, "reading the applications gauge")
		return
	}
	ch <- prometheus.MustNewConstMetric(deploymentsDesc, prometheus.GaugeValue, float64(apps))

	var rows []struct {
		State string `bun:"state"`
		Count int    `bun:"count"`
	}
	if err := c.DB.NewRaw("SELECT state, count(*) AS count FROM operations GROUP BY state").Scan(ctx, &rows); err != nil {
		c.Log.Error(err, "reading the operations gauge")
		return
	}
	counts := map[string]int{"Waiting": 0, "In_Progress": 0, "Completed": 0, "Failed": 0}
	for _, r := range rows {
		counts[r.State] = r.Count
	}
	for state, n := range counts {
		ch <- prometheus.MustNewConstMetric(operationsDesc, prometheus.GaugeValue, float64(n), state)
	}
	var age float64
	if err := c.DB.NewRaw(`SELECT coalesce(extract(epoch FROM now() - min(created_at)), 0)::float8 FROM operations
		WHERE state IN ('Waiting', 'In_Progress')`).Scan(ctx, &age); err != nil {
		c.Log.Error(err, "reading the oldest operation gauge")
		return
	}
	ch <- prometheus.MustNewConstMetric(oldestWaitingDesc, prometheus.GaugeValue, age)
}
