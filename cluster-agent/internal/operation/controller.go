// Package operation is the cluster-agent's Operation controller. The backend signals a
// change by writing an Operation row and, unless the engine instance's signal is already up,
// raising it with an Operation CR (holding only the row's id) in the engine instance's
// namespace. On a CR the controller takes the instance's signal: it queues the resource of
// every Waiting operation, so that the workqueue deduplicates and serialises all the
// operations of one resource, keeps taking new ones while they arrive, and takes the signal
// down once none came for a moment. Each resource's Handler makes Argo CD match the database;
// the outcome goes on the rows (notifying the backend). A CR's status is written only when
// the CR is rejected.
package operation

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/uptrace/bun"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/crashpoint"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/notify"
	"github.com/gitops-service/gitops-service/backend-shared/manageropts"
	"github.com/gitops-service/gitops-service/backend-shared/queue"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/burst"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/engine"
	agentmetrics "github.com/gitops-service/gitops-service/cluster-agent/internal/metrics"
)

// ControllerName names the controller in logs and metrics.
const ControllerName = "operation"

// Messages of the operations' human-readable state set by the controller itself.
const (
	MessageInternalError = "an internal error occurred in the cluster-agent; retrying"
	// MessageGaveUp is the state of an operation that kept failing for the retry limit.
	MessageGaveUp = "failed: the cluster-agent could not carry this out for %s (it kept failing; see its log)"
)

// DefaultRetryLimit is how long a failing operation is retried before it is marked Failed.
const DefaultRetryLimit = time.Hour

// mapTimeout bounds the database reads of the event handler.
const mapTimeout = 10 * time.Second

// While the signal is up the controller looks for new Waiting operations every
// SignalPollInterval, and takes the signal down after signalQuietPolls looks found none:
// a burst of changes costs the backend one Operation CR, and a change in a burst waits at
// most one interval.
const (
	SignalPollInterval = 50 * time.Millisecond
	signalQuietPolls   = 2
)

// During a burst many operations wait at once, so most looks read only the Waiting
// operations created since a little before the newest one taken (signalLookSlack covers
// transactions that committed after a later one started); every signalFullLookEvery-th look,
// and the check before the signal goes down, read them all, so nothing waits longer than
// that for a look that missed it.
const (
	signalLookSlack     = 2 * time.Second
	signalFullLookEvery = 20
)

// Request is the controller's work item. Normally it names a resource (the row an
// operation is about), so that concurrent operations on it collapse into one reconcile.
// Signal asks to take the engine instance's signal. An Operation CR that could not be
// checked (another instance's operation, an unknown id, the database unreachable) is
// queued by its own key: its reconcile checks it again, and either marks it Failed or takes
// the signal.
type Request struct {
	ResourceType db.OperationResourceType
	ResourceID   string
	OperationCR  types.NamespacedName
	Signal       bool
}

// Store is the part of the database the controller uses.
type Store interface {
	GetOperation(ctx context.Context, idb bun.IDB, id string) (*db.Operation, error)
	GetEngineInstance(ctx context.Context, idb bun.IDB, id string) (*db.EngineInstance, error)
	ListPendingOperations(ctx context.Context, idb bun.IDB, engineInstanceID string) ([]db.Operation, error)
	ListOperationsForResource(ctx context.Context, idb bun.IDB, resourceType db.OperationResourceType, resourceID string) ([]db.Operation, error)
	UpdateOperationStates(ctx context.Context, idb bun.IDB, engineInstanceID string, ids []string, state db.OperationState, humanReadable, notifyChannel string) ([]db.Operation, error)
	ListWaitingOperations(ctx context.Context, idb bun.IDB, engineInstanceID string) ([]db.Operation, error)
	ListWaitingOperationsSince(ctx context.Context, idb bun.IDB, engineInstanceID string, since time.Time) ([]db.Operation, error)
	ReleaseSignal(ctx context.Context, idb bun.IDB, engineInstanceID string, taken func(id string) bool) ([]db.Operation, error)
}

// Reconciler carries out the operations of the agent's engine instance.
type Reconciler struct {
	// Client reads Operation CRs from the manager's cache and writes their status.
	Client   client.Client
	DB       bun.IDB
	Store    Store
	Identity engine.Identity
	// Handlers by resource type; an operation of a type without a handler fails.
	Handlers map[db.OperationResourceType]Handler
	// RetryLimit is how long after its creation an operation whose handler keeps
	// returning errors is given up on (marked Failed); 0 retries forever.
	RetryLimit time.Duration
	// MaxConcurrentReconciles is how many resources are worked on at once (default 1).
	MaxConcurrentReconciles int
	// SkipNameValidation allows several managers in one process (tests).
	SkipNameValidation bool
	// Burst is held from the first operation the signal queues until the signal is down
	// and every resource it queued was worked on once, so that the status of the burst's
	// Applications is recorded after the burst's work (nil: never held).
	Burst *burst.Hold

	queue queue.Handle[Request]
	// taken holds the Waiting operations queued while the signal is up (only the signal's
	// reconcile, never concurrent with itself, uses it), newest the latest creation time
	// among them; quiet counts looks that found none, looks all looks.
	taken  map[string]bool
	newest time.Time
	quiet  int
	looks  int
}

// Requeue queues the resource of a pending operation again. The sweep calls it for an
// operation that nothing else would bring back (a state write the database lost, an
// operation stuck for longer than the sweep's grace period, or one the sweep wrote itself).
// Before the controller runs it does nothing.
func (r *Reconciler) Requeue(op *db.Operation) {
	r.queue.Add(Request{ResourceType: op.ResourceType, ResourceID: op.ResourceID})
}

// TakeSignal queues the taking of the engine instance's signal: the sweep calls it when the
// signal is up or an operation is Waiting (a signal whose CR was never created, or one the
// database brought back by losing the transaction that took it down).
func (r *Reconciler) TakeSignal() { r.queue.Add(Request{Signal: true}) }

// +kubebuilder:rbac:groups=managed-gitops.redhat.com,resources=operations,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=managed-gitops.redhat.com,resources=operations/status,verbs=get;update;patch

// SetupWithManager registers the controller: Operation CR create events (including the
// initial list, which replays every existing CR on start) and a one-off resync of the
// instance's pending operations and its signal when the controller starts.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	onCreate := predicate.TypedFuncs[*v1.Operation]{
		CreateFunc:  func(event.TypedCreateEvent[*v1.Operation]) bool { return true },
		GenericFunc: func(event.TypedGenericEvent[*v1.Operation]) bool { return true },
		UpdateFunc:  func(event.TypedUpdateEvent[*v1.Operation]) bool { return false },
		DeleteFunc:  func(event.TypedDeleteEvent[*v1.Operation]) bool { return false },
	}
	crs := source.TypedKind[*v1.Operation, Request](mgr.GetCache(), &v1.Operation{},
		handler.TypedEnqueueRequestsFromMapFunc(r.mapOperation), onCreate)
	base := mgr.GetLogger().WithValues("controller", ControllerName)
	opts := controller.TypedOptions[Request]{
		MaxConcurrentReconciles: r.MaxConcurrentReconciles,
		RateLimiter:             manageropts.RetryRateLimiter[Request](),
		LogConstructor: func(req *Request) logr.Logger {
			switch {
			case req == nil:
				return base
			case req.OperationCR.Name != "":
				return base.WithValues("operationCR", req.OperationCR.String())
			case req.Signal:
				return base.WithValues("signal", true)
			default:
				return base.WithValues("resourceType", req.ResourceType, "resourceID", req.ResourceID)
			}
		},
	}
	if r.SkipNameValidation {
		skip := true
		opts.SkipNameValidation = &skip
	}
	for rt := range r.Handlers {
		agentmetrics.InitResourceTypes(string(rt))
	}
	return builder.TypedControllerManagedBy[Request](mgr).
		Named(ControllerName).
		WatchesRawSource(crs).
		WatchesRawSource(source.TypedFunc[Request](r.resync)).
		WatchesRawSource(r.queue.Source()).
		WithOptions(opts).
		Complete(r)
}

// resync queues the taking of the instance's signal when the controller starts, and the
// resources of its pending operations: a signal left up by an agent that stopped before
// taking it down gets no new CR. The signal is queued even when the database cannot be
// read now: its reconcile retries until it can, and takes every Waiting operation.
func (r *Reconciler) resync(ctx context.Context, q workqueue.TypedRateLimitingInterface[Request]) error {
	log := ctrl.LoggerFrom(ctx).WithValues("controller", ControllerName)
	q.Add(Request{Signal: true})
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ops, err := r.Store.ListPendingOperations(ctx, r.DB, r.Identity.InstanceID)
	if err != nil {
		log.Error(err, "Listing pending operations failed; the signal and the sweep bring them back")
		return nil
	}
	for _, op := range ops {
		q.Add(Request{ResourceType: op.ResourceType, ResourceID: op.ResourceID})
	}
	log.V(1).Info("Queued pending operations", "count", len(ops))
	return nil
}

// mapOperation maps an Operation CR to the taking of the signal and to its operation's
// resource when the operation is this instance's and not yet finished (the signal takes
// only Waiting operations; one In_Progress that no queue holds is carried out too); a CR
// to reject goes by its own key.
func (r *Reconciler) mapOperation(ctx context.Context, cr *v1.Operation) []Request {
	ctx, cancel := context.WithTimeout(ctx, mapTimeout)
	defer cancel()
	byCR := []Request{{OperationCR: client.ObjectKeyFromObject(cr)}}
	op, err := r.Store.GetOperation(ctx, r.DB, cr.Spec.OperationID)
	if err != nil {
		return byCR
	}
	reason, err := r.reject(ctx, cr.Namespace, op)
	switch {
	case err != nil:
		return byCR
	case reason != "":
		if statusIs(cr, v1.OperationStateFailed, reason) {
			return nil
		}
		return byCR
	case op.State.Finished():
		return nil
	}
	return []Request{{Signal: true}, {ResourceType: op.ResourceType, ResourceID: op.ResourceID}}
}

// reject says why op is not this instance's ("" when it is).
func (r *Reconciler) reject(ctx context.Context, crNamespace string, op *db.Operation) (string, error) {
	var owner *db.EngineInstance
	if op.EngineInstanceID != r.Identity.InstanceID {
		ei, err := r.Store.GetEngineInstance(ctx, r.DB, op.EngineInstanceID)
		switch {
		case errors.Is(err, db.ErrNotFound):
		case err != nil:
			return "", fmt.Errorf("reading the operation's engine instance: %w", err)
		default:
			owner = ei
		}
	}
	return Reject(r.Identity, crNamespace, op, owner), nil
}

// Reconcile carries out the pending operations of a resource, takes the signal, or checks
// an unmapped CR.
func (r *Reconciler) Reconcile(ctx context.Context, req Request) (ctrl.Result, error) {
	switch {
	case req.OperationCR.Name != "":
		return r.reconcileCR(ctx, req.OperationCR)
	case req.Signal:
		return r.takeSignal(ctx)
	}
	// Once worked on, whatever the outcome, a resource holds its burst no longer: a retry
	// or a wait for Argo CD must not hold the recording of the status it may wait for.
	defer r.Burst.Done(req.ResourceID)
	return r.reconcileResource(ctx, req.ResourceType, req.ResourceID)
}

// takeSignal queues the resources of the Waiting operations not queued yet, and takes the
// signal down once signalQuietPolls looks in a row found none.
func (r *Reconciler) takeSignal(ctx context.Context) (ctrl.Result, error) {
	r.looks++
	full := r.newest.IsZero() || r.looks%signalFullLookEvery == 0
	var waiting []db.Operation
	var err error
	if full {
		waiting, err = r.Store.ListWaitingOperations(ctx, r.DB, r.Identity.InstanceID)
	} else {
		waiting, err = r.Store.ListWaitingOperationsSince(ctx, r.DB, r.Identity.InstanceID, r.newest.Add(-signalLookSlack))
	}
	if err != nil {
		// Not knowing whether more is coming, the burst waits only for what it queued.
		r.Burst.Quiet()
		return ctrl.Result{}, fmt.Errorf("listing waiting operations: %w", err)
	}
	if r.takeWaiting(waiting, full) > 0 || r.quiet < signalQuietPolls {
		return ctrl.Result{RequeueAfter: SignalPollInterval}, nil
	}
	untaken, err := r.Store.ReleaseSignal(ctx, r.DB, r.Identity.InstanceID, func(id string) bool { return r.taken[id] })
	if err != nil {
		r.Burst.Quiet()
		return ctrl.Result{}, fmt.Errorf("taking down the signal: %w", err)
	}
	if len(untaken) > 0 {
		r.takeWaiting(untaken, false)
		return ctrl.Result{RequeueAfter: SignalPollInterval}, nil
	}
	r.taken, r.newest, r.quiet, r.looks = nil, time.Time{}, 0, 0
	r.Burst.Quiet()
	return ctrl.Result{}, nil
}

// takeWaiting queues the resources of the operations of waiting not taken before and
// returns how many were new. A full list of the Waiting operations becomes the taken set
// (an operation no longer Waiting is never Waiting again, so the set stays as small as the
// backlog); a partial one adds to it.
func (r *Reconciler) takeWaiting(waiting []db.Operation, full bool) int {
	taken := r.taken
	if full || taken == nil {
		taken = make(map[string]bool, len(waiting))
	}
	fresh := 0
	for _, op := range waiting {
		if !r.taken[op.ID] {
			r.Burst.Queued(op.ResourceID)
			r.queue.Add(Request{ResourceType: op.ResourceType, ResourceID: op.ResourceID})
			fresh++
		}
		taken[op.ID] = true
		if op.CreatedAt.After(r.newest) {
			r.newest = op.CreatedAt
		}
	}
	r.taken = taken
	if fresh > 0 {
		r.quiet = 0
	} else {
		r.quiet++
	}
	return fresh
}

func (r *Reconciler) reconcileCR(ctx context.Context, key types.NamespacedName) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	cr := &v1.Operation{}
	if err := r.Client.Get(ctx, key, cr); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	op, err := r.Store.GetOperation(ctx, r.DB, cr.Spec.OperationID)
	switch {
	case errors.Is(err, db.ErrNotFound):
		if IsFinal(cr.Status.State) {
			// The row was garbage-collected but its CR was left behind.
			log.V(1).Info("Deleting an Operation CR whose row no longer exists")
			return ctrl.Result{}, client.IgnoreNotFound(r.Client.Delete(ctx, cr))
		}
		return ctrl.Result{}, r.rejectCR(ctx, cr, "", fmt.Sprintf("rejected: operation %s does not exist in the database", cr.Spec.OperationID))
	case errors.Is(err, db.ErrInvalid):
		return ctrl.Result{}, r.rejectCR(ctx, cr, "", "rejected: spec.operationID is not a valid operation id")
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("reading operation %s: %w", cr.Spec.OperationID, err)
	}
	reason, err := r.reject(ctx, cr.Namespace, op)
	if err != nil {
		return ctrl.Result{}, err
	}
	if reason != "" {
		return ctrl.Result{}, r.rejectCR(ctx, cr, op.ResourceType, reason)
	}
	if !op.State.Finished() {
		r.queue.Add(Request{Signal: true})
		r.queue.Add(Request{ResourceType: op.ResourceType, ResourceID: op.ResourceID})
	}
	return ctrl.Result{}, nil
}

// rejectCR marks a CR Failed without touching any row.
func (r *Reconciler) rejectCR(ctx context.Context, cr *v1.Operation, resourceType db.OperationResourceType, reason string) error {
	if statusIs(cr, v1.OperationStateFailed, reason) {
		return nil
	}
	ctrl.LoggerFrom(ctx).Info("Rejected an Operation", "operationID", cr.Spec.OperationID, "reason", reason)
	if resourceType == "" {
		resourceType = "Unknown"
	}
	operationsTotal.WithLabelValues(string(resourceType), resultRejected).Inc()
	return r.patchStatus(ctx, cr, v1.OperationStateFailed, reason)
}

func (r *Reconciler) reconcileResource(ctx context.Context, resourceType db.OperationResourceType, resourceID string) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	all, err := r.Store.ListOperationsForResource(ctx, r.DB, resourceType, resourceID)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("listing operations: %w", err)
	}
	var pending []db.Operation
	for _, op := range all {
		if op.EngineInstanceID != r.Identity.InstanceID {
			continue
		}
		if !op.State.Finished() {
			pending = append(pending, op)
		}
	}
	if len(pending) == 0 {
		return ctrl.Result{}, nil
	}

	// No claim before the handler runs: most operations finish in one go, and each state
	// change is a transaction and a notification. An operation that waits, fails or errs
	// is marked In_Progress below.

	tenantID := tenantOf(pending)
	if tenantID != "" {
		// The tenant id ties these lines to the backend's and to the rows.
		log = log.WithValues("tenant", tenantID)
		ctx = ctrl.LoggerInto(ctx, log)
	}
	var outcome Outcome
	if h, ok := r.Handlers[resourceType]; ok {
		start := time.Now()
		outcome, err = h.Handle(ctx, Target{ResourceID: resourceID, TenantID: tenantID})
		agentmetrics.ObserveOperation(string(resourceType), handlerOutcome(outcome, err), time.Since(start))
		crashpoint.Hit(crashpoint.AgentAfterHandler)
	} else {
		outcome = Failed(fmt.Sprintf("unsupported resource type %q", resourceType))
		agentmetrics.OperationsProcessed.WithLabelValues(string(resourceType), agentmetrics.OutcomeFailed).Inc()
	}
	if err != nil {
		expired, retried := r.expired(pending)
		if len(expired) > 0 {
			// A poison operation: fail it rather than retry it forever.
			log.Error(err, "Giving up on operations that kept failing", "operations", len(expired), "retryLimit", r.RetryLimit)
			failed, ferr := r.update(ctx, expired, db.OperationFailed, fmt.Sprintf(MessageGaveUp, r.RetryLimit))
			for range failed {
				operationsTotal.WithLabelValues(string(resourceType), resultFailed).Inc()
			}
			if ferr != nil || len(retried) == 0 {
				return ctrl.Result{}, ferr
			}
		}
		log.Error(err, "Carrying out operations failed; retrying", "operations", len(retried))
		_, uerr := r.update(ctx, retried, db.OperationInProgress, MessageInternalError)
		return ctrl.Result{}, errors.Join(err, uerr)
	}
	if !outcome.Done() {
		if _, err := r.update(ctx, pending, db.OperationInProgress, outcome.Message); err != nil {
			return ctrl.Result{}, err
		}
		log.V(1).Info("Waiting for Argo CD", "message", outcome.Message, "requeueAfter", outcome.RequeueAfter)
		return ctrl.Result{RequeueAfter: outcome.RequeueAfter}, nil
	}

	updated, err := r.update(ctx, pending, outcome.State, outcome.Message)
	if err != nil {
		return ctrl.Result{}, err
	}
	result := resultCompleted
	if outcome.State == db.OperationFailed {
		result = resultFailed
	}
	for _, op := range updated {
		operationsTotal.WithLabelValues(string(resourceType), result).Inc()
		if op.UpdatedAt.After(op.CreatedAt) {
			operationDuration.WithLabelValues(string(resourceType)).Observe(op.UpdatedAt.Sub(op.CreatedAt).Seconds())
		}
	}
	log.Info("Finished operations", "state", outcome.State, "message", outcome.Message, "operations", len(updated))
	return ctrl.Result{}, nil
}

// expired splits ops into those created longer than RetryLimit ago and the others.
func (r *Reconciler) expired(ops []db.Operation) (expired, retried []db.Operation) {
	if r.RetryLimit <= 0 {
		return nil, ops
	}
	cutoff := time.Now().Add(-r.RetryLimit)
	for _, op := range ops {
		if op.CreatedAt.Before(cutoff) {
			expired = append(expired, op)
		} else {
			retried = append(retried, op)
		}
	}
	return expired, retried
}

// update sets the state of every operation of ops whose state or message differs, and
// publishes operation_changed for each, in one statement. It returns ops as they are after
// the update.
func (r *Reconciler) update(ctx context.Context, ops []db.Operation, state db.OperationState, message string) ([]db.Operation, error) {
	out := make([]db.Operation, len(ops))
	copy(out, ops)
	var ids []string
	for _, op := range out {
		if op.State != state || op.HumanReadableState != message {
			ids = append(ids, op.ID)
		}
	}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := r.Store.UpdateOperationStates(ctx, r.DB, r.Identity.InstanceID, ids, state, message, notify.OperationChanged)
	if errors.Is(err, db.ErrNotFound) {
		// Gone since they were read (collected, or their instance deregistered): nothing
		// to record for them; the others are updated and count.
		ctrl.LoggerFrom(ctx).V(1).Info("Operations gone before their state was recorded", "operations", len(ids)-len(rows))
	} else if err != nil {
		return nil, fmt.Errorf("updating operations %v: %w", ids, err)
	}
	crashpoint.Hit(crashpoint.AgentAfterStateCommit)
	byID := make(map[string]db.Operation, len(rows))
	for _, row := range rows {
		byID[row.ID] = row
	}
	for i := range out {
		if row, ok := byID[out[i].ID]; ok {
			out[i] = row
		}
	}
	return out, nil
}

// patchStatus writes a CR's status when it differs.
func (r *Reconciler) patchStatus(ctx context.Context, cr *v1.Operation, state v1.OperationStatusState, message string) error {
	if statusIs(cr, state, message) && cr.Status.ObservedGeneration == cr.Generation {
		return nil
	}
	patch := client.MergeFrom(cr.DeepCopy())
	cr.Status = v1.OperationStatus{ObservedGeneration: cr.Generation, State: state, Message: message}
	if err := r.Client.Status().Patch(ctx, cr, patch); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("patching the status of Operation %s: %w", cr.Name, err))
	}
	return nil
}

func statusIs(cr *v1.Operation, state v1.OperationStatusState, message string) bool {
	return cr.Status.State == state && cr.Status.Message == message
}

// IsFinal reports whether an Operation CR's state is a final one (Completed or Failed).
func IsFinal(s v1.OperationStatusState) bool {
	return s == v1.OperationStateCompleted || s == v1.OperationStateFailed
}

// handlerOutcome names the outcome of a handler run for the metrics.
func handlerOutcome(outcome Outcome, err error) string {
	switch {
	case err != nil:
		return agentmetrics.OutcomeError
	case !outcome.Done():
		return agentmetrics.OutcomeWaiting
	case outcome.State == db.OperationFailed:
		return agentmetrics.OutcomeFailed
	default:
		return agentmetrics.OutcomeCompleted
	}
}

// tenantOf is the owner tenant of the newest operation that has one (ops are newest first).
func tenantOf(ops []db.Operation) string {
	for _, op := range ops {
		if op.OwnerTenantID != "" {
			return op.OwnerTenantID
		}
	}
	return ""
}
