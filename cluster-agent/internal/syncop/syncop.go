// Package syncop carries out SyncOperation operations (GitOpsDeploymentSyncRuns): it asks
// Argo CD to sync an Application to a revision, by setting the Application's `operation`,
// or to terminate the sync it started.
package syncop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/engine"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/operation"
)

const (
	// Initiator is the user name recorded as the initiator of the service's syncs.
	Initiator = "gitops-service"
	// AnnotationRefresh asks Argo CD to refresh an Application.
	AnnotationRefresh = "argocd.argoproj.io/refresh"
	// FieldOwner is the field manager of the agent's sync patches.
	FieldOwner = "gitops-service-sync"
	// DefaultPollInterval is how often a sync waiting for another operation looks again.
	DefaultPollInterval = time.Second
)

// Store is the part of the database the handler uses.
type Store interface {
	GetSyncOperation(ctx context.Context, idb bun.IDB, tenantID, id string) (*db.SyncOperation, error)
	GetApplicationForEngineInstance(ctx context.Context, idb bun.IDB, engineInstanceID, id string) (*db.Application, error)
	ListOperationsForResource(ctx context.Context, idb bun.IDB, resourceType db.OperationResourceType, resourceID string) ([]db.Operation, error)
	RecordSyncResult(ctx context.Context, idb bun.IDB, applicationID, id, phase, message string) error
}

// Handler carries out SyncOperation operations (resource id: the sync operation's id,
// which is the SyncRun's UID).
type Handler struct {
	// Client reads Argo CD Applications from the manager's cache and patches them.
	Client client.Client
	// APIReader reads from the API server directly: an Application the agent has just
	// created may not be in the cache yet.
	APIReader client.Reader
	DB        bun.IDB
	Store     Store
	Identity  engine.Identity
	// PollInterval is how often a sync waiting for a running operation looks again.
	PollInterval time.Duration
}

var _ operation.Handler = (*Handler)(nil)

// Handle implements operation.Handler.
func (h *Handler) Handle(ctx context.Context, t operation.Target) (operation.Outcome, error) {
	gone := operation.Completed("the sync operation no longer exists; nothing to do")
	if t.TenantID == "" {
		return gone, nil
	}
	so, err := h.Store.GetSyncOperation(ctx, h.DB, t.TenantID, t.ResourceID)
	if errors.Is(err, db.ErrNotFound) || errors.Is(err, db.ErrInvalid) {
		return gone, nil
	}
	if err != nil {
		return operation.Outcome{}, fmt.Errorf("reading the sync operation: %w", err)
	}
	noApp := operation.Completed("the application of the sync operation no longer exists; nothing to sync")
	if so.ApplicationID == "" {
		return noApp, nil
	}
	row, err := h.Store.GetApplicationForEngineInstance(ctx, h.DB, h.Identity.InstanceID, so.ApplicationID)
	if errors.Is(err, db.ErrNotFound) {
		return noApp, nil
	}
	if err != nil {
		return operation.Outcome{}, fmt.Errorf("reading the application: %w", err)
	}

	app := &argov1alpha1.Application{}
	key := client.ObjectKey{Namespace: h.Identity.Namespace, Name: row.Name}
	err = h.Client.Get(ctx, key, app)
	if apierrors.IsNotFound(err) && h.APIReader != nil {
		err = h.APIReader.Get(ctx, key, app)
	}
	if apierrors.IsNotFound(err) {
		pending, err := h.applicationPending(ctx, row.ID)
		if err != nil {
			return operation.Outcome{}, err
		}
		if pending {
			return operation.Waiting(fmt.Sprintf("waiting for Argo CD Application %s to be created", row.Name), h.poll()), nil
		}
		return operation.Failed(fmt.Sprintf("Argo CD Application %s does not exist", row.Name)), nil
	}
	if err != nil {
		return operation.Outcome{}, fmt.Errorf("reading Argo CD Application %s: %w", row.Name, err)
	}

	if so.DesiredState == db.SyncTerminated {
		return h.terminate(ctx, so, app)
	}
	return h.sync(ctx, so, row, app)
}

// sync sets the Application's `operation`, once: not while another operation is pending or
// running, and not again once Argo CD has the sync.
func (h *Handler) sync(ctx context.Context, so *db.SyncOperation, row *db.Application, app *argov1alpha1.Application) (operation.Outcome, error) {
	requested := operation.Completed(fmt.Sprintf("sync of Argo CD Application %s requested", app.Name))
	if ownedBy(app.Operation, so.ID) || (app.Status.OperationState != nil && ownedBy(&app.Status.OperationState.Operation, so.ID)) {
		return requested, nil
	}
	if Busy(app) {
		return operation.Waiting(fmt.Sprintf("waiting for the running operation of Argo CD Application %s to finish", app.Name), h.poll()), nil
	}
	if err := h.keepResult(ctx, row.ID, app.Status.OperationState); err != nil {
		return operation.Outcome{}, err
	}
	op := argocd.SyncOperation(row.Spec, so.Revision, Initiator)
	op.Info = append(op.Info, &argov1alpha1.Info{Name: argocd.InfoSyncOperationID, Value: so.ID})
	patch := map[string]any{
		"metadata": map[string]any{
			// Optimistic lock: never replace an operation the cache did not show yet.
			"resourceVersion": app.ResourceVersion,
			"annotations":     map[string]any{AnnotationRefresh: "hard"},
		},
		"operation": op,
		"status":    map[string]any{"operationState": nil},
	}
	if err := h.patch(ctx, app, patch); err != nil {
		if apierrors.IsConflict(err) {
			return operation.Waiting(fmt.Sprintf("Argo CD Application %s changed; retrying", app.Name), h.poll()), nil
		}
		if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
			return operation.Failed(fmt.Sprintf("Argo CD rejected the sync of Application %s: %s", app.Name, apiMessage(err))), nil
		}
		return operation.Outcome{}, err
	}
	if so.Revision != "" {
		return operation.Completed(fmt.Sprintf("sync of Argo CD Application %s to revision %q requested", app.Name, so.Revision)), nil
	}
	return requested, nil
}

// terminate cancels the sync: withdraws its `operation` if Argo CD has not started it, or
// asks Argo CD to terminate the running operation.
func (h *Handler) terminate(ctx context.Context, so *db.SyncOperation, app *argov1alpha1.Application) (operation.Outcome, error) {
	state := app.Status.OperationState
	running := state != nil && state.Phase == argov1alpha1.OperationRunning
	var patch map[string]any
	var done string
	switch {
	case running:
		if other := argocd.SyncOperationID(&state.Operation); other != "" && other != so.ID {
			return operation.Completed(fmt.Sprintf("the running operation of Argo CD Application %s belongs to another sync; left running", app.Name)), nil
		}
		patch = map[string]any{"status": map[string]any{"operationState": map[string]any{"phase": argov1alpha1.OperationTerminating}}}
		done = fmt.Sprintf("termination of the running operation of Argo CD Application %s requested", app.Name)
	case ownedBy(app.Operation, so.ID):
		patch = map[string]any{"operation": nil}
		done = fmt.Sprintf("sync of Argo CD Application %s withdrawn before Argo CD started it", app.Name)
	default:
		return operation.Completed(fmt.Sprintf("no operation of Argo CD Application %s is running; nothing to terminate", app.Name)), nil
	}
	patch["metadata"] = map[string]any{"resourceVersion": app.ResourceVersion}
	if err := h.patch(ctx, app, patch); err != nil {
		if apierrors.IsConflict(err) {
			return operation.Waiting(fmt.Sprintf("Argo CD Application %s changed; retrying", app.Name), h.poll()), nil
		}
		return operation.Outcome{}, err
	}
	return operation.Completed(done), nil
}

// keepResult records the result of the finished sync the next sync is about to replace in
// the Application's status, so that its SyncRun keeps it even if the backend never saw it.
func (h *Handler) keepResult(ctx context.Context, applicationID string, state *argov1alpha1.OperationState) error {
	if state == nil || !state.Phase.Completed() {
		return nil
	}
	id := argocd.SyncOperationID(&state.Operation)
	if id == "" {
		return nil
	}
	if err := h.Store.RecordSyncResult(ctx, h.DB, applicationID, id, string(state.Phase), state.Message); err != nil {
		return fmt.Errorf("recording the result of sync operation %s: %w", id, err)
	}
	return nil
}

func (h *Handler) patch(ctx context.Context, app *argov1alpha1.Application, patch map[string]any) error {
	data, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	if err := h.Client.Patch(ctx, app, client.RawPatch(types.MergePatchType, data), client.FieldOwner(FieldOwner)); err != nil {
		return fmt.Errorf("patching Argo CD Application %s: %w", app.Name, err)
	}
	return nil
}

// applicationPending reports whether an Application operation of this instance on the
// application is not finished yet (so its Argo CD Application may be about to appear).
func (h *Handler) applicationPending(ctx context.Context, applicationID string) (bool, error) {
	ops, err := h.Store.ListOperationsForResource(ctx, h.DB, db.OperationResourceApplication, applicationID)
	if err != nil {
		return false, fmt.Errorf("listing the application's operations: %w", err)
	}
	for _, op := range ops {
		if op.EngineInstanceID == h.Identity.InstanceID && !op.State.Finished() {
			return true, nil
		}
	}
	return false, nil
}

func (h *Handler) poll() time.Duration {
	if h.PollInterval > 0 {
		return h.PollInterval
	}
	return DefaultPollInterval
}

// Busy reports whether an Application has an operation pending (`operation` set) or running.
func Busy(app *argov1alpha1.Application) bool {
	if app.Operation != nil {
		return true
	}
	return app.Status.OperationState != nil && app.Status.OperationState.Phase == argov1alpha1.OperationRunning
}

func ownedBy(op *argov1alpha1.Operation, id string) bool {
	return op != nil && argocd.SyncOperationID(op) == id
}

func apiMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return status.Status().Message
	}
	return err.Error()
}
