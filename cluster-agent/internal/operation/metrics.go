package operation

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Results of the operations counter.
const (
	resultCompleted = "completed"
	resultFailed    = "failed"
	resultRejected  = "rejected"
)

var (
	operationsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gitops_cluster_agent_operations_total",
		Help: "Operations the cluster-agent finished, by resource type and result (completed, failed, rejected).",
	}, []string{"resource_type", "result"})

	operationDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "gitops_cluster_agent_operation_duration_seconds",
		Help:    "Time from an operation's creation to its completion or failure, by resource type.",
		Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600},
	}, []string{"resource_type"})
)

func init() {
	metrics.Registry.MustRegister(operationsTotal, operationDuration)
}
