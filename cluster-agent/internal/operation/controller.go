// Package operation is the cluster-agent's Operation controller. The backend signals a
// change by writing an Operation row and creating an Operation CR (holding only the row's
// id) in the engine instance's namespace. The controller maps each CR to the resource the
// row is about, so that the workqueue deduplicates and serialises all the operations of
// one resource, then lets the resource type's Handler make Argo CD match the database and
// records the outcome on the rows (notifying the backend) and on the CRs.
package operation

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/uptrace/bun"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// CRName is the name of an operation's CR.
func CRName(operationID string) string { return "operation-" + operationID }

// Request is the controller's work item. Normally it names a resource (the row an
// operation is about), so that concurrent operations on it collapse into one reconcile.
// An Operation CR that could not be mapped to one of this engine instance's resources
// (another instance's operation, an unknown id, the database unreachable) is queued by its
// own key instead: its reconcile checks it again, and either marks it Failed or carries
// out its resource.
type Request struct {
	ResourceType db.OperationResourceType
	ResourceID   string
	OperationCR  types.NamespacedName
}

// Store is the part of the database the controller uses.
type Store interface {
	GetOperation(ctx context.Context, idb bun.IDB, id string) (*db.Operation, error)
	GetEngineInstance(ctx context.Context, idb bun.IDB, id string) (*db.EngineInstance, error)
	ListPendingOperations(ctx context.Context, idb bun.IDB, engineInstanceID string) ([]db.Operation, error)
	ListOperationsForResource(ctx context.Context, idb bun.IDB, resourceType db.OperationResourceType, resourceID string) ([]db.Operation, error)
	UpdateOperationState(ctx context.Context, idb bun.IDB, engineInstanceID, id string, state db.OperationState, humanReadable string) (*db.Operation, error)
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

	queue queue.Handle[Request]
}

// Requeue queues the resource of a pending operation again. The sweep calls it for an
// operation that nothing else would bring back: its CR exists, so no create event comes,
// but its row is still pending (a state write the database lost, or an operation stuck
// for longer than the sweep's grace period). Before the controller runs it does nothing.
func (r *Reconciler) Requeue(op *db.Operation) {
	r.queue.Add(Request{ResourceType: op.ResourceType, ResourceID: op.ResourceID})
}

// +kubebuilder:rbac:groups=managed-gitops.redhat.com,resources=operations,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=managed-gitops.redhat.com,resources=operations/status,verbs=get;update;patch

// SetupWithManager registers the controller: Operation CR create events (including the
// initial list, which replays every existing CR on start) and a one-off resync of the
// instance's pending operations when the controller starts.
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

// resync queues the resources of the instance's pending operations when the controller
// starts, in case an Operation CR is missing (the CRs' initial list covers the rest).
func (r *Reconciler) resync(ctx context.Context, q workqueue.TypedRateLimitingInterface[Request]) error {
	log := ctrl.LoggerFrom(ctx).WithValues("controller", ControllerName)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ops, err := r.Store.ListPendingOperations(ctx, r.DB, r.Identity.InstanceID)
	if err != nil {
		log.Error(err, "Listing pending operations failed; relying on Operation CR events")
		return nil
	}
	for _, op := range ops {
		q.Add(Request{ResourceType: op.ResourceType, ResourceID: op.ResourceID})
	}
	log.V(1).Info("Queued pending operations", "count", len(ops))
	return nil
}

// mapOperation maps an Operation CR to its resource when the operation is this instance's
// and not yet finished (or its CR does not show its final state yet).
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
	case op.State.Finished() && statusIs(cr, crState(op.State), op.HumanReadableState):
		return nil
	}
	return []Request{{ResourceType: op.ResourceType, ResourceID: op.ResourceID}}
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

// Reconcile carries out the pending operations of a resource, or checks an unmapped CR.
func (r *Reconciler) Reconcile(ctx context.Context, req Request) (ctrl.Result, error) {
	if req.OperationCR.Name != "" {
		return r.reconcileCR(ctx, req.OperationCR)
	}
	return r.reconcileResource(ctx, req.ResourceType, req.ResourceID)
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
	log = log.WithValues("resourceType", op.ResourceType, "resourceID", op.ResourceID)
	return r.reconcileResource(ctrl.LoggerInto(ctx, log), op.ResourceType, op.ResourceID)
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
	var ours, pending []db.Operation
	for _, op := range all {
		if op.EngineInstanceID != r.Identity.InstanceID {
			continue
		}
		ours = append(ours, op)
		if !op.State.Finished() {
			pending = append(pending, op)
		}
	}
	if len(pending) == 0 {
		// Nothing to do but make sure the CRs show what the rows say (e.g. after a crash
		// between the commit and the status patch).
		return ctrl.Result{}, r.syncStatuses(ctx, ours)
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
				return ctrl.Result{}, errors.Join(ferr, r.syncStatuses(ctx, failed))
			}
			if serr := r.syncStatuses(ctx, failed); serr != nil {
				return ctrl.Result{}, serr
			}
		}
		log.Error(err, "Carrying out operations failed; retrying", "operations", len(retried))
		updated, uerr := r.update(ctx, retried, db.OperationInProgress, MessageInternalError)
		return ctrl.Result{}, errors.Join(err, uerr, r.syncStatuses(ctx, updated))
	}
	if !outcome.Done() {
		updated, err := r.update(ctx, pending, db.OperationInProgress, outcome.Message)
		if err != nil {
			return ctrl.Result{}, err
		}
		log.V(1).Info("Waiting for Argo CD", "message", outcome.Message, "requeueAfter", outcome.RequeueAfter)
		return ctrl.Result{RequeueAfter: outcome.RequeueAfter}, r.syncStatuses(ctx, updated)
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
	return ctrl.Result{}, r.syncStatuses(ctx, updated)
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
// publishes operation_changed for each, in one transaction. It returns ops as they are
// after the update.
func (r *Reconciler) update(ctx context.Context, ops []db.Operation, state db.OperationState, message string) ([]db.Operation, error) {
	out := make([]db.Operation, len(ops))
	copy(out, ops)
	var changed []int
	for i, op := range out {
		if op.State != state || op.HumanReadableState != message {
			changed = append(changed, i)
		}
	}
	if len(changed) == 0 {
		return out, nil
	}
	err := r.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		for _, i := range changed {
			row, err := r.Store.UpdateOperationState(ctx, tx, r.Identity.InstanceID, out[i].ID, state, message)
			if err != nil {
				return fmt.Errorf("updating operation %s: %w", out[i].ID, err)
			}
			if err := notify.PublishOperationChanged(ctx, tx, row.ID); err != nil {
				return err
			}
			out[i] = *row
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	crashpoint.Hit(crashpoint.AgentAfterStateCommit)
	return out, nil
}

// syncStatuses makes the operations' CRs show their rows' state.
func (r *Reconciler) syncStatuses(ctx context.Context, ops []db.Operation) error {
	var errs []error
	for _, op := range ops {
		cr := &v1.Operation{}
		err := r.Client.Get(ctx, types.NamespacedName{Namespace: r.Identity.Namespace, Name: CRName(op.ID)}, cr)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if cr.Spec.OperationID != op.ID {
			continue
		}
		errs = append(errs, r.patchStatus(ctx, cr, crState(op.State), op.HumanReadableState))
	}
	return errors.Join(errs...)
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

func crState(s db.OperationState) v1.OperationStatusState {
	switch s {
	case db.OperationInProgress:
		return v1.OperationStateInProgress
	case db.OperationCompleted:
		return v1.OperationStateCompleted
	case db.OperationFailed:
		return v1.OperationStateFailed
	default:
		return v1.OperationStateWaiting
	}
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
