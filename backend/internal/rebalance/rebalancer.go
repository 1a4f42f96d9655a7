package rebalance

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/periodic"
	"github.com/gitops-service/gitops-service/backend/internal/tenancy"
)

// Defaults of Rebalancer.
const (
	DefaultInterval = time.Minute
	// DefaultMaxMoves bounds the tenants one run starts moving: a drained instance empties
	// over several runs instead of loading both instances' agents and Argo CDs at once.
	DefaultMaxMoves = 10
)

// Planner decides which tenants to move (tenancy.BoundedLoad).
type Planner interface {
	Plan(tenants []db.Tenant, instances []db.EngineInstance) []tenancy.Move
}

var movesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "gitops_backend_tenant_moves_total",
	Help: "Tenants the rebalancer started moving to another engine instance, by result (started, failed).",
}, []string{"result"})

func init() {
	ctrlmetrics.Registry.MustRegister(movesTotal)
	movesTotal.WithLabelValues("started")
	movesTotal.WithLabelValues("failed")
}

// Rebalancer moves tenants off draining (or weight 0, or removed) instances and from
// instances above their bound to those below, as Planner decides, at most MaxMoves per run.
// Tenants still moving are left out of a run: their previous instance has not let their
// Applications go yet.
type Rebalancer struct {
	Mover    *Mover
	Planner  Planner
	Interval time.Duration
	MaxMoves int
}

// Task runs the rebalancer every Interval (jittered; 0 disables it), on the leader.
func (r *Rebalancer) Task() *periodic.Task {
	return &periodic.Task{Name: "rebalance", Interval: r.Interval, Run: func(ctx context.Context) error {
		_, err := r.Run(ctx)
		return err
	}}
}

// Run plans once and starts up to MaxMoves moves; it returns the moves started.
func (r *Rebalancer) Run(ctx context.Context) ([]tenancy.Move, error) {
	idb, store := r.Mover.DB, r.Mover.Store
	instances, err := store.ListEngineInstances(ctx, idb)
	if err != nil {
		return nil, fmt.Errorf("listing engine instances: %w", err)
	}
	tenants, err := store.ListTenants(ctx, idb)
	if err != nil {
		return nil, fmt.Errorf("listing tenants: %w", err)
	}
	plan := r.Planner.Plan(tenants, instances)
	if len(plan) == 0 {
		return nil, nil // balanced: the usual run, two statements
	}
	moving, err := store.MovingTenantIDs(ctx, idb)
	if err != nil {
		return nil, fmt.Errorf("listing moving tenants: %w", err)
	}
	limit := r.MaxMoves
	if limit <= 0 {
		limit = DefaultMaxMoves
	}
	log := ctrl.LoggerFrom(ctx)
	var started []tenancy.Move
	var errs []error
	for _, mv := range plan {
		if len(started) == limit {
			break
		}
		if moving[mv.TenantID] {
			continue
		}
		if _, err := r.Mover.Move(ctx, mv.TenantID, mv.To); err != nil {
			movesTotal.WithLabelValues("failed").Inc()
			if !errors.Is(err, db.ErrMoveInProgress) {
				errs = append(errs, err)
			}
			continue
		}
		movesTotal.WithLabelValues("started").Inc()
		log.Info("Moving a tenant to another engine instance", "tenant", mv.TenantID, "from", mv.From, "to", mv.To)
		started = append(started, mv)
	}
	return started, errors.Join(errs...)
}
