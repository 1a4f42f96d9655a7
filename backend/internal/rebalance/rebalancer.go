package rebalance

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/periodic"
	"github.com/gitops-service/gitops-service/backend-shared/queue"
	"github.com/gitops-service/gitops-service/backend/internal/placement"
)

// Defaults of Rebalancer.
const (
	// DefaultInterval is the safety net: a change of the engine instances runs the
	// rebalancer at once (see Rebalancer).
	DefaultInterval = 10 * time.Minute
	// DefaultFollowUp is how soon a run that left planned moves undone (over MaxMoves, or
	// tenants still moving) or failed runs again: at most MaxMoves moves start a minute,
	// as the previous fixed one-minute interval allowed.
	DefaultFollowUp = time.Minute
	// DefaultMaxMoves bounds the tenants one run starts moving: a drained instance empties
	// over several runs instead of loading both instances' agents and Argo CDs at once.
	DefaultMaxMoves = 10
)

// Planner decides which tenants to move (placement.BoundedLoad).
type Planner interface {
	Plan(tenants []db.Tenant, instances []db.EngineInstance) []placement.Move
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
//
// It is a controller of one item, Key, on the leader: it runs when it starts, when the
// engine instances change (the database notifies, and the backend's listener puts Key into
// Queue), DefaultFollowUp after a run that failed or left moves undone, and every Interval
// (jittered) as a safety net. A balanced, quiet installation costs no statement between those.
type Rebalancer struct {
	Mover    *Mover
	Planner  Planner
	Interval time.Duration
	MaxMoves int
	// Queue hands the controller's workqueue to the listener.
	Queue queue.Handle[string]
}

// Key is the rebalancer's only work item.
const Key = "rebalance"

// SetupWithManager adds the rebalancer's controller; a zero Interval disables it.
func (r *Rebalancer) SetupWithManager(mgr ctrl.Manager) error {
	if r.Interval <= 0 {
		return nil
	}
	return queue.OneItem(mgr, "rebalance", Key, &r.Queue, r.Reconcile)
}

// Wake runs the rebalancer soon: the engine instances changed.
func (r *Rebalancer) Wake() { r.Queue.Add(Key) }

// Reconcile runs once and says when to run again. A failure waits DefaultFollowUp too,
// not the workqueue's quick retries: each run may start MaxMoves moves.
func (r *Rebalancer) Reconcile(ctx context.Context, _ string) (reconcile.Result, error) {
	_, undone, err := r.Run(ctx)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Rebalancing failed")
	}
	if err != nil || undone > 0 {
		return reconcile.Result{RequeueAfter: DefaultFollowUp}, nil
	}
	return reconcile.Result{RequeueAfter: periodic.Jittered(r.Interval)}, nil
}

// Run plans once and starts up to MaxMoves moves; it returns the moves started and how
// many planned moves it left undone.
func (r *Rebalancer) Run(ctx context.Context) ([]placement.Move, int, error) {
	idb, store := r.Mover.DB, r.Mover.Store
	instances, err := store.ListEngineInstances(ctx, idb)
	if err != nil {
		return nil, 0, fmt.Errorf("listing engine instances: %w", err)
	}
	tenants, err := store.ListTenants(ctx, idb)
	if err != nil {
		return nil, 0, fmt.Errorf("listing tenants: %w", err)
	}
	plan := r.Planner.Plan(tenants, instances)
	if len(plan) == 0 {
		return nil, 0, nil // balanced: the usual run, two statements
	}
	moving, err := store.MovingTenantIDs(ctx, idb)
	if err != nil {
		return nil, 0, fmt.Errorf("listing moving tenants: %w", err)
	}
	limit := r.MaxMoves
	if limit <= 0 {
		limit = DefaultMaxMoves
	}
	log := ctrl.LoggerFrom(ctx)
	var started []placement.Move
	var errs []error
	for _, mv := range plan {
		if len(started) == limit {
			break
		}
		if moving[mv.TenantID] {
			continue
		}
		moved, err := r.Mover.Move(ctx, mv.TenantID, mv.To)
		if moved == nil {
			movesTotal.WithLabelValues("failed").Inc()
			if !errors.Is(err, db.ErrMoveInProgress) {
				errs = append(errs, err)
			}
			continue
		}
		if err != nil {
			// Committed, but its Operation CRs were not all created: the move counts as
			// started (the agents' sweeps and the backend's next start create them).
			errs = append(errs, err)
		}
		movesTotal.WithLabelValues("started").Inc()
		log.Info("Moving a tenant to another engine instance", "tenant", mv.TenantID, "from", mv.From, "to", mv.To)
		started = append(started, mv)
	}
	return started, len(plan) - len(started), errors.Join(errs...)
}
