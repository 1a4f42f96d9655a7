// Package metrics holds the cluster-agent's own Prometheus metrics, registered with
// controller-runtime's registry (served on --metrics-bind-address). They carry no
// per-object labels: resource_type and outcome take a handful of values each.
// controller-runtime already exports reconcile counts, errors and durations and the
// workqueue metrics per controller; these measure what it cannot see.
package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Outcomes of an operation handler run.
const (
	OutcomeCompleted = "completed" // the operations finished successfully
	OutcomeFailed    = "failed"    // the operations finished as Failed
	OutcomeWaiting   = "waiting"   // not done yet (waiting for Argo CD); requeued
	OutcomeError     = "error"     // the handler returned an error; retried
)

// Outcomes lists every outcome, to initialise the counter's series.
var Outcomes = []string{OutcomeCompleted, OutcomeFailed, OutcomeWaiting, OutcomeError}

// latencyBuckets cover a few milliseconds (one local transaction) to a minute.
var latencyBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

var (
	// StatusWrite is the cluster-agent's part of the status latency: from the start of
	// the Application status controller's reconcile (the Application event, once
	// dequeued) to the commit of the changed application_states row. The time the event
	// waited in the queue is controller-runtime's workqueue_queue_duration_seconds
	// {name="application-status"}; the backend's part is
	// gitops_backend_status_propagation_seconds.
	StatusWrite = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "gitops_cluster_agent_status_write_seconds",
		Help:    "Time from the start of an Argo CD Application status reconcile to the commit of the changed application state in the database.",
		Buckets: latencyBuckets,
	})

	// StatusHeld is the time the status of a burst's Applications waited for the burst
	// to be carried out (burst.Hold): part of the status latency that StatusWrite leaves
	// out.
	StatusHeld = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "gitops_cluster_agent_status_held_seconds_total",
		Help: "Time the recording of the status of a burst's Argo CD Applications was deferred until the burst was carried out (at most --status-hold per burst).",
	})

	// OperationsProcessed counts the Operation controller's handler runs. One run
	// carries out every pending operation of one resource (the workqueue collapses them).
	OperationsProcessed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gitops_cluster_agent_operation_runs_total",
		Help: "Operation handler runs (each carries out the pending operations of one resource), by resource type and outcome (completed, failed, waiting, error).",
	}, []string{"resource_type", "outcome"})

	// OperationDuration is the time a handler takes to make Argo CD match the database.
	OperationDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "gitops_cluster_agent_operation_run_seconds",
		Help:    "Time an operation handler run takes, by resource type.",
		Buckets: latencyBuckets,
	}, []string{"resource_type"})

	// DriftReverted counts Argo CD Applications whose spec was changed outside the service
	// and put back.
	DriftReverted = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "gitops_cluster_agent_application_drift_reverted_total",
		Help: "Argo CD Applications whose spec was changed outside the service and reverted to the database's.",
	})

	// SyncDuration is how long Argo CD's syncs of the service's Applications take: the
	// finishedAt - startedAt of each operation Argo CD reports finished, observed once per
	// operation by the Application status controller (the one that records it).
	SyncDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "gitops_cluster_agent_sync_duration_seconds",
		Help:    "Duration of the Argo CD sync operations of the service's Applications (finishedAt - startedAt), by the phase they ended in (Succeeded, Failed, Error).",
		Buckets: syncBuckets,
	}, []string{"phase"})
)

// SyncPhases are the phases a finished Argo CD operation ends in: SyncDuration's labels.
var SyncPhases = []string{"Succeeded", "Failed", "Error"}

// syncBuckets cover half a second (a ConfigMap) to half an hour (hooks, large
// applications, waves waiting for health). Argo CD's times have a resolution of a second.
var syncBuckets = []float64{0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 900, 1800}

func init() {
	ctrlmetrics.Registry.MustRegister(StatusWrite, StatusHeld, OperationsProcessed, OperationDuration, DriftReverted, SyncDuration)
	for _, phase := range SyncPhases {
		SyncDuration.WithLabelValues(phase)
	}
}

// InitResourceTypes creates the series of each resource type (with zero values), so that
// they exist before the first operation and rates over them are defined.
func InitResourceTypes(resourceTypes ...string) {
	for _, rt := range resourceTypes {
		for _, o := range Outcomes {
			OperationsProcessed.WithLabelValues(rt, o)
		}
		OperationDuration.WithLabelValues(rt)
	}
}

// ObserveOperation records one handler run of resourceType that took d and ended as outcome.
func ObserveOperation(resourceType, outcome string, d time.Duration) {
	OperationsProcessed.WithLabelValues(resourceType, outcome).Inc()
	OperationDuration.WithLabelValues(resourceType).Observe(d.Seconds())
}
