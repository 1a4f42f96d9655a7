// Package syncrun reconciles GitOpsDeploymentSyncRuns: a SyncRun on a manual
// GitOpsDeployment becomes a sync operation row and an Operation, which the cluster-agent
// turns into an Argo CD sync; its status follows the GitOpsDeployment's.
package syncrun

import (
	"context"
	"errors"
	"time"

	"github.com/uptrace/bun"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	"github.com/gitops-service/gitops-service/backend-shared/conditions"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/manageropts"
	"github.com/gitops-service/gitops-service/backend-shared/outcome"
	"github.com/gitops-service/gitops-service/backend/internal/indexes"
	"github.com/gitops-service/gitops-service/backend/internal/notifyroute"
	"github.com/gitops-service/gitops-service/backend/internal/opsignal"
	"github.com/gitops-service/gitops-service/backend/internal/tenancy"
	"github.com/gitops-service/gitops-service/backend/internal/validation"
	"github.com/gitops-service/gitops-service/backend/internal/watches"
)

// DeploymentNameIndex indexes SyncRuns by spec.gitopsDeploymentName.
const DeploymentNameIndex = "spec.gitopsDeploymentName"

// Messages users see in the ErrorOccurred condition.
const (
	msgAutomated = "Syncing a GitOpsDeployment with Automated sync policy is not allowed"
	msgSucceeded = "Successfully completed synchronize operation."
)

// Reasons of the SyncRun's Ready condition.
const (
	ReasonWaitingForDeployment = "WaitingForDeployment"
	ReasonDeploymentNotFound   = "DeploymentNotFound"
	ReasonDeploymentAutomated  = "DeploymentAutomated"
	ReasonSyncing              = "Syncing"
	ReasonSyncSucceeded        = "SyncSucceeded"
	ReasonSyncFailed           = "SyncFailed"
)

// deploymentRetry is how often a SyncRun whose GitOpsDeployment does not exist yet looks
// again (its creation is also watched).
const deploymentRetry = 30 * time.Second

// Reasons of the SyncRun's Events (condition Events otherwise use the condition's reason).
const (
	EventSyncRequested = "SyncRequested"
	EventSyncSucceeded = "SyncSucceeded"
	EventSyncFailed    = "SyncFailed"
)

// Store is the part of the database the controller uses.
type Store interface {
	GetApplication(ctx context.Context, idb bun.IDB, tenantID, id string) (*db.Application, error)
	CreateSyncOperation(ctx context.Context, idb bun.IDB, op *db.SyncOperation) error
	GetSyncOperation(ctx context.Context, idb bun.IDB, tenantID, id string) (*db.SyncOperation, error)
	UpdateSyncOperationDesiredState(ctx context.Context, idb bun.IDB, tenantID, id string, state db.SyncDesiredState) error
	GetOrCreateAPICRMapping(ctx context.Context, idb bun.IDB, m *db.APICRMapping) (*db.APICRMapping, error)
	ListAPICRMappingsByName(ctx context.Context, idb bun.IDB, tenantID string, kind db.APIResourceType, name string) ([]db.APICRMapping, error)
	DeleteAPICRMapping(ctx context.Context, idb bun.IDB, tenantID string, kind db.APIResourceType, uid string) error
	ListOperationsForResource(ctx context.Context, idb bun.IDB, resourceType db.OperationResourceType, resourceID string) ([]db.Operation, error)
}

// Reconciler reconciles GitOpsDeploymentSyncRuns.
type Reconciler struct {
	Client   client.Client
	DB       *bun.DB
	Store    Store
	Tenancy  *tenancy.Resolver
	Signal   *opsignal.Signaller
	Recorder record.EventRecorder
	Queue    *notifyroute.Queue
	// MaxConcurrentReconciles bounds parallel reconciles.
	MaxConcurrentReconciles int
}

// +kubebuilder:rbac:groups=managed-gitops.redhat.com,resources=gitopsdeploymentsyncruns,verbs=get;list;watch
// +kubebuilder:rbac:groups=managed-gitops.redhat.com,resources=gitopsdeploymentsyncruns/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=managed-gitops.redhat.com,resources=gitopsdeployments,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// SetupWithManager registers the controller: SyncRuns are reconciled when they change, when
// the GitOpsDeployment they name changes (so status follows it, and a SyncRun created first
// runs once its deployment exists), and when their operation finishes.
func (r *Reconciler) SetupWithManager(_ context.Context, mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1.GitOpsDeploymentSyncRun{}).
		Watches(&v1.GitOpsDeployment{}, handler.EnqueueRequestsFromMapFunc(Naming(r.Client))).
		WatchesRawSource(r.Queue.Source()).
		WithOptions(manageropts.ControllerOptions(r.MaxConcurrentReconciles)).
		Named("gitopsdeploymentsyncrun").
		Complete(r)
}

// Naming maps a GitOpsDeployment to the SyncRuns that name it, through the cache's index.
func Naming(c client.Reader) handler.MapFunc {
	return watches.ByIndex(c, func() client.ObjectList { return &v1.GitOpsDeploymentSyncRunList{} }, indexes.SyncRunDeployment)
}

// Reconcile starts the sync of a SyncRun once, and keeps its status current.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	run := &v1.GitOpsDeploymentSyncRun{}
	if err := r.Client.Get(ctx, req.NamespacedName, run); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		return ctrl.Result{}, r.terminate(ctx, req.Namespace, req.Name)
	}
	start := run.DeepCopy()
	now := metav1.Now()

	var ev transitions
	depl, syncOp, err := r.start(ctx, run)
	progress := outcome.Working(ReasonWaitingForDeployment, "Waiting for the GitOpsDeployment to be reconciled", true)
	switch {
	case outcome.IsUser(err) || outcome.As(err) != nil && outcome.As(err).Kind == outcome.Transient:
		msg := outcome.As(err).Message
		r.raise(&ev, run, string(v1.GitOpsDeploymentSyncRunReasonErrorOccurred), msg, msg, now)
	case err != nil:
		r.raise(&ev, run, string(v1.GitOpsDeploymentSyncRunReasonErrorOccurred), outcome.InternalMessage, outcome.InternalMessage, now)
	case depl != nil:
		progress = r.followDeployment(&ev, run, depl, syncOp, now)
	}
	return outcome.Ending{Client: r.Client, Recorder: r.Recorder, OwnEvents: true}.End(ctx, run, start, outcome.Status{
		Conditions:         outcome.GitOpsConditions{List: &run.Status.Conditions},
		ObservedGeneration: &run.Status.ObservedGeneration,
		Written: func() {
			if r.Recorder != nil {
				for _, e := range ev {
					r.Recorder.Event(run, e.eventType, e.reason, e.message)
				}
			}
		},
	}, progress, err)
}

// transitions are the Events of one reconcile's transitions, recorded once its status is written.
type transitions []event

type event struct{ eventType, reason, message string }

func (ev *transitions) add(eventType, reason, message string) {
	*ev = append(*ev, event{eventType, reason, message})
}

// start creates the sync operation of run, once. It returns the GitOpsDeployment and the
// sync operation when the sync has been requested.
func (r *Reconciler) start(ctx context.Context, run *v1.GitOpsDeploymentSyncRun) (*v1.GitOpsDeployment, *db.SyncOperation, error) {
	revision, err := validation.SyncRunRevision(&run.Spec)
	if err != nil {
		return nil, nil, err
	}
	depl := &v1.GitOpsDeployment{}
	key := client.ObjectKey{Namespace: run.Namespace, Name: run.Spec.GitopsDeploymentName}
	if err := r.Client.Get(ctx, key, depl); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, outcome.TransientError(ReasonDeploymentNotFound, deploymentRetry, "GitOpsDeployment %q does not exist in namespace %q; the sync starts once it does", key.Name, key.Namespace)
		}
		return nil, nil, err
	}
	if depl.Spec.Type == v1.GitOpsDeploymentSpecTypeAutomated {
		return nil, nil, outcome.UserError(ReasonDeploymentAutomated, msgAutomated)
	}
	tenant, err := r.Tenancy.Tenant(ctx, r.DB, run.Namespace)
	if err != nil {
		return nil, nil, err
	}
	if syncOp, err := r.Store.GetSyncOperation(ctx, r.DB, tenant.ID, string(run.UID)); err == nil {
		run.Status.Revision = syncOp.Revision
		return depl, syncOp, r.ensureSignalled(ctx, string(run.UID))
	} else if !errors.Is(err, db.ErrNotFound) {
		return nil, nil, err
	}
	app, err := r.Store.GetApplication(ctx, r.DB, tenant.ID, string(depl.UID))
	if errors.Is(err, db.ErrNotFound) {
		// The deployment has not been reconciled yet: its controller requeues us once it
		// has written the row.
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	if revision == "" {
		revision = depl.Spec.Source.TargetRevision
	}
	var op *db.Operation
	syncOp := &db.SyncOperation{ID: string(run.UID), TenantID: tenant.ID, ApplicationID: app.ID,
		DeploymentName: depl.Name, Revision: revision, DesiredState: db.SyncRunning}
	err = r.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if err := r.Store.CreateSyncOperation(ctx, tx, syncOp); err != nil {
			return err
		}
		if _, err := r.Store.GetOrCreateAPICRMapping(ctx, tx, &db.APICRMapping{
			APIResourceType: db.APIResourceSyncRun, APIResourceUID: string(run.UID),
			APIResourceName: run.Name, APIResourceNamespace: run.Namespace,
			TenantID: tenant.ID, SyncOperationID: syncOp.ID,
		}); err != nil {
			return err
		}
		op, err = r.Signal.Row(ctx, tx, &db.EngineInstance{ID: app.EngineInstanceID}, tenant.ID, db.OperationResourceSyncOperation, syncOp.ID)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	run.Status.Revision = revision
	if r.Recorder != nil {
		r.Recorder.Eventf(run, corev1.EventTypeNormal, EventSyncRequested, "Sync of GitOpsDeployment %s to %q requested", depl.Name, revision)
	}
	return depl, syncOp, r.Signal.CRs(ctx, op)
}

// ensureSignalled creates the CR of a waiting operation whose CR an earlier reconcile did
// not get to create.
func (r *Reconciler) ensureSignalled(ctx context.Context, syncOpID string) error {
	ops, err := r.Store.ListOperationsForResource(ctx, r.DB, db.OperationResourceSyncOperation, syncOpID)
	if err != nil {
		return err
	}
	for i := range ops {
		if ops[i].State == db.OperationWaiting {
			if err := r.Signal.CRs(ctx, &ops[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// followDeployment copies the deployment's health and sync status, and reports the outcome
// of Argo CD's sync operation. Once the sync is requested, an earlier error that held it back
// (no deployment yet, an automated one, an internal error) is resolved, with an Event.
func (r *Reconciler) followDeployment(ev *transitions, run *v1.GitOpsDeploymentSyncRun, depl *v1.GitOpsDeployment,
	syncOp *db.SyncOperation, now metav1.Time) outcome.Progress {
	// A finished sync's result stays: a later sync of the deployment (another SyncRun's, an
	// automated one) is not this one's.
	if done, ok := finished(run); ok {
		return done
	}
	run.Status.Health = depl.Status.Health.Status
	run.Status.SyncStatus = depl.Status.Sync.Status
	phase, message := syncResult(string(run.UID), depl.Status.OperationState, syncOp)
	switch phase {
	case "Succeeded":
		if r.setCondition(run, v1.GitOpsConditionStatusFalse, v1.GitOpsDeploymentSyncRunReasonErrorOccurredResolved, msgSucceeded, now) {
			ev.add(corev1.EventTypeNormal, EventSyncSucceeded, msgSucceeded)
		}
		return outcome.Done(ReasonSyncSucceeded, msgSucceeded)
	case "Failed", "Error":
		msg := "Sync operation " + phase
		if message != "" {
			msg += ": " + message
		}
		r.raise(ev, run, EventSyncFailed, message, msg, now)
		return outcome.Failed(ReasonSyncFailed, msg)
	}
	// Requested and not finished: nothing holds the sync back any more.
	var changed bool
	run.Status.Conditions, changed = conditions.Resolve(run.Status.Conditions, v1.GitOpsDeploymentSyncRunConditionErrorOccurred,
		v1.GitOpsDeploymentSyncRunReasonErrorOccurredResolved, now)
	if changed {
		ev.add(corev1.EventTypeNormal, string(v1.GitOpsDeploymentSyncRunReasonErrorOccurredResolved),
			"The earlier error is resolved; the sync is requested.")
	}
	return outcome.Working(ReasonSyncing, "The sync is requested; waiting for Argo CD to finish it", false)
}

// syncResult is how the sync of the SyncRun with this UID ended, "" while it has not. While
// the deployment's operation state is that sync's, it is read there, with the sync and
// health status it came with. Once another operation has replaced it there, it is the result
// the cluster-agent kept with the sync operation (the deployment may never have shown it).
func syncResult(runUID string, state *v1.OperationState, syncOp *db.SyncOperation) (phase, message string) {
	switch {
	case state == nil:
		return "", ""
	case syncOperationID(state) != runUID:
		if syncOp != nil {
			return syncOp.ResultPhase, syncOp.ResultMessage
		}
		return "", ""
	}
	switch state.Phase {
	case "Succeeded", "Failed", "Error":
		return string(state.Phase), state.Message
	}
	return "", ""
}

// finished is the outcome a SyncRun's status already records for its sync, once that sync
// succeeded or failed.
func finished(run *v1.GitOpsDeploymentSyncRun) (outcome.Progress, bool) {
	ready, ok := outcome.GitOpsConditions{List: &run.Status.Conditions}.Get(outcome.TypeReady)
	switch {
	case ok && ready.Reason == ReasonSyncSucceeded:
		return outcome.Done(ReasonSyncSucceeded, ready.Message), true
	case ok && ready.Reason == ReasonSyncFailed:
		return outcome.Failed(ReasonSyncFailed, ready.Message), true
	}
	return outcome.Progress{}, false
}

// syncOperationID is the id of the sync operation (SyncRun UID) an operation was started
// for, "" for one the cluster-agent did not start for a SyncRun.
func syncOperationID(op *v1.OperationState) string {
	for _, info := range op.Operation.Info {
		if info.Name == argocd.InfoSyncOperationID {
			return info.Value
		}
	}
	return ""
}

// raise sets the ErrorOccurred condition to msg, with a Warning Event (eventReason,
// eventMsg) when the condition changes.
func (r *Reconciler) raise(ev *transitions, run *v1.GitOpsDeploymentSyncRun, eventReason, msg, eventMsg string, now metav1.Time) {
	if r.setCondition(run, v1.GitOpsConditionStatusTrue, v1.GitOpsDeploymentSyncRunReasonErrorOccurred, msg, now) {
		ev.add(corev1.EventTypeWarning, eventReason, eventMsg)
	}
}

// setCondition sets the ErrorOccurred condition and reports whether its status, reason or
// message changed (a transition worth one Event).
func (r *Reconciler) setCondition(run *v1.GitOpsDeploymentSyncRun, status v1.GitOpsConditionStatus, reason v1.GitOpsDeploymentReasonType, msg string, now metav1.Time) bool {
	var changed bool
	run.Status.Conditions, changed = conditions.Set(run.Status.Conditions, v1.GitOpsDeploymentSyncRunConditionErrorOccurred, status, reason, msg, now)
	return changed
}

// terminate stops the Argo CD sync of a deleted SyncRun, if it still runs.
func (r *Reconciler) terminate(ctx context.Context, namespace, name string) error {
	tenant, err := r.Tenancy.ExistingTenant(ctx, r.DB, namespace)
	if errors.Is(err, db.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	mappings, err := r.Store.ListAPICRMappingsByName(ctx, r.DB, tenant.ID, db.APIResourceSyncRun, name)
	if err != nil {
		return err
	}
	for _, m := range mappings {
		// A SyncRun of this name may exist again (re-created): terminate only the gone one.
		live := &v1.GitOpsDeploymentSyncRun{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, live); err == nil && string(live.UID) == m.APIResourceUID {
			continue
		}
		var op *db.Operation
		err := r.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			syncOp, err := r.Store.GetSyncOperation(ctx, tx, tenant.ID, m.SyncOperationID)
			if err == nil && syncOp.DesiredState == db.SyncRunning && syncOp.ApplicationID != "" {
				if err := r.Store.UpdateSyncOperationDesiredState(ctx, tx, tenant.ID, syncOp.ID, db.SyncTerminated); err != nil {
					return err
				}
				app, err := r.Store.GetApplication(ctx, tx, tenant.ID, syncOp.ApplicationID)
				if err != nil && !errors.Is(err, db.ErrNotFound) {
					return err
				}
				if app != nil {
					if op, err = r.Signal.Row(ctx, tx, &db.EngineInstance{ID: app.EngineInstanceID}, tenant.ID, db.OperationResourceSyncOperation, syncOp.ID); err != nil {
						return err
					}
				}
			} else if err != nil && !errors.Is(err, db.ErrNotFound) {
				return err
			}
			return r.Store.DeleteAPICRMapping(ctx, tx, tenant.ID, db.APIResourceSyncRun, m.APIResourceUID)
		})
		if err != nil {
			return err
		}
		if op != nil {
			if err := r.Signal.CRs(ctx, op); err != nil {
				return err
			}
		}
	}
	return nil
}
