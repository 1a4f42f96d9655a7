// Package argoapp carries out Application and AppProject operations: it makes the Argo CD
// Application of an application row, and the AppProjects of a tenant, match the database,
// creating, updating or deleting them.
package argoapp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/ssa"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/engine"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/operation"
)

// inClusterName is Argo CD's name of the cluster it runs on.
const inClusterName = "in-cluster"

// Store is the part of the database the package uses.
type Store interface {
	ListApplications(ctx context.Context, idb bun.IDB, tenantID string) ([]db.Application, error)
	ListAppProjectRepositories(ctx context.Context, idb bun.IDB, tenantID string) ([]string, error)
	ListAppProjectDestinations(ctx context.Context, idb bun.IDB, tenantID string) ([]string, error)
	LocateApplicationOnceTenantFree(ctx context.Context, idb bun.IDB, id string) (*db.Application, error)
	ApplicationAdopted(ctx context.Context, idb bun.IDB, id string) (bool, error)
	FinishApplicationMove(ctx context.Context, idb bun.IDB, id, from string) error
	TenantServedBy(ctx context.Context, idb bun.IDB, tenantID, engineInstanceID string) (bool, error)
	GetTenant(ctx context.Context, idb bun.IDB, id string) (*db.Tenant, error)
	RecordLeftovers(ctx context.Context, idb bun.IDB, l *db.Leftovers) error
	WithTenantLock(ctx context.Context, idb bun.IDB, tenantID string, fn func(ctx context.Context, tx bun.Tx) error) error
}

// +kubebuilder:rbac:groups=argoproj.io,resources=appprojects,verbs=get;list;watch;create;update;patch;delete

// Projects carries out AppProject operations (resource id: the tenant's id).
type Projects struct {
	// Client reads Argo CD Applications and AppProjects from the manager's cache and writes
	// AppProjects. It must read its own writes (controller-runtime's read-your-writes
	// consistency): the next Ensure of a tenant may start the moment this one ends and
	// decides from the cache, so a deletion it still saw as present would leave a project
	// the tenant needs again deleted, and a spec it saw as already wanted would not be
	// written back.
	Client client.Client
	// APIReader reads Applications from the API server when deciding whether a tenant
	// served elsewhere still needs anything here (the cache may lag behind a release).
	APIReader client.Reader
	DB        bun.IDB
	Store     Store
	Identity  engine.Identity
	// TenantClusters keeps the tenants' own cluster entries, through which Argo CD deploys
	// into their namespaces (with Identity.TenantAPIURL set).
	TenantClusters TenantClusters
}

// TenantClusters keeps the cluster entry of each tenant's own namespace (see
// credsecret.TenantClusters).
type TenantClusters interface {
	Ensure(ctx context.Context, tenantID, namespace string) error
	Remove(ctx context.Context, tenantID string) error
}

var _ operation.Handler = (*Projects)(nil)

// Handle implements operation.Handler.
func (p *Projects) Handle(ctx context.Context, t operation.Target) (operation.Outcome, error) {
	kept, err := p.Ensure(ctx, t.ResourceID)
	if err != nil {
		return operation.Outcome{}, err
	}
	if len(kept) == 0 {
		return operation.Completed(fmt.Sprintf("AppProjects of tenant %s deleted: the tenant has no applications or managed environments on this engine instance", t.ResourceID)), nil
	}
	return operation.Completed(fmt.Sprintf("AppProject %s is up to date", strings.Join(kept, " and "))), nil
}

// Ensure applies a tenant's two AppProjects (see argocd.AppProjects), or deletes each one
// that no application row on this engine instance, no Argo CD Application left in the
// namespace and no destination needs. It returns the names of the AppProjects that exist
// now. Applications named in gone are ignored: the caller just let them go, and the cache
// may still show them.
//
// Destinations are the in-cluster namespaces the tenant's applications deploy to (rows,
// plus Argo CD Applications still being deleted, which need their destination to prune)
// and every managed environment of the tenant's AppProject rows, any namespace.
//
// A tenant this instance no longer serves (it moved to another instance, or is gone) keeps
// its AppProjects here only while Argo CD Applications of it remain. Its cluster and
// repository Secrets are the credential handlers' to delete: a cluster Secret stays while
// the tenant has an AppProject here (see credsecret.Clusters).
//
// Calls for one tenant, and the credential handlers of the tenant, run one at a time under
// the tenant's advisory lock (Store.WithTenantLock), each reading the database afresh in
// the lock's transaction.
func (p *Projects) Ensure(ctx context.Context, tenantID string, gone ...string) ([]string, error) {
	var kept []string
	err := p.locked(ctx, tenantID, func(ctx context.Context, tx bun.Tx) error {
		var err error
		kept, err = p.ensure(ctx, tx, tenantID, gone)
		return err
	})
	return kept, err
}

// EnsureAdmits makes sure that the AppProject of app admits it, running Ensure only when
// the project, as the cache shows it, does not: most Application operations then cost a
// read of the cache, not a transaction and a read of every row of the tenant. The caller
// has waited for the tenant's lock to be free since the operation began
// (LocateApplicationOnceTenantFree), which makes the cache safe to read: an Ensure that
// held the lock before has let go only once the cache showed its writes (a project it
// deleted shows gone), and one that takes it after reads the row of app, which was written
// before this operation, and keeps the project admitting it.
func (p *Projects) EnsureAdmits(ctx context.Context, tenantID string, app *argov1alpha1.Application) error {
	project := &argov1alpha1.AppProject{}
	err := p.Client.Get(ctx, client.ObjectKey{Namespace: p.Identity.Namespace, Name: app.Spec.Project}, project)
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("reading AppProject %s: %w", app.Spec.Project, err)
	}
	if err == nil && admits(project, app) {
		return nil
	}
	_, err = p.Ensure(ctx, tenantID)
	return err
}

// locked runs fn in a transaction holding the tenant's advisory lock, within ensureTimeout.
func (p *Projects) locked(ctx context.Context, tenantID string, fn func(ctx context.Context, tx bun.Tx) error) error {
	ctx, cancel := context.WithTimeout(ctx, ensureTimeout)
	defer cancel()
	return p.Store.WithTenantLock(ctx, p.DB, tenantID, fn)
}

// ensureTimeout bounds an Ensure, which holds a database connection and the tenant's lock
// while it waits for the cache to show its own writes (milliseconds, normally). One that
// times out fails the operation, which is retried.
const ensureTimeout = 30 * time.Second

// admits reports whether an AppProject as the service wrote it (the tenant's, not being
// deleted, not edited by hand) lists app's repository and destination. A project that
// admits more than the rows now need keeps it until the tenant's next Ensure: every
// destination it lists was one of the tenant's.
func admits(project *argov1alpha1.AppProject, app *argov1alpha1.Application) bool {
	if project.DeletionTimestamp != nil || app.Spec.Source == nil ||
		project.Labels[argocd.LabelTenantID] != app.Labels[argocd.LabelTenantID] ||
		project.Annotations[argocd.AnnotationDataHash] != argocd.ProjectSpecHash(project.Spec) {
		return false
	}
	repo := argocd.RepositoryKey(app.Spec.Source.RepoURL)
	if !slices.ContainsFunc(project.Spec.SourceRepos, func(r string) bool { return argocd.RepositoryKey(r) == repo }) {
		return false
	}
	d := app.Spec.Destination
	return slices.ContainsFunc(project.Spec.Destinations, func(pd argov1alpha1.ApplicationDestination) bool {
		return pd.Server == d.Server && pd.Name == d.Name && (pd.Namespace == d.Namespace || pd.Namespace == "*")
	})
}

func (p *Projects) ensure(ctx context.Context, tx bun.Tx, tenantID string, gone []string) ([]string, error) {
	served, err := p.Store.TenantServedBy(ctx, tx, tenantID, p.Identity.InstanceID)
	if err != nil {
		return nil, fmt.Errorf("checking whether the tenant is served here: %w", err)
	}
	apps, err := p.Store.ListApplications(ctx, tx, tenantID)
	if err != nil {
		return nil, fmt.Errorf("listing the tenant's applications: %w", err)
	}
	envs, err := p.Store.ListAppProjectDestinations(ctx, tx, tenantID)
	if err != nil {
		return nil, fmt.Errorf("listing the tenant's AppProject destinations: %w", err)
	}
	repos, err := p.Store.ListAppProjectRepositories(ctx, tx, tenantID)
	if err != nil {
		return nil, fmt.Errorf("listing the tenant's AppProject repositories: %w", err)
	}
	// Applications are written through another client: there are no writes of this one
	// to wait for.
	var reader client.Reader = p.Client
	if !served && p.APIReader != nil {
		reader = p.APIReader
	}
	list := &argov1alpha1.ApplicationList{}
	if err := reader.List(ctx, list, client.InNamespace(p.Identity.Namespace), client.DisableReadYourWritesConsistency,
		client.MatchingLabels{argocd.LabelManagedBy: argocd.ManagedByValue, argocd.LabelTenantID: tenantID}); err != nil {
		return nil, fmt.Errorf("listing the tenant's Argo CD Applications: %w", err)
	}
	// An Application going away without Argo CD's finalizer prunes nothing, so it needs
	// no project either.
	live := slices.DeleteFunc(list.Items, func(app argov1alpha1.Application) bool {
		return slices.Contains(gone, app.Name) || (app.DeletionTimestamp != nil && !hasArgoFinalizer(&app))
	})

	// An AppProject is needed while an Application of this instance is in it, whatever
	// its destination, so that Argo CD can still prune and delete it.
	// The rows say in-cluster, which is the tenant's own server here; a live Application
	// may still name the server it was written with (before the tenant had its own cluster
	// entry), and needs it admitted until it is written again.
	localServer := p.Identity.LocalServer(tenantID)
	var dests []argocd.ProjectDestination
	needed := map[string]bool{}
	use := func(spec argov1alpha1.ApplicationSpec, live bool) {
		needed[spec.Project] = true
		d, ok := onServiceCluster(spec.Destination, p.Identity.ServiceServer(), localServer)
		if !ok {
			return
		}
		if live && spec.Destination.Server != localServer {
			d.Server = cmp.Or(spec.Destination.Server, argocd.InClusterServer)
		}
		dests = append(dests, d)
	}
	for _, app := range apps {
		if app.EngineInstanceID == p.Identity.InstanceID || app.MovingFromEngineInstanceID == p.Identity.InstanceID {
			use(app.Spec, false)
		}
	}
	for _, app := range live {
		use(app.Spec, true)
	}
	if served || needed[argocd.RemoteAppProjectName(tenantID)] {
		for _, env := range envs {
			dests = append(dests, argocd.ProjectDestination{ManagedEnvironmentID: env, Namespace: "*"})
		}
	}
	local, remote := argocd.AppProjects(p.Identity.Namespace, tenantID, localServer, repos, dests)
	return p.keep(ctx, tx, tenantID, local, remote, needed)
}

// keep writes each of the tenant's two AppProjects that is needed or has destinations, and
// deletes the other, with the tenant's own cluster entry going and coming with the local
// one. It returns the names of those it kept.
func (p *Projects) keep(ctx context.Context, tx bun.Tx, tenantID string, local, remote *argov1alpha1.AppProject,
	needed map[string]bool) ([]string, error) {
	var kept []string
	for _, project := range []*argov1alpha1.AppProject{local, remote} {
		if !needed[project.Name] && len(project.Spec.Destinations) == 0 {
			deleted, err := p.deleteIfPresent(ctx, project)
			if err == nil && deleted && project == local && p.TenantClusters != nil {
				err = p.TenantClusters.Remove(ctx, tenantID)
			}
			if err != nil {
				return nil, err
			}
			continue
		}
		if project == local && p.TenantClusters != nil && p.Identity.TenantAPIURL != "" {
			// Before the project: Argo CD must know the cluster its Applications name.
			if err := p.ensureTenantCluster(ctx, tx, tenantID); err != nil {
				return nil, err
			}
		}
		kept = append(kept, project.Name)
		if err := p.write(ctx, project); err != nil {
			return nil, err
		}
	}
	return kept, nil
}

// ensureTenantCluster keeps the cluster entry of the tenant's own namespace, as the tenant
// row names it: never a namespace an application row names.
func (p *Projects) ensureTenantCluster(ctx context.Context, tx bun.Tx, tenantID string) error {
	tenant, err := p.Store.GetTenant(ctx, tx, tenantID)
	if err != nil {
		return fmt.Errorf("reading the tenant: %w", err)
	}
	return p.TenantClusters.Ensure(ctx, tenantID, tenant.NamespaceName)
}

// deleteIfPresent deletes an AppProject the cache shows: most tenants never have one of
// their two projects, and a delete call per operation would cost an API request each.
// One created so recently that the cache misses it is left to the sweep.
// It reports whether the project was there.
func (p *Projects) deleteIfPresent(ctx context.Context, project *argov1alpha1.AppProject) (bool, error) {
	present := &argov1alpha1.AppProject{}
	err := p.Client.Get(ctx, client.ObjectKeyFromObject(project), present)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err == nil {
		err = client.IgnoreNotFound(p.Client.Delete(ctx, present))
	}
	if err != nil {
		return false, fmt.Errorf("deleting AppProject %s: %w", project.Name, err)
	}
	return true, nil
}

// write makes the AppProject say what want says, writing only when it does not. A project
// that exists gets its whole spec replaced: server-side apply would keep fields someone
// else added by hand (a "*" in sourceRepos), which must go.
func (p *Projects) write(ctx context.Context, want *argov1alpha1.AppProject) error {
	have := &argov1alpha1.AppProject{}
	err := p.Client.Get(ctx, client.ObjectKeyFromObject(want), have)
	switch {
	case apierrors.IsNotFound(err):
		if err := ssa.Apply(ctx, p.Client, want); err != nil {
			return fmt.Errorf("applying AppProject %s: %w", want.Name, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("reading AppProject %s: %w", want.Name, err)
	case upToDate(have, want):
		return nil
	}
	have.Spec = want.Spec
	if have.Labels == nil {
		have.Labels = map[string]string{}
	}
	for k, v := range want.Labels {
		have.Labels[k] = v
	}
	if have.Annotations == nil {
		have.Annotations = map[string]string{}
	}
	for k, v := range want.Annotations {
		have.Annotations[k] = v
	}
	// The resource version read makes this an optimistic write: a project changed since
	// conflicts, and the operation is retried from a fresh read.
	if err := p.Client.Update(ctx, have, client.FieldOwner(argocd.FieldManager)); err != nil {
		return fmt.Errorf("updating AppProject %s: %w", want.Name, err)
	}
	return nil
}

// upToDate reports whether the AppProject already says what want says, so that an
// Application change costs no AppProject write in the common case.
func upToDate(have, want *argov1alpha1.AppProject) bool {
	for k, v := range want.Labels {
		if have.Labels[k] != v {
			return false
		}
	}
	for k, v := range want.Annotations {
		if have.Annotations[k] != v {
			return false
		}
	}
	return equality.Semantic.DeepEqual(have.Spec, want.Spec)
}

// onServiceCluster is the project destination of an Application destination on the
// service's cluster: in-cluster as a row says it, serviceServer as an Application of an
// engine instance on another cluster says it, or the tenant's own localServer.
func onServiceCluster(d argov1alpha1.ApplicationDestination, serviceServer, localServer string) (argocd.ProjectDestination, bool) {
	if d.Server == argocd.InClusterServer || d.Server == serviceServer || d.Server == localServer ||
		(d.Server == "" && d.Name == inClusterName) {
		return argocd.ProjectDestination{Namespace: d.Namespace}, d.Namespace != ""
	}
	return argocd.ProjectDestination{}, false
}

// notFound reports a row that does not exist, or an id that cannot name one.
func notFound(err error) bool {
	return errors.Is(err, db.ErrNotFound) || errors.Is(err, db.ErrInvalid)
}
