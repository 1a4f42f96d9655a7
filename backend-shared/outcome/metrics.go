package outcome

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	outcomes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gitops_reconcile_outcomes_total",
		Help: "Reconciles by kind and how they ended: ready, working, waiting, stalled or internal_error.",
	}, []string{"kind", "outcome"})
	statusWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gitops_status_writes_total",
		Help: "Status patches by kind and result (written, stale, gone, failed); reconciles that change nothing a user sees write none.",
	}, []string{"kind", "result"})
)

func init() { ctrlmetrics.Registry.MustRegister(outcomes, statusWrites) }

// outcomeOf names how a reconcile ended, for gitops_reconcile_outcomes_total.
func outcomeOf(p Progress, internal bool) string {
	switch {
	case internal:
		return "internal_error"
	case p.Stalled:
		return "stalled"
	case p.Reconciling:
		return "working"
	case p.Ready == "True":
		return "ready"
	default:
		return "waiting"
	}
}
