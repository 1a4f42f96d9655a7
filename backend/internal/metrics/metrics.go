// Package metrics exports the backend's gauges: how many GitOpsDeployments the service
// manages and how many are in each sync and health status, how many Operations are in each
// state and how many tenants each engine instance holds. They are read from the database when Prometheus scrapes, with no per-object
// labels, so their cost does not grow with scrapes between changes nor their cardinality
// with tenants. It also holds the status propagation histogram, observed by the
// GitOpsDeployment controller.
package metrics

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/uptrace/bun"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/gitops-service/gitops-service/backend-shared/db"
)

var (
	deploymentsDesc = prometheus.NewDesc("gitops_backend_applications",
		"Applications (GitOpsDeployments) the service manages.", nil, nil)
	operationsDesc = prometheus.NewDesc("gitops_backend_operations",
		"Operations by state (Waiting, In_Progress, Completed, Failed).", []string{"state"}, nil)
	oldestWaitingDesc = prometheus.NewDesc("gitops_backend_oldest_unfinished_operation_age_seconds",
		"Age of the oldest operation not yet Completed or Failed (0 when none).", nil, nil)
	deploymentsByStatusDesc = prometheus.NewDesc("gitops_deployments",
		"GitOpsDeployments by the sync and health status Argo CD last reported (Unknown until it reports).",
		[]string{"sync_status", "health_status"}, nil)
	tenantsDesc = prometheus.NewDesc("gitops_backend_tenants",
		"Tenants placed on each engine instance (<engine cluster>/<namespace>; \""+Unplaced+"\" for tenants not placed).",
		[]string{"engine_instance"}, nil)
)

// Unplaced is the engine_instance label of the tenants not placed on any engine instance.
const Unplaced = "unplaced"

// StatusPropagation is the backend's part of the status latency: from the cluster-agent's
// write of an application state (application_states.updated_at, set by PostgreSQL's now()
// in the agent's transaction) to the GitOpsDeployment status update that shows it. The
// start is the database's clock and the end the backend's: with both on NTP the skew is
// far below the buckets, and a negative difference is recorded as 0. The agent's part is
// gitops_cluster_agent_status_write_seconds.
var StatusPropagation = prometheus.NewHistogram(prometheus.HistogramOpts{
	Name:    "gitops_backend_status_propagation_seconds",
	Help:    "Time from the cluster-agent's write of an application state to the GitOpsDeployment status update showing it.",
	Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
})

func init() {
	ctrlmetrics.Registry.MustRegister(StatusPropagation)
}

// ObserveStatusPropagation records a status update showing a state written at writtenAt.
func ObserveStatusPropagation(writtenAt time.Time) {
	StatusPropagation.Observe(max(0, time.Since(writtenAt).Seconds()))
}

// Collector reads the gauges from the database on each scrape.
type Collector struct {
	DB  bun.IDB
	Log logr.Logger
	// Leading reports whether this replica is the leader (nil: always). The gauges count
	// the whole database, so only the leader exports them: with several replicas, a sum
	// over them would otherwise count every row once per replica.
	Leading func() bool
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- deploymentsDesc
	ch <- operationsDesc
	ch <- oldestWaitingDesc
	ch <- tenantsDesc
	ch <- deploymentsByStatusDesc
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	if c.Leading != nil && !c.Leading() {
		return
	}
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

	if !c.collectDeploymentsByStatus(ctx, ch) {
		return
	}

	// Engine instances are few; tenants are counted through their engine_instance_id index.
	var placements []struct {
		EngineInstance string `bun:"engine_instance"`
		Count          int    `bun:"count"`
	}
	if err := c.DB.NewRaw(`SELECT ec.name || '/' || ei.namespace_name AS engine_instance, count(t.id) AS count
		FROM engine_instances AS ei
		JOIN engine_clusters AS ec ON ec.id = ei.engine_cluster_id
		LEFT JOIN tenants AS t ON t.engine_instance_id = ei.id
		GROUP BY ec.name, ei.namespace_name
		UNION ALL
		SELECT ?, count(*) FROM tenants WHERE engine_instance_id IS NULL`, Unplaced).Scan(ctx, &placements); err != nil {
		c.Log.Error(err, "reading the tenants gauge")
		return
	}
	for _, p := range placements {
		ch <- prometheus.MustNewConstMetric(tenantsDesc, prometheus.GaugeValue, float64(p.Count), p.EngineInstance)
	}
}

// syncStatuses and healthStatuses are the values application_states accepts: every
// combination is exported, 0 when none, so that a series does not vanish when its last
// deployment changes.
var (
	syncStatuses   = []string{db.SyncStatusSynced, db.SyncStatusOutOfSync, db.SyncStatusUnknown}
	healthStatuses = []string{db.HealthHealthy, db.HealthProgressing, db.HealthDegraded, db.HealthSuspended, db.HealthMissing, db.HealthUnknown}
)

// collectDeploymentsByStatus counts the applications (GitOpsDeployments) by the state the
// cluster-agent last wrote, in one grouped query; one without a state yet is Unknown and
// Unknown. It reports false when the query failed.
func (c *Collector) collectDeploymentsByStatus(ctx context.Context, ch chan<- prometheus.Metric) bool {
	var rows []struct {
		SyncStatus   string `bun:"sync_status"`
		HealthStatus string `bun:"health_status"`
		Count        int    `bun:"count"`
	}
	if err := c.DB.NewRaw(`SELECT coalesce(st.sync_status, ?) AS sync_status, coalesce(st.health_status, ?) AS health_status,
		count(*) AS count
		FROM applications AS app
		LEFT JOIN application_states AS st ON st.application_id = app.id
		GROUP BY 1, 2`, db.SyncStatusUnknown, db.HealthUnknown).Scan(ctx, &rows); err != nil {
		c.Log.Error(err, "reading the deployments gauge")
		return false
	}
	type key struct{ sync, health string }
	counts := map[key]int{}
	for _, s := range syncStatuses {
		for _, h := range healthStatuses {
			counts[key{s, h}] = 0
		}
	}
	for _, r := range rows {
		counts[key{r.SyncStatus, r.HealthStatus}] = r.Count
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(deploymentsByStatusDesc, prometheus.GaugeValue, float64(n), k.sync, k.health)
	}
	return true
}
