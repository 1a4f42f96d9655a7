// Package appstatus is the cluster-agent's Application status controller: it writes what
// Argo CD reports about the service's Applications (health, sync status, resources,
// conditions, operation state) to the application_states table, and notifies the backend
// when, and only when, that changed. It is event-driven: nothing polls. The status of
// the Applications of a burst of operations waits until the burst is carried out
// (package burst).
package appstatus

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/uptrace/bun"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/notify"
	"github.com/gitops-service/gitops-service/backend-shared/manageropts"
	"github.com/gitops-service/gitops-service/backend-shared/queue"
	"github.com/gitops-service/gitops-service/backend-shared/ssa"
	"github.com/gitops-service/gitops-service/backend-shared/statuspatch"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/burst"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/engine"
	agentmetrics "github.com/gitops-service/gitops-service/cluster-agent/internal/metrics"
)

// ControllerName names the controller in logs and metrics.
const ControllerName = "application-status"

// Store is the part of the database the controller uses.
type Store interface {
	GetApplicationForEngineInstance(ctx context.Context, idb bun.IDB, engineInstanceID, id string) (*db.Application, error)
	RecordApplicationState(ctx context.Context, idb bun.IDB, st *db.ApplicationState, notifyChannel string) (changed bool, err error)
	LockApplicationOperationState(ctx context.Context, idb bun.IDB, applicationID string) (*argov1alpha1.OperationState, error)
	RecordSyncResult(ctx context.Context, idb bun.IDB, applicationID, id, phase, message string) error
}

// Reconciler records the state of the service's Argo CD Applications.
type Reconciler struct {
	// Client reads Argo CD Applications from the manager's cache.
	Client   client.Client
	DB       bun.IDB
	Store    Store
	Identity engine.Identity
	// MaxConcurrentReconciles is how many Applications are recorded at once (default 1).
	MaxConcurrentReconciles int
	// SkipNameValidation allows several managers in one process (tests).
	SkipNameValidation bool
	// Burst defers the recording of the status of a burst's Applications until the burst
	// is carried out, so that all of them are created first (nil: never).
	Burst *burst.Hold

	queue queue.Handle[ctrl.Request]
}

// +kubebuilder:rbac:groups=argoproj.io,resources=applications,verbs=get;list;watch;patch

// SetupWithManager registers the controller for the Applications the service manages,
// woken only when what it records changed.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	managed := predicate.NewPredicateFuncs(func(o client.Object) bool {
		l := o.GetLabels()
		return l[argocd.LabelManagedBy] == argocd.ManagedByValue && l[argocd.LabelApplicationID] != ""
	})
	recordedChange := predicate.Funcs{CreateFunc: func(e event.CreateEvent) bool {
		app, ok := e.Object.(*argov1alpha1.Application)
		return !ok || !untouchedSinceCreated(app)
	}, UpdateFunc: func(e event.UpdateEvent) bool {
		oldApp, okOld := e.ObjectOld.(*argov1alpha1.Application)
		newApp, okNew := e.ObjectNew.(*argov1alpha1.Application)
		if !okOld || !okNew {
			return true
		}
		// A spec change that is not ours (the generation moves) is reverted below.
		return !sameState(State(oldApp), State(newApp)) || oldApp.Generation != newApp.Generation
	}}
	opts := manageropts.ControllerOptions(r.MaxConcurrentReconciles)
	if r.SkipNameValidation {
		skip := true
		opts.SkipNameValidation = &skip
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&argov1alpha1.Application{}, builder.WithPredicates(managed, recordedChange)).
		WatchesRawSource(r.queue.Source()).
		WithOptions(opts).
		Complete(r)
}

// Reconcile writes an Application's state when it changed, and notifies.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	start := time.Now()
	app := &argov1alpha1.Application{}
	if err := r.Client.Get(ctx, req.NamespacedName, app); err != nil {
		// A deleted Application's state goes with its row.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	st := State(app)
	if st.ApplicationID == "" {
		return ctrl.Result{}, nil
	}
	if r.Burst.Defer(st.ApplicationID, func() {
		agentmetrics.StatusHeld.Add(time.Since(start).Seconds())
		r.queue.Add(req)
	}) {
		// Recorded once the burst is carried out, as the Application is then.
		return ctrl.Result{}, nil
	}
	st.EngineInstanceID = r.Identity.InstanceID
	if st.ReconciledState != nil {
		st.ReconciledState.Destination = r.Identity.RowDestination(app.Labels[argocd.LabelTenantID], st.ReconciledState.Destination)
	}
	// Only this instance's applications: one that moved to another instance is reported
	// by that instance's agent.
	row, err := r.Store.GetApplicationForEngineInstance(ctx, r.DB, r.Identity.InstanceID, st.ApplicationID)
	changed := false
	var sync *finishedSync
	// An Application Argo CD has not looked at yet has nothing to report (the
	// deployment's status stays empty rather than Unknown).
	if err == nil && !reflect.ValueOf(app.Status).IsZero() {
		changed, sync, err = r.record(ctx, st)
	}
	switch {
	case errors.Is(err, db.ErrNotFound), errors.Is(err, db.ErrInvalidReference), errors.Is(err, db.ErrInvalid):
		// The row is gone (or was never this instance's): nothing to record.
		log.V(1).Info("No application row of this engine instance; state not recorded", "applicationID", st.ApplicationID)
		return ctrl.Result{}, nil
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("recording the state of application %s: %w", st.ApplicationID, err)
	}
	if changed && sync != nil {
		// Committed: observed here, before anything that may fail and retry, since the
		// retry finds the operation already written.
		agentmetrics.SyncDuration.WithLabelValues(sync.phase).Observe(sync.duration.Seconds())
	}
	stale, err := r.revertDrift(ctx, app, row)
	if err != nil {
		return ctrl.Result{}, err
	}
	if changed {
		// Only real writes: a reconcile that found the state unchanged wrote nothing.
		agentmetrics.StatusWrite.Observe(time.Since(start).Seconds())
		log.V(1).Info("Recorded application state", "applicationID", st.ApplicationID,
			"health", st.Health, "syncStatus", st.SyncStatus, "revision", st.Revision)
	}
	if stale {
		// Its next event may not pass the predicates (a status-only write), so it is
		// read again here.
		return ctrl.Result{RequeueAfter: statuspatch.StaleRetry}, nil
	}
	return ctrl.Result{}, nil
}

// record writes st when it changed, with its notification, and returns whether it did.
// A finished sync operation is timed once, and a SyncRun's result kept with it, in a
// transaction that locks the state written before: a second writer waits, then sees it.
func (r *Reconciler) record(ctx context.Context, st *db.ApplicationState) (changed bool, sync *finishedSync, err error) {
	if !finished(st.OperationState) {
		changed, err = r.Store.RecordApplicationState(ctx, r.DB, st, notify.ApplicationStateChanged)
		return changed, nil, err
	}
	err = r.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		prev, err := r.Store.LockApplicationOperationState(ctx, tx, st.ApplicationID)
		if err != nil {
			return err
		}
		sync = newlyFinished(prev, st.OperationState)
		// A SyncRun's result is kept with its sync operation: the next sync replaces the
		// operation state.
		if id := argocd.SyncOperationID(&st.OperationState.Operation); sync != nil && id != "" {
			if err := r.Store.RecordSyncResult(ctx, tx, st.ApplicationID, id, string(st.OperationState.Phase), st.OperationState.Message); err != nil {
				return err
			}
		}
		changed, err = r.Store.RecordApplicationState(ctx, tx, st, notify.ApplicationStateChanged)
		return err
	})
	if err != nil {
		return false, nil, err
	}
	return changed, sync, nil
}

// untouchedSinceCreated reports whether app is as the cluster-agent created it: Argo CD
// has not written its status yet, and its spec has not changed since its creation (an
// Application has no status subresource, so either moves its generation past 1). Such an
// Application has no state to record and no drift to revert: reading its row would cost
// a transaction for every Application created.
func untouchedSinceCreated(app *argov1alpha1.Application) bool {
	return app.Generation == 1 && reflect.ValueOf(app.Status).IsZero()
}

// revertDrift applies the row's spec again when the Application's differs from it (someone
// edited the Application by hand): the database is the source of truth. It reports stale
// when the Application changed or went since app was read: it must be read again.
func (r *Reconciler) revertDrift(ctx context.Context, app *argov1alpha1.Application, row *db.Application) (stale bool, err error) {
	if !app.DeletionTimestamp.IsZero() {
		return false, nil
	}
	want := r.Identity.Application(row.Name, row.ID, row.TenantID, row.Spec)
	if equality.Semantic.DeepEqual(want.Spec, app.Spec) {
		return false, nil
	}
	// Only the Application read: one deleted or released since (its row moved or went
	// after it was read) must not be created again, and one changed since must not be
	// overwritten with what was decided from the old one. The API server answers Conflict
	// to both.
	want.UID, want.ResourceVersion = app.UID, app.ResourceVersion
	if err := ssa.Apply(ctx, r.Client, want); err != nil {
		if apierrors.IsConflict(err) {
			return true, nil
		}
		return false, fmt.Errorf("reverting a change of Argo CD Application %s: %w", app.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Reverted a change of an Argo CD Application made outside the service", "application", app.Name)
	agentmetrics.DriftReverted.Inc()
	return false, nil
}

// State is what the service records of an Application's status.
func State(app *argov1alpha1.Application) *db.ApplicationState {
	s := &app.Status
	st := &db.ApplicationState{
		ApplicationID:  app.Labels[argocd.LabelApplicationID],
		Health:         healthStatus(string(s.Health.Status)),
		HealthMessage:  healthMessage(app),
		SyncStatus:     syncStatus(string(s.Sync.Status)),
		Revision:       s.Sync.Revision,
		Resources:      s.Resources,
		Conditions:     s.Conditions,
		OperationState: s.OperationState,
	}
	if st.Revision == "" && len(s.Sync.Revisions) > 0 {
		st.Revision = s.Sync.Revisions[0]
	}
	if !equality.Semantic.DeepEqual(s.Sync.ComparedTo, argov1alpha1.ComparedTo{}) {
		compared := s.Sync.ComparedTo
		st.ReconciledState = &compared
	}
	return st
}

// finishedSync is an Argo CD operation that ended: its phase and duration.
type finishedSync struct {
	phase    string
	duration time.Duration
}

// finished reports whether op is an operation Argo CD finished, with both its times.
func finished(op *argov1alpha1.OperationState) bool {
	if op == nil || op.StartedAt.IsZero() || op.FinishedAt == nil || op.FinishedAt.IsZero() {
		return false
	}
	switch op.Phase {
	case argov1alpha1.OperationSucceeded, argov1alpha1.OperationFailed, argov1alpha1.OperationError:
		return true
	}
	return false
}

// newlyFinished returns the operation cur if it finished and prev, the operation state
// written before, is not that same finished operation (the same startedAt and finishedAt):
// Argo CD keeps a finished operation in the status until the next one starts, through any
// number of other status changes. It returns nil otherwise.
func newlyFinished(prev, cur *argov1alpha1.OperationState) *finishedSync {
	if !finished(cur) {
		return nil
	}
	if finished(prev) && prev.StartedAt.Equal(&cur.StartedAt) && prev.FinishedAt.Equal(cur.FinishedAt) {
		return nil
	}
	return &finishedSync{phase: string(cur.Phase), duration: max(0, cur.FinishedAt.Sub(cur.StartedAt.Time))}
}

// sameState compares two states by their encoding (what the database would store).
func sameState(a, b *db.ApplicationState) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

// healthStatus maps Argo CD's health status onto the values the table accepts.
func healthStatus(s string) string {
	switch s {
	case db.HealthHealthy, db.HealthProgressing, db.HealthDegraded, db.HealthSuspended, db.HealthMissing:
		return s
	}
	return db.HealthUnknown
}

// syncStatus maps Argo CD's sync status onto the values the table accepts.
func syncStatus(s string) string {
	switch s {
	case db.SyncStatusSynced, db.SyncStatusOutOfSync:
		return s
	}
	return db.SyncStatusUnknown
}

// healthMessage explains an unhealthy Application: Argo CD v3 no longer sets an
// application-level message, so it is the first resource message with the Application's
// health status, as "<Kind>/<name>: <message>".
func healthMessage(app *argov1alpha1.Application) string {
	status := app.Status.Health.Status
	if status == "" || string(status) == db.HealthHealthy {
		return ""
	}
	for _, res := range app.Status.Resources {
		if res.Health != nil && res.Health.Status == status && res.Health.Message != "" {
			return fmt.Sprintf("%s/%s: %s", res.Kind, res.Name, res.Health.Message)
		}
	}
	return ""
}
