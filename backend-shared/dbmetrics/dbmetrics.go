// Package dbmetrics exports the statistics of a process's database pool (database/sql's
// DBStats, which bun's *bun.DB exposes over the pgx stdlib driver) as Prometheus metrics.
// Each binary serves its own metrics endpoint, so the metrics carry no binary label.
package dbmetrics

import (
	"database/sql"
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	connectionsDesc = prometheus.NewDesc("gitops_db_connections",
		"Open connections of the database pool by state (in_use, idle).", []string{"state"}, nil)
	maxOpenDesc = prometheus.NewDesc("gitops_db_max_open_connections",
		"Maximum number of open connections of the database pool.", nil, nil)
	waitCountDesc = prometheus.NewDesc("gitops_db_wait_count_total",
		"Times a query waited for a free connection of the database pool.", nil, nil)
	waitSecondsDesc = prometheus.NewDesc("gitops_db_wait_seconds_total",
		"Total time queries waited for a free connection of the database pool.", nil, nil)
)

// StatsSource is a database pool: *sql.DB, or *bun.DB which embeds it.
type StatsSource interface {
	Stats() sql.DBStats
}

// Collector reads a pool's statistics on each scrape (no database round trip).
type Collector struct {
	DB StatsSource
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- connectionsDesc
	ch <- maxOpenDesc
	ch <- waitCountDesc
	ch <- waitSecondsDesc
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	s := c.DB.Stats()
	ch <- prometheus.MustNewConstMetric(connectionsDesc, prometheus.GaugeValue, float64(s.InUse), "in_use")
	ch <- prometheus.MustNewConstMetric(connectionsDesc, prometheus.GaugeValue, float64(s.Idle), "idle")
	ch <- prometheus.MustNewConstMetric(maxOpenDesc, prometheus.GaugeValue, float64(s.MaxOpenConnections))
	ch <- prometheus.MustNewConstMetric(waitCountDesc, prometheus.CounterValue, float64(s.WaitCount))
	ch <- prometheus.MustNewConstMetric(waitSecondsDesc, prometheus.CounterValue, s.WaitDuration.Seconds())
}

// Register registers a Collector of db with reg. A process has one pool, so a second
// registration (several backends or agents in one test process) is ignored: the first
// pool's statistics are exported.
func Register(reg prometheus.Registerer, db StatsSource) error {
	err := reg.Register(&Collector{DB: db})
	var already prometheus.AlreadyRegisteredError
	if errors.As(err, &already) {
		return nil
	}
	return err
}
