package argoapp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/uptrace/bun"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/orphans"
	"github.com/gitops-service/gitops-service/backend-shared/ssa"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/engine"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/operation"
)

// Defaults of Applications.
const (
	DefaultDeletionTimeout = 5 * time.Minute
	DefaultPollInterval    = 2 * time.Second
)

// argoFinalizerDomain ends the finalizers Argo CD acts on (resources-finalizer...,
// post-delete-finalizer...).
const argoFinalizerDomain = "argocd.argoproj.io"

// +kubebuilder:rbac:groups=argoproj.io,resources=applications,verbs=get;list;watch;create;update;patch;delete

// Applications carries out Application operations (resource id: the application row's id,
// which is the GitOpsDeployment's UID).
type Applications struct {
	// Client reads Argo CD Applications from the manager's cache and writes them.
	Client client.Client
	// APIReader reads from the API server directly: before deletion is reported done, an
	// Application the cache does not show (yet) is looked for there.
	APIReader client.Reader
	DB        bun.IDB
	Store     Store
	Identity  engine.Identity
	// Projects applies the tenant's AppProject before its Applications.
	Projects *Projects
	// DeletionTimeout is how long Argo CD gets to prune a deleted Application's resources
	// before the agent removes Argo CD's finalizer so that the deletion completes; zero
	// waits for Argo CD forever.
	DeletionTimeout time.Duration
	// PollInterval is how often a deletion in progress is checked (default 2s).
	PollInterval time.Duration
	// OrphanGracePeriod is how long after a forced deletion the resources Argo CD last
	// listed are left to their owners before the leftovers remover deletes those still
	// tracked by the deleted Application; zero records nothing, so nothing is removed.
	OrphanGracePeriod time.Duration
}

var _ operation.Handler = (*Applications)(nil)

// Handle implements operation.Handler: apply the Application of a row on this instance,
// let go of the Application of a row that moved to another instance (see release), and
// delete the Application of a missing row.
func (a *Applications) Handle(ctx context.Context, t operation.Target) (operation.Outcome, error) {
	row, err := a.locate(ctx, t.ResourceID)
	switch {
	case notFound(err):
		return a.delete(ctx, t) // deleted: Argo CD prunes
	case err != nil:
		return operation.Outcome{}, fmt.Errorf("reading the application: %w", err)
	case row.EngineInstanceID != a.Identity.InstanceID:
		return a.release(ctx, row) // moved: nothing is pruned
	}

	live := &argov1alpha1.Application{}
	err = a.Client.Get(ctx, client.ObjectKey{Namespace: a.Identity.Namespace, Name: row.Name}, live)
	if client.IgnoreNotFound(err) != nil {
		return operation.Outcome{}, fmt.Errorf("reading Argo CD Application %s: %w", row.Name, err)
	}
	if err == nil && live.DeletionTimestamp != nil {
		// Re-created while the previous one is still being deleted: apply once it is gone.
		_, after, err := a.awaitDeletion(ctx, live)
		if err != nil {
			return operation.Outcome{}, err
		}
		return operation.Waiting(fmt.Sprintf("waiting for the previous Argo CD Application %s to be deleted", row.Name), after), nil
	}

	app := a.Identity.Application(row.Name, row.ID, row.TenantID, row.Spec)
	if err := a.Projects.EnsureAdmits(ctx, row.TenantID, app); err != nil {
		return operation.Outcome{}, err
	}
	if err := ssa.Apply(ctx, a.Client, app); err != nil {
		if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
			return operation.Failed(fmt.Sprintf("Argo CD rejected Application %s: %s", row.Name, apiMessage(err))), nil
		}
		return operation.Outcome{}, fmt.Errorf("applying Argo CD Application %s: %w", row.Name, err)
	}
	if err := a.refresh(ctx, app, live, row.Refresh); err != nil {
		return operation.Outcome{}, err
	}
	return operation.Completed(fmt.Sprintf("Argo CD Application %s is up to date", row.Name)), nil
}

// locate reads the application's row once its tenant's lock is free, so that EnsureAdmits
// may trust the cache; a wait longer than an Ensure may hold the lock fails the operation,
// which is retried.
func (a *Applications) locate(ctx context.Context, id string) (*db.Application, error) {
	ctx, cancel := context.WithTimeout(ctx, ensureTimeout)
	defer cancel()
	return a.Store.LocateApplicationOnceTenantFree(ctx, a.DB, id)
}

// RefreshFieldManager owns the annotations of a refresh request, so that the service's
// server-side apply (which does not send them) never takes them back: Argo CD removes its
// refresh annotation once it has refreshed.
const RefreshFieldManager = "gitops-service-refresh"

// refresh asks Argo CD to refresh the Application now when the row carries a refresh
// request it has not been asked for yet: it sets Argo CD's refresh annotation and records
// the request as handled, in one patch.
func (a *Applications) refresh(ctx context.Context, app, live *argov1alpha1.Application, request string) error {
	if request == "" || (live.Name != "" && live.Annotations[argocd.AnnotationRefreshHandled] == request) {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		argov1alpha1.AnnotationKeyRefresh: string(argov1alpha1.RefreshTypeNormal), argocd.AnnotationRefreshHandled: request}}})
	if err != nil {
		return err
	}
	if err := a.Client.Patch(ctx, app, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(RefreshFieldManager)); err != nil {
		return fmt.Errorf("asking Argo CD to refresh Application %s: %w", app.Name, err)
	}
	return nil
}

// delete deletes the Argo CD Application of a missing row (found by name and by label) and
// waits until Argo CD has pruned its resources and the object is gone, or, past
// DeletionTimeout, removes Argo CD's finalizers so that it goes.
func (a *Applications) delete(ctx context.Context, t operation.Target) (operation.Outcome, error) {
	apps, err := a.find(ctx, a.Client, t.ResourceID)
	if err != nil {
		return operation.Outcome{}, err
	}
	if len(apps) == 0 && a.APIReader != nil {
		// An Application created moments ago may not be in the cache yet.
		if apps, err = a.find(ctx, a.APIReader, t.ResourceID); err != nil {
			return operation.Outcome{}, err
		}
	}
	tenantID := t.TenantID
	var waiting, forced []string
	var leftovers []orphans.Resource
	remaining := a.poll()
	for i := range apps {
		app := &apps[i]
		if tenantID == "" {
			tenantID = app.Labels[argocd.LabelTenantID]
		}
		if app.DeletionTimestamp == nil {
			if err := a.Client.Delete(ctx, app, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
				return operation.Outcome{}, fmt.Errorf("deleting Argo CD Application %s: %w", app.Name, err)
			}
			waiting = append(waiting, app.Name)
			continue
		}
		wasForced, after, err := a.awaitDeletion(ctx, app)
		if err != nil {
			return operation.Outcome{}, err
		}
		if wasForced {
			forced = append(forced, app.Name)
			leftovers = append(leftovers, listedResources(app)...)
			continue
		}
		waiting = append(waiting, app.Name)
		remaining = min(remaining, after)
	}
	if len(waiting) > 0 {
		return operation.Waiting(fmt.Sprintf("waiting for Argo CD to prune the resources of Application %s and delete it",
			strings.Join(waiting, ", ")), remaining), nil
	}
	if tenantID != "" {
		if _, err := a.Projects.Ensure(ctx, tenantID, forced...); err != nil {
			return operation.Outcome{}, err
		}
	}
	if len(forced) > 0 {
		msg := fmt.Sprintf("Argo CD Application %s deleted, but Argo CD did not finish pruning its resources within %s, "+
			"so its finalizer was removed: %s", strings.Join(forced, ", "), a.DeletionTimeout, argocd.MessageResourcesMayRemain)
		if len(leftovers) > 0 {
			msg += ": " + orphans.List(leftovers, maxListedLeftovers)
			if a.OrphanGracePeriod > 0 {
				msg += fmt.Sprintf("; those in the destination namespace still left in %s are removed unless annotated %s=true",
					a.OrphanGracePeriod, orphans.AnnotationKeep)
			}
		}
		return operation.Completed(msg), nil
	}
	return operation.Completed(fmt.Sprintf("Argo CD Application %s deleted", argocd.ApplicationName(types.UID(t.ResourceID)))), nil
}

// awaitDeletion checks an Application being deleted: while Argo CD has time left it
// says how soon to look again; past DeletionTimeout it removes Argo CD's finalizers so
// that the deletion completes, and reports that it forced it.
func (a *Applications) awaitDeletion(ctx context.Context, app *argov1alpha1.Application) (forced bool, after time.Duration, err error) {
	elapsed := time.Since(app.DeletionTimestamp.Time)
	if a.DeletionTimeout <= 0 {
		return false, a.poll(), nil
	}
	if elapsed < a.DeletionTimeout {
		return false, min(a.poll(), max(a.DeletionTimeout-elapsed, 100*time.Millisecond)), nil
	}
	if hasArgoFinalizer(app) {
		if err := a.recordLeftovers(ctx, app); err != nil {
			return false, 0, err
		}
		if err := a.removeArgoFinalizers(ctx, app); err != nil {
			return false, 0, err
		}
	}
	return true, a.poll(), nil
}

// recordLeftovers records, before Argo CD's finalizer is removed, the resources of app's
// destination namespace that Argo CD last listed, for the leftovers remover.
func (a *Applications) recordLeftovers(ctx context.Context, app *argov1alpha1.Application) error {
	resources := slices.DeleteFunc(listedResources(app), func(r orphans.Resource) bool {
		return r.Namespace == "" || r.Namespace != app.Spec.Destination.Namespace
	})
	if a.OrphanGracePeriod <= 0 || len(resources) == 0 {
		return nil
	}
	err := a.Store.RecordLeftovers(ctx, a.DB, &db.Leftovers{
		EngineInstanceID:     a.Identity.InstanceID,
		ApplicationName:      app.Name,
		DestinationName:      app.Spec.Destination.Name,
		DestinationServer:    app.Spec.Destination.Server,
		DestinationNamespace: app.Spec.Destination.Namespace,
		Resources:            resources,
		RemoveAfter:          time.Now().Add(a.OrphanGracePeriod),
	})
	if err != nil {
		return fmt.Errorf("recording what Application %s may leave behind: %w", app.Name, err)
	}
	return nil
}

// find returns the Argo CD Applications of an application id, by name and by label, as
// reader sees them.
func (a *Applications) find(ctx context.Context, reader client.Reader, applicationID string) ([]argov1alpha1.Application, error) {
	byName := argocd.ApplicationName(types.UID(applicationID))
	found := map[string]argov1alpha1.Application{}
	app := &argov1alpha1.Application{}
	err := reader.Get(ctx, client.ObjectKey{Namespace: a.Identity.Namespace, Name: byName}, app)
	switch {
	case err == nil:
		found[app.Name] = *app
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("reading Argo CD Application %s: %w", byName, err)
	}
	list := &argov1alpha1.ApplicationList{}
	if err := reader.List(ctx, list, client.InNamespace(a.Identity.Namespace),
		client.MatchingLabels{argocd.LabelApplicationID: applicationID}); err != nil {
		return nil, fmt.Errorf("listing Argo CD Applications of application %s: %w", applicationID, err)
	}
	for _, item := range list.Items {
		found[item.Name] = item
	}
	out := make([]argov1alpha1.Application, 0, len(found))
	for _, item := range found {
		out = append(out, item)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (a *Applications) removeArgoFinalizers(ctx context.Context, app *argov1alpha1.Application) error {
	patch := client.MergeFromWithOptions(app.DeepCopy(), client.MergeFromWithOptimisticLock{})
	var keep []string
	for _, f := range app.Finalizers {
		if !isArgoFinalizer(f) {
			keep = append(keep, f)
		}
	}
	app.Finalizers = keep
	if err := a.Client.Patch(ctx, app, patch); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("removing Argo CD's finalizers from Application %s: %w", app.Name, err)
	}
	return nil
}

func (a *Applications) poll() time.Duration {
	if a.PollInterval > 0 {
		return a.PollInterval
	}
	return DefaultPollInterval
}

func hasArgoFinalizer(app *argov1alpha1.Application) bool {
	for _, f := range app.Finalizers {
		if isArgoFinalizer(f) {
			return true
		}
	}
	return false
}

func isArgoFinalizer(f string) bool {
	domain, _, _ := strings.Cut(f, "/")
	return strings.HasSuffix(domain, argoFinalizerDomain)
}

// apiMessage is the API server's message of an error, without the client's wrapping.
func apiMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return status.Status().Message
	}
	return err.Error()
}

// maxListedLeftovers bounds the resources named in an operation's state.
const maxListedLeftovers = 10

// listedResources are the resources Argo CD last listed for an Application.
func listedResources(app *argov1alpha1.Application) []orphans.Resource {
	out := make([]orphans.Resource, 0, len(app.Status.Resources))
	for _, r := range app.Status.Resources {
		out = append(out, orphans.Resource{Group: r.Group, Version: r.Version, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name})
	}
	return out
}
