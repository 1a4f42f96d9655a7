// Package deployment reconciles GitOpsDeployments: each becomes an application row (the
// desired Argo CD Application), its mapping and an Operation, written in one transaction,
// and gets its status from the application state the cluster-agent reports.
package deployment

import (
	"context"
	"strings"
	"sync"

	"github.com/uptrace/bun"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	"github.com/gitops-service/gitops-service/backend-shared/conditions"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/manageropts"
	"github.com/gitops-service/gitops-service/backend-shared/outcome"
	"github.com/gitops-service/gitops-service/backend/internal/indexes"
	"github.com/gitops-service/gitops-service/backend/internal/metrics"
	"github.com/gitops-service/gitops-service/backend/internal/notifyroute"
	"github.com/gitops-service/gitops-service/backend/internal/opsignal"
	"github.com/gitops-service/gitops-service/backend/internal/syncrun"
	"github.com/gitops-service/gitops-service/backend/internal/tenancy"
	"github.com/gitops-service/gitops-service/backend/internal/txbatch"
	"github.com/gitops-service/gitops-service/backend/internal/watches"
)

// Store is the part of the database the controller uses.
type Store interface {
	RowStore
	GetAppliedApplication(ctx context.Context, idb bun.IDB, namespaceUID, id string) (*db.AppliedApplication, error)
	GetApplicationState(ctx context.Context, idb bun.IDB, tenantID, applicationID string) (*db.ApplicationState, error)
	GetAPICRMapping(ctx context.Context, idb bun.IDB, tenantID string, kind db.APIResourceType, uid string) (*db.APICRMapping, error)
	GetAPICRMappingByTarget(ctx context.Context, idb bun.IDB, tenantID string, kind db.APIResourceType, targetID string) (*db.APICRMapping, error)
}

// RowStore writes and removes the rows of a GitOpsDeployment's application, and reads what
// those writes depend on.
type RowStore interface {
	UpsertApplication(ctx context.Context, idb bun.IDB, app *db.Application) (bool, error)
	DeleteApplicationByDeploymentUID(ctx context.Context, idb bun.IDB, tenantID, deploymentUID string) (*db.Application, error)
	GetOrCreateDeploymentMapping(ctx context.Context, idb bun.IDB, m *db.DeploymentMapping) (*db.DeploymentMapping, error)
	ListDeploymentMappingsByName(ctx context.Context, idb bun.IDB, tenantID, name string) ([]db.DeploymentMapping, error)
	AddAppProjectRepository(ctx context.Context, idb bun.IDB, tenantID, repositoryURL string) (bool, error)
	AddAppProjectDestination(ctx context.Context, idb bun.IDB, tenantID, managedEnvironmentID string) (bool, error)
	ListOperationsForResource(ctx context.Context, idb bun.IDB, resourceType db.OperationResourceType, resourceID string) ([]db.Operation, error)
}

// Reconciler reconciles GitOpsDeployments.
type Reconciler struct {
	Client   client.Client
	DB       *bun.DB
	Store    Store
	Tenancy  *tenancy.Resolver
	Signal   *opsignal.Signaller
	Recorder record.EventRecorder
	// Queue receives requests from database notifications.
	Queue *notifyroute.Queue
	// SyncRuns is the SyncRun controller's queue: a SyncRun created before its deployment
	// waits for the deployment's application row, and learns of it here (nil: nobody waits).
	SyncRuns *notifyroute.Queue
	// MaxConcurrentReconciles bounds parallel reconciles.
	MaxConcurrentReconciles int

	// unseen holds the deployments created while the controller watches (not those of its
	// initial list), until their first reconcile: no application row can exist for them
	// yet, so that reconcile writes it without first looking for it.
	unseen sync.Map // types.NamespacedName → struct{}

	// writes shares the writing transactions of concurrent reconciles, with one raise of
	// the signal per transaction; set up with the controller.
	writes *txbatch.Batcher
}

// +kubebuilder:rbac:groups=managed-gitops.redhat.com,resources=gitopsdeployments,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=managed-gitops.redhat.com,resources=gitopsdeployments/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=managed-gitops.redhat.com,resources=gitopsdeploymentmanagedenvironments,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// SetupWithManager registers the controller (the cache must have the indexes of package
// indexes).
func (r *Reconciler) SetupWithManager(_ context.Context, mgr ctrl.Manager) error {
	r.writes = &txbatch.Batcher{DB: r.DB, Shared: r.Signal.Deferring}
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1.GitOpsDeployment{}, builder.WithPredicates(r.noteCreations(), specOrLifecycleChanged{})).
		// An environment connecting, changing or going away changes its deployments.
		Watches(&v1.GitOpsDeploymentManagedEnvironment{}, handler.EnqueueRequestsFromMapFunc(watches.ByIndex(r.Client, func() client.ObjectList { return &v1.GitOpsDeploymentList{} }, indexes.DeploymentEnvironment))).
		WatchesRawSource(r.Queue.Source()).
		WithOptions(manageropts.ControllerOptions(r.MaxConcurrentReconciles)).
		Named("gitopsdeployment").
		Complete(r)
}

// noteCreations records in unseen the deployments created while the controller watches,
// and lets every event through.
func (r *Reconciler) noteCreations() predicate.Funcs {
	return predicate.Funcs{CreateFunc: func(e event.CreateEvent) bool {
		if !e.IsInInitialList {
			r.unseen.Store(client.ObjectKeyFromObject(e.Object), struct{}{})
		}
		return true
	}}
}

// Reconcile makes the rows match the GitOpsDeployment and its status match the rows.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	_, unseen := r.unseen.LoadAndDelete(req.NamespacedName)
	depl := &v1.GitOpsDeployment{}
	if err := r.Client.Get(ctx, req.NamespacedName, depl); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		// Deleted without our finalizer: remove what is left of it.
		return ctrl.Result{}, r.removeByName(ctx, req.Namespace, req.Name, "")
	}
	if !depl.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, depl)
	}

	start := depl.DeepCopy()
	now := metav1.Now()
	tenant, want, err := r.apply(ctx, depl, unseen)
	if tenant != nil {
		// The tenant id ties these lines to the rows and to the cluster-agent's lines.
		ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("tenant", tenant.ID))
	}
	r.reportError(depl, err, now)
	var state *db.ApplicationState
	// stateChanged: this reconcile brings a change of the application state to the status
	// (for the propagation histogram).
	stateChanged := false
	if tenant != nil && (want == nil || !want.created) {
		unread := depl.Status.DeepCopy()
		var readErr error
		if state, readErr = r.readStatus(ctx, tenant, depl, want, now); readErr != nil {
			err = readErr // internal: retried, and the next reconcile reports the rest
		}
		stateChanged = state != nil && !equality.Semantic.DeepEqual(unread, &depl.Status)
	}
	return r.ending().End(ctx, depl, start, outcome.Status{
		Conditions:         outcome.GitOpsConditions{List: &depl.Status.Conditions},
		ObservedGeneration: &depl.Status.ObservedGeneration,
		Written: func() {
			recordTransitions(r.Recorder, depl, &start.Status)
			if stateChanged {
				metrics.ObserveStatusPropagation(state.UpdatedAt)
			}
		},
	}, progress(depl, want, state), err)
}

func (r *Reconciler) ending() outcome.Ending {
	return outcome.Ending{Client: r.Client, Recorder: r.Recorder, OwnEvents: true}
}

// wakeSyncRuns enqueues the SyncRuns that name depl, whose application row was just written.
func (r *Reconciler) wakeSyncRuns(ctx context.Context, depl *v1.GitOpsDeployment) {
	if r.SyncRuns == nil {
		return
	}
	for _, req := range syncrun.Naming(r.Client)(ctx, depl) {
		r.SyncRuns.Add(req)
	}
}

// reportError keeps the ErrorOccurred condition api.md documents: the message of a user
// error, a generic one for an internal error, resolved when the reconcile succeeds.
func (r *Reconciler) reportError(depl *v1.GitOpsDeployment, err error, now metav1.Time) {
	if err == nil {
		depl.Status.Conditions, _ = conditions.Resolve(depl.Status.Conditions, v1.GitOpsDeploymentConditionErrorOccurred,
			v1.GitOpsDeploymentReasonErrorOccurredResolved, now)
		return
	}
	msg := outcome.InternalMessage
	if outcome.IsUser(err) {
		msg = outcome.As(err).Message
	}
	depl.Status.Conditions, _ = conditions.Set(depl.Status.Conditions, v1.GitOpsDeploymentConditionErrorOccurred,
		v1.GitOpsConditionStatusTrue, v1.GitOpsDeploymentReasonErrorOccurred, msg, now)
}

// finalize runs while a GitOpsDeployment with the user's finalizer is being deleted: the CR
// stays until its Argo CD Application (and so what it deployed) is gone.
func (r *Reconciler) finalize(ctx context.Context, depl *v1.GitOpsDeployment) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(depl, v1.FinalizerResourcesFinalizer) {
		return ctrl.Result{}, nil
	}
	if err := r.removeByName(ctx, depl.Namespace, depl.Name, ""); err != nil {
		return ctrl.Result{}, err
	}
	done, leftovers, err := r.applicationGone(ctx, string(depl.UID))
	if err != nil || !done {
		// Not done: the operation_changed notification of the deletion requeues us.
		return ctrl.Result{}, err
	}
	if leftovers != "" && r.Recorder != nil {
		r.Recorder.Event(depl, corev1.EventTypeWarning, EventResourcesMayRemain, leftovers)
	}
	patch := client.MergeFrom(depl.DeepCopy())
	controllerutil.RemoveFinalizer(depl, v1.FinalizerResourcesFinalizer)
	return ctrl.Result{}, client.IgnoreNotFound(r.Client.Patch(ctx, depl, patch))
}

// applicationGone reports whether every operation about the application has finished, i.e.
// the cluster-agent has removed the Argo CD Application, and, when the agent had to remove
// it before Argo CD pruned everything, the agent's account of what may remain.
func (r *Reconciler) applicationGone(ctx context.Context, applicationID string) (bool, string, error) {
	ops, err := r.Store.ListOperationsForResource(ctx, r.DB, db.OperationResourceApplication, applicationID)
	if err != nil {
		return false, "", err
	}
	leftovers := ""
	for _, op := range ops {
		if !op.State.Finished() {
			return false, "", nil
		}
		if leftovers == "" && strings.Contains(op.HumanReadableState, argocd.MessageResourcesMayRemain) {
			leftovers = op.HumanReadableState
		}
	}
	return true, leftovers, nil
}

// specOrLifecycleChanged passes creations, deletions and updates that change the spec
// (generation), the refresh annotation, the deletion timestamp or the finalizers: not our
// own status writes.
type specOrLifecycleChanged struct{ predicate.Funcs }

func (specOrLifecycleChanged) Update(e event.UpdateEvent) bool {
	if e.ObjectOld == nil || e.ObjectNew == nil {
		return true
	}
	return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() ||
		e.ObjectOld.GetAnnotations()[v1.RefreshAnnotation] != e.ObjectNew.GetAnnotations()[v1.RefreshAnnotation] ||
		!e.ObjectOld.GetDeletionTimestamp().Equal(e.ObjectNew.GetDeletionTimestamp()) ||
		!equality.Semantic.DeepEqual(e.ObjectOld.GetFinalizers(), e.ObjectNew.GetFinalizers())
}

func (specOrLifecycleChanged) Create(event.CreateEvent) bool   { return true }
func (specOrLifecycleChanged) Delete(event.DeleteEvent) bool   { return true }
func (specOrLifecycleChanged) Generic(event.GenericEvent) bool { return true }

var _ reconcile.Reconciler = &Reconciler{}
