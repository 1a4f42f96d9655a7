// Package sweep is the cluster-agent's safety net, a leader-elected manager Runnable that
// periodically:
//
//   - deletes the Argo CD Applications of the engine namespace that carry the service's
//     labels but whose application row no longer exists on this engine instance, through
//     the normal path: an Application Operation (row and CR), as the backend writes when a
//     GitOpsDeployment goes, carried out by the Operation controller and its
//     argoapp handler (Argo CD prunes, a stuck finalizer is removed after the timeout);
//   - does the same for the service's cluster Secrets, repository Secrets and AppProjects
//     whose managed environment, repository credential or tenant no longer has a row on
//     this engine instance (a ManagedEnvironment, RepositoryCredential or AppProject
//     operation, whose handler deletes them);
//   - puts back what was deleted by hand while its row exists: an application of this
//     instance without its Argo CD Application, its tenant's AppProjects or its managed
//     environment's cluster Secret, and a repository credential of this instance without
//     its repository Secret, each through an operation of its kind with the owner tenant
//     (the handler applies the row again);
//   - hands this instance's unfinished operations older than a grace period back to the
//     Operation controller, and has it take the instance's signal whenever it is up or an
//     operation is Waiting (the backend crashed between commit and CR, a CR was deleted by
//     hand, or the database lost a state write or the signal's taking down), so that they
//     are carried out without a restart.
//
// Objects without the service's labels are never touched.
package sweep

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/uptrace/bun"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/periodic"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/engine"
)

// Defaults of the sweep.
const (
	DefaultInterval = 10 * time.Minute
	// DefaultBatchSize is large enough that a sweep of thousands of Argo CD objects costs
	// a few statements: the statements, not the rows, are what an idle instance pays.
	DefaultBatchSize = 1000
	// DefaultOperationGrace is how old an unfinished operation must be before the sweep
	// hands it back to the operation controller: long enough that an operation being
	// carried out is rarely handed back (which costs one more run of its handler), short
	// enough that one whose finishing write the database lost is carried out again soon.
	DefaultOperationGrace = 30 * time.Second
	// DefaultGCExpirationSeconds is the retention of the operations the sweep creates (the
	// backend's --operation-retention default).
	DefaultGCExpirationSeconds = 600
)

// Metric labels.
const (
	KindApplication      = "Application"
	KindClusterSecret    = "ClusterSecret"
	KindRepositorySecret = "RepositorySecret"
	KindAppProject       = "AppProject"
)

var (
	removedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gitops_cluster_agent_sweep_removed_total",
		Help: "Orphans the periodic sweep acted on, by kind: Application, ClusterSecret, RepositorySecret, AppProject (labelled Argo CD object without a row, deletion signalled).",
	}, []string{"kind"})
	runsTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "gitops_cluster_agent_sweep_runs_total",
		Help: "Runs of the periodic sweep.",
	})
	restoredTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "gitops_cluster_agent_sweep_restored_total",
		Help: "Argo CD objects changed or deleted by hand whose restoring the periodic sweep signalled.",
	})
)

func init() {
	ctrlmetrics.Registry.MustRegister(removedTotal, runsTotal, restoredTotal)
}

// PendingStore is the part of the database the sweep reads to hand operations back.
type PendingStore interface {
	ListPendingOperations(ctx context.Context, idb bun.IDB, engineInstanceID string) ([]db.Operation, error)
	GetSignal(ctx context.Context, idb bun.IDB, engineInstanceID string) (*db.OperationSignal, error)
}

// Store is the part of the database the sweep uses.
type Store interface {
	PendingStore
	ExistingApplicationIDs(ctx context.Context, idb bun.IDB, engineInstanceID string, ids []string) (map[string]bool, error)
	ExistingManagedEnvironmentIDs(ctx context.Context, idb bun.IDB, engineInstanceID string, ids []string) (map[string]bool, error)
	ExistingRepositoryCredentialIDs(ctx context.Context, idb bun.IDB, engineInstanceID string, ids []string) (map[string]bool, error)
	ExistingTenantIDs(ctx context.Context, idb bun.IDB, engineInstanceID string, ids []string) (map[string]bool, error)
	ServedTenantIDs(ctx context.Context, idb bun.IDB, engineInstanceID string, ids []string) (map[string]bool, error)
	ListOperationsForResource(ctx context.Context, idb bun.IDB, resourceType db.OperationResourceType, resourceID string) ([]db.Operation, error)
	ListInstanceApplicationsAfter(ctx context.Context, idb bun.IDB, engineInstanceID, afterID string, limit int) ([]db.InstanceResource, error)
	ListInstanceRepositoryCredentialsAfter(ctx context.Context, idb bun.IDB, engineInstanceID, afterID string, limit int) ([]db.InstanceResource, error)
	CreateOperation(ctx context.Context, idb bun.IDB, op *db.Operation) error
}

// Sweeper is the Runnable.
type Sweeper struct {
	// Client lists Applications and reads Operation CRs from the manager's cache (the
	// engine namespace), and creates Operation CRs; APIReader confirms a CR is missing.
	Client    client.Client
	APIReader client.Reader
	DB        bun.IDB
	Store     Store
	Identity  engine.Identity
	// Interval between runs (jittered ±20%), the first one interval after start; zero or
	// less disables the sweep.
	Interval time.Duration
	// BatchSize bounds the ids of one database query (default 1000).
	BatchSize int
	// OperationGrace (default 30 seconds) is how old an unfinished operation must be to be
	// handed back to the operation controller through Requeue.
	OperationGrace time.Duration
	// Requeue hands a pending operation back to the operation controller (nil: never).
	Requeue func(op *db.Operation)
	// TakeSignal has the operation controller take the instance's signal (nil: never).
	TakeSignal func()
	// GCExpirationSeconds is the retention of the deletion operations the sweep creates
	// (default DefaultGCExpirationSeconds).
	GCExpirationSeconds int
}

// +kubebuilder:rbac:groups=managed-gitops.redhat.com,resources=operations,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=argoproj.io,resources=applications,verbs=get;list;watch
// +kubebuilder:rbac:groups=argoproj.io,resources=appprojects,verbs=list
// +kubebuilder:rbac:groups="",resources=secrets,verbs=list

// Task runs the sweep every Interval (jittered; 0 disables it), on the leader.
func (s *Sweeper) Task() *periodic.Task {
	return &periodic.Task{Name: "sweep", Interval: s.Interval, Run: func(ctx context.Context) error {
		_, err := s.Run(ctx)
		return err
	}}
}

// Result counts what one run did.
type Result struct {
	Applications, ClusterSecrets, RepositorySecrets, AppProjects, Skipped int
	// Restored counts objects changed or deleted by hand whose restoring was signalled.
	Restored int
	// OperationsRequeued counts pending operations handed back to the operation controller.
	OperationsRequeued int
	// SignalTaken says the operation controller was asked to take the instance's signal.
	SignalTaken bool
}

// present is what the sweep found in the engine namespace, by row id: Applications by
// application, cluster Secrets by managed environment, repository Secrets by repository
// credential and AppProjects by tenant.
type present struct {
	applications                     map[string]bool
	clusters, repositories, projects map[string]object
}

func sweepFinding(ownerTenantID string, resourceType db.OperationResourceType) string {
	if ownerTenantID == "" {
		return "orphaned " + string(resourceType)
	}
	return string(resourceType) + " changed by hand"
}

// Run sweeps once.
func (s *Sweeper) Run(ctx context.Context) (Result, error) {
	runsTotal.Inc()
	var res Result
	seen := present{applications: map[string]bool{}}
	errApps := s.sweepApplications(ctx, &res, seen.applications)
	errObjs := s.sweepCredentialsAndProjects(ctx, &res, &seen)
	var errMissing error
	if errApps == nil && errObjs == nil { // only a complete listing tells what is missing
		errMissing = s.restoreMissing(ctx, &res, seen)
	}
	errOps := s.sweepOperations(ctx, &res)
	for kind, n := range map[string]int{KindApplication: res.Applications, KindClusterSecret: res.ClusterSecrets,
		KindRepositorySecret: res.RepositorySecrets, KindAppProject: res.AppProjects} {
		removedTotal.WithLabelValues(kind).Add(float64(n))
	}
	restoredTotal.Add(float64(res.Restored))
	ctrl.LoggerFrom(ctx).Info("Swept orphans", "applicationsDeleted", res.Applications,
		"clusterSecretsDeleted", res.ClusterSecrets, "repositorySecretsDeleted", res.RepositorySecrets,
		"appProjectsDeleted", res.AppProjects, "objectsRestored", res.Restored,
		"operationsRequeued", res.OperationsRequeued, "signalTaken", res.SignalTaken, "skipped", res.Skipped)
	return res, errors.Join(errApps, errObjs, errMissing, errOps)
}

// sweepApplications signals the deletion of the service's Applications without a row.
// It records the application ids of the Applications it lists in seen.
func (s *Sweeper) sweepApplications(ctx context.Context, res *Result, seen map[string]bool) error {
	list := &argov1alpha1.ApplicationList{}
	if err := s.Client.List(ctx, list, client.InNamespace(s.Identity.Namespace),
		client.MatchingLabels{argocd.LabelManagedBy: argocd.ManagedByValue}); err != nil {
		return fmt.Errorf("listing Applications: %w", err)
	}
	byID := map[string]*argov1alpha1.Application{}
	var ids []string
	for i := range list.Items {
		app := &list.Items[i]
		id := app.Labels[argocd.LabelApplicationID]
		if _, err := uuid.Parse(id); err != nil {
			continue // not one of ours after all
		}
		byID[id] = app
		ids = append(ids, id)
		seen[id] = true
	}
	batch := s.batchSize()
	for start := 0; start < len(ids); start += batch {
		chunk := ids[start:min(start+batch, len(ids))]
		found, err := s.Store.ExistingApplicationIDs(ctx, s.DB, s.Identity.InstanceID, chunk)
		if err != nil {
			return fmt.Errorf("checking which applications have rows: %w", err)
		}
		for _, id := range chunk {
			if found[id] {
				if app := byID[id]; s.elsewhereOnServiceCluster(app) {
					s.rewrite(ctx, res, app)
				}
				continue
			}
			signalled, err := s.signalDeletion(ctx, db.OperationResourceApplication, id)
			if err != nil {
				ctrl.LoggerFrom(ctx).Error(err, "Signalling the deletion of an orphaned Application failed", "application", byID[id].Name)
				res.Skipped++
				continue
			}
			if signalled {
				ctrl.LoggerFrom(ctx).Info("Signalled an Argo CD Application without a row on this engine instance (deleted, or moved away)", "application", byID[id].Name)
				res.Applications++
			}
		}
	}
	return nil
}

// elsewhereOnServiceCluster says whether an Application deploys to its tenant's namespace
// through another cluster entry than the one the agent now gives the tenant (it was written
// before the tenant had its own, or with Argo CD's identity): its handler writes it again.
func (s *Sweeper) elsewhereOnServiceCluster(app *argov1alpha1.Application) bool {
	d := app.Spec.Destination
	onServiceCluster := d.Name == "" && (d.Server == argocd.InClusterServer || d.Server == s.Identity.ServiceServer() || argocd.IsTenantServer(d.Server))
	return onServiceCluster && d.Server != s.Identity.LocalServer(app.Labels[argocd.LabelTenantID])
}

// rewrite signals an Application operation that writes app again from its row.
func (s *Sweeper) rewrite(ctx context.Context, res *Result, app *argov1alpha1.Application) {
	signalled, err := s.signal(ctx, db.OperationResourceApplication, app.Labels[argocd.LabelApplicationID], app.Labels[argocd.LabelTenantID])
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Signalling the rewrite of an Application failed", "application", app.Name)
		res.Skipped++
		return
	}
	if signalled {
		ctrl.LoggerFrom(ctx).Info("Writing again an Application that deploys through another cluster entry than its tenant's",
			"application", app.Name, "server", app.Spec.Destination.Server)
		res.Restored++
	}
}

// sweepCredentialsAndProjects signals the deletion of the service's cluster Secrets,
// repository Secrets and AppProjects whose row is gone, and puts back those changed by
// hand: a Secret or AppProject whose content no longer matches the hash the agent wrote
// gets an operation of its kind (the handler applies it again). So does each tenant with
// objects here that this instance no longer serves (the handler removes them). Nothing is
// read per tenant: the sweep's cost is a few batched queries, whatever the tenant count.
// It records what it found in seen.
func (s *Sweeper) sweepCredentialsAndProjects(ctx context.Context, res *Result, seen *present) error {
	secrets := &corev1.SecretList{}
	if err := s.APIReader.List(ctx, secrets, client.InNamespace(s.Identity.Namespace),
		client.MatchingLabels{argocd.LabelManagedBy: argocd.ManagedByValue}); err != nil {
		return fmt.Errorf("listing Secrets: %w", err)
	}
	projects := &argov1alpha1.AppProjectList{}
	if err := s.APIReader.List(ctx, projects, client.InNamespace(s.Identity.Namespace),
		client.MatchingLabels{argocd.LabelManagedBy: argocd.ManagedByValue}); err != nil {
		return fmt.Errorf("listing AppProjects: %w", err)
	}
	clusters, repos, tenants := map[string]object{}, map[string]object{}, map[string]object{}
	for i := range secrets.Items {
		sec := &secrets.Items[i]
		o := object{name: sec.Name, tenantID: sec.Labels[argocd.LabelTenantID], drifted: argocd.Drifted(sec)}
		switch sec.Labels[argocd.LabelSecretType] {
		case argocd.SecretTypeCluster:
			clusters[sec.Labels[argocd.LabelManagedEnvironmentID]] = o
		case argocd.SecretTypeRepository:
			id := sec.Labels[argocd.LabelRepositoryCredID]
			o.drifted = o.drifted || repos[id].drifted // two Secrets per credential
			repos[id] = o
		}
	}
	for i := range projects.Items {
		p := &projects.Items[i]
		id := p.Labels[argocd.LabelTenantID]
		want, ok := p.Annotations[argocd.AnnotationDataHash]
		o := object{name: p.Name, tenantID: id, drifted: !ok || argocd.ProjectSpecHash(p.Spec) != want}
		o.drifted = o.drifted || tenants[id].drifted // two AppProjects per tenant
		tenants[id] = o
	}
	// A tenant with Secrets but no AppProject here (it moved away, and the agent stopped
	// before cleaning up): its AppProject operation removes the Secrets too.
	for i := range secrets.Items {
		id := secrets.Items[i].Labels[argocd.LabelTenantID]
		if _, ok := tenants[id]; !ok && id != "" {
			tenants[id] = object{name: "the Secrets of tenant " + id, tenantID: id, drifted: true}
		}
	}
	seen.clusters, seen.repositories, seen.projects = clusters, repos, tenants
	if err := s.markTenantsServedElsewhere(ctx, tenants); err != nil {
		return err
	}
	return errors.Join(
		s.signalOrphans(ctx, db.OperationResourceManagedEnvironment, clusters, s.Store.ExistingManagedEnvironmentIDs, &res.ClusterSecrets, res),
		s.signalOrphans(ctx, db.OperationResourceRepositoryCredential, repos, s.Store.ExistingRepositoryCredentialIDs, &res.RepositorySecrets, res),
		s.signalOrphans(ctx, db.OperationResourceAppProject, tenants, s.Store.ExistingTenantIDs, &res.AppProjects, res),
	)
}

// restoreMissing signals an operation, with the owner tenant so that its handler applies the
// row, for each row of this instance whose Argo CD object is not in seen: an application's
// Application, its tenant's AppProjects and its managed environment's cluster Secret, and a
// repository credential's Secret. It walks the rows in batches.
func (s *Sweeper) restoreMissing(ctx context.Context, res *Result, seen present) error {
	restore := func(resourceType db.OperationResourceType, id, tenantID string) {
		signalled, err := s.signal(ctx, resourceType, id, tenantID)
		if err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Signalling the restoring of a deleted object failed", "resourceType", resourceType, "resourceID", id)
			res.Skipped++
			return
		}
		if signalled {
			ctrl.LoggerFrom(ctx).Info("Restoring an object deleted by hand", "resourceType", resourceType, "resourceID", id, "tenant", tenantID)
			res.Restored++
		}
	}
	signalledEnvs, signalledTenants := map[string]bool{}, map[string]bool{}
	errApps := s.walkInstanceRows(ctx, s.Store.ListInstanceApplicationsAfter, func(app db.InstanceResource) {
		if !seen.applications[app.ID] && s.missing(ctx, app.Name, &argov1alpha1.Application{}) {
			restore(db.OperationResourceApplication, app.ID, app.TenantID)
		}
		env := app.ManagedEnvironmentID
		if _, found := seen.clusters[env]; env != "" && !found && !signalledEnvs[env] {
			signalledEnvs[env] = true
			if s.missing(ctx, argocd.ClusterSecretName(env), &corev1.Secret{}) {
				restore(db.OperationResourceManagedEnvironment, env, app.TenantID)
			}
		}
		if _, found := seen.projects[app.TenantID]; !found && !signalledTenants[app.TenantID] {
			signalledTenants[app.TenantID] = true
			// As in the listing: the tenant has none of its AppProjects (it needs only one of
			// the two when all its applications deploy to one side).
			if s.missing(ctx, argocd.AppProjectName(app.TenantID), &argov1alpha1.AppProject{}) &&
				s.missing(ctx, argocd.RemoteAppProjectName(app.TenantID), &argov1alpha1.AppProject{}) {
				restore(db.OperationResourceAppProject, app.TenantID, app.TenantID)
			}
		}
	})
	errRepos := s.walkInstanceRows(ctx, s.Store.ListInstanceRepositoryCredentialsAfter, func(cred db.InstanceResource) {
		if _, found := seen.repositories[cred.ID]; !found && s.missing(ctx, argocd.RepositorySecretName(cred.ID), &corev1.Secret{}) {
			restore(db.OperationResourceRepositoryCredential, cred.ID, cred.TenantID)
		}
	})
	return errors.Join(errApps, errRepos)
}

// missing confirms with the API server that an object the sweep's listing did not show is
// still missing: the operation that creates it may have finished since the listing, and
// restoring it would cost an operation and a write for nothing.
func (s *Sweeper) missing(ctx context.Context, name string, obj client.Object) bool {
	err := s.APIReader.Get(ctx, client.ObjectKey{Namespace: s.Identity.Namespace, Name: name}, obj)
	return apierrors.IsNotFound(err)
}

// walkInstanceRows calls visit for each row list returns for this instance, one batch at a
// time.
func (s *Sweeper) walkInstanceRows(ctx context.Context,
	list func(context.Context, bun.IDB, string, string, int) ([]db.InstanceResource, error), visit func(db.InstanceResource)) error {
	after := ""
	for {
		rows, err := list(ctx, s.DB, s.Identity.InstanceID, after, s.batchSize())
		if err != nil {
			return fmt.Errorf("listing this instance's rows: %w", err)
		}
		for _, row := range rows {
			visit(row)
		}
		if len(rows) < s.batchSize() {
			return nil
		}
		after = rows[len(rows)-1].ID
	}
}

func (s *Sweeper) batchSize() int {
	if s.BatchSize > 0 {
		return s.BatchSize
	}
	return DefaultBatchSize
}

// markTenantsServedElsewhere marks as drifted the tenants with objects here that this
// instance no longer serves (they moved away), so that their AppProject operation removes
// what is left of them; one query per batch.
func (s *Sweeper) markTenantsServedElsewhere(ctx context.Context, tenants map[string]object) error {
	var ids []string
	for id := range tenants {
		if _, err := uuid.Parse(id); err == nil {
			ids = append(ids, id)
		}
	}
	for start := 0; start < len(ids); start += s.batchSize() {
		chunk := ids[start:min(start+s.batchSize(), len(ids))]
		served, err := s.Store.ServedTenantIDs(ctx, s.DB, s.Identity.InstanceID, chunk)
		if err != nil {
			return fmt.Errorf("checking which tenants this instance serves: %w", err)
		}
		for _, id := range chunk {
			if !served[id] {
				o := tenants[id]
				o.drifted = true
				tenants[id] = o
			}
		}
	}
	return nil
}

// object is an Argo CD object of the service found by the sweep, by row id.
type object struct {
	name, tenantID string
	// drifted: its data differs from what the agent wrote.
	drifted bool
	// live: its row exists (set by signalOrphans).
	live bool
}

// drifted says whether a Secret's data is no longer what the agent wrote (Secrets written
// before the hash annotation existed are not judged).
// signalOrphans signals the deletion of the objects (by row id) whose row exists says is
// gone, counting them in count, and an update of those with a row whose data drifted. It
// marks the others live.
func (s *Sweeper) signalOrphans(ctx context.Context, resourceType db.OperationResourceType, objects map[string]object,
	exists func(context.Context, bun.IDB, string, []string) (map[string]bool, error), count *int, res *Result) error {
	var ids []string
	for id := range objects {
		if _, err := uuid.Parse(id); err == nil {
			ids = append(ids, id)
		}
	}
	batch := s.batchSize()
	for start := 0; start < len(ids); start += batch {
		chunk := ids[start:min(start+batch, len(ids))]
		found, err := exists(ctx, s.DB, s.Identity.InstanceID, chunk)
		if err != nil {
			return fmt.Errorf("checking which %s objects have rows: %w", resourceType, err)
		}
		for _, id := range chunk {
			o := objects[id]
			owner, what := "", "Deleting an object without a row"
			switch {
			case found[id] && !o.drifted:
				o.live = true
				objects[id] = o
				continue
			case found[id]:
				// The handler applies the row's credentials again; it needs the tenant.
				owner, what = o.tenantID, "Restoring an object changed by hand"
				o.live = true
				objects[id] = o
			}
			signalled, err := s.signal(ctx, resourceType, id, owner)
			if err != nil {
				ctrl.LoggerFrom(ctx).Error(err, "Signalling an operation for an object failed", "object", o.name)
				res.Skipped++
				continue
			}
			if signalled {
				ctrl.LoggerFrom(ctx).Info(what, "object", o.name, "resourceType", resourceType)
				if owner == "" {
					*count++
				} else {
					res.Restored++
				}
			}
		}
	}
	return nil
}

// signalDeletion signals an operation for a resource without a row: its handler deletes
// the object.
func (s *Sweeper) signalDeletion(ctx context.Context, resourceType db.OperationResourceType, id string) (bool, error) {
	return s.signal(ctx, resourceType, id, "")
}

// signal writes an operation for the resource (unless one is already pending) and creates
// its CR. Without an owner tenant the handler deletes the object; with one it applies it.
func (s *Sweeper) signal(ctx context.Context, resourceType db.OperationResourceType, id, ownerTenantID string) (bool, error) {
	ops, err := s.Store.ListOperationsForResource(ctx, s.DB, resourceType, id)
	if err != nil {
		return false, err
	}
	for _, op := range ops {
		if op.EngineInstanceID != s.Identity.InstanceID {
			continue
		}
		if !op.State.Finished() {
			return false, nil // pending already; the second pass re-creates a missing CR
		}
		if ownerTenantID != "" && op.State == db.OperationFailed {
			// Applying this row failed: a change of the row signals again, and until this
			// operation is collected the sweep does not repeat the failure every run.
			return false, nil
		}
	}
	// No owner tenant: it may be gone with its rows. The Application handler reads the
	// tenant from the Application's label to update its AppProject; the others delete.
	gcSeconds := s.GCExpirationSeconds
	if gcSeconds <= 0 {
		gcSeconds = DefaultGCExpirationSeconds
	}
	op := &db.Operation{
		EngineInstanceID: s.Identity.InstanceID, ResourceType: resourceType, ResourceID: id, OwnerTenantID: ownerTenantID,
		HumanReadableState: fmt.Sprintf("waiting for the cluster-agent (%s found by the sweep)", sweepFinding(ownerTenantID, resourceType)), GCExpirationSeconds: gcSeconds,
	}
	if err := s.Store.CreateOperation(ctx, s.DB, op); err != nil {
		return false, err
	}
	return true, s.createCR(ctx, op.ID)
}

// sweepOperations hands back to the operation controller the unfinished operations older
// than the grace period, and then has it take the signal: no CR event brings back an
// operation whose state write the database lost, one stuck, or one written under a signal
// whose CR was never created. The signal is also taken whenever it is up or an operation is
// Waiting, whatever its age: a database that loses the transaction in which the agent took
// the signal down (a crash with asynchronous commit, a failover to a replica behind)
// brings the signal back with its CR long gone, and the backend raises no other while it is
// up. Taking a signal the controller is taking already costs one more look.
func (s *Sweeper) sweepOperations(ctx context.Context, res *Result) error {
	if s.Requeue == nil {
		return nil
	}
	ops, err := s.Store.ListPendingOperations(ctx, s.DB, s.Identity.InstanceID)
	if err != nil {
		return fmt.Errorf("listing pending operations: %w", err)
	}
	grace := s.OperationGrace
	if grace <= 0 {
		grace = DefaultOperationGrace
	}
	cutoff := time.Now().Add(-grace)
	waiting := false
	for i := range ops {
		op := &ops[i]
		waiting = waiting || op.State == db.OperationWaiting
		if op.CreatedAt.After(cutoff) {
			continue
		}
		ctrl.LoggerFrom(ctx).Info("Handing a pending operation back to the operation controller", "operation", op.ID,
			"resourceType", op.ResourceType, "resourceID", op.ResourceID, "state", op.State)
		s.Requeue(op)
		res.OperationsRequeued++
	}
	if s.TakeSignal == nil {
		return nil
	}
	up := false
	if !waiting && res.OperationsRequeued == 0 {
		_, err := s.Store.GetSignal(ctx, s.DB, s.Identity.InstanceID)
		if err != nil && !errors.Is(err, db.ErrNotFound) {
			return fmt.Errorf("reading the signal: %w", err)
		}
		up = err == nil
	}
	if waiting || up || res.OperationsRequeued > 0 {
		s.TakeSignal()
		res.SignalTaken = true
	}
	return nil
}

func (s *Sweeper) createCR(ctx context.Context, id string) error {
	cr := &v1.Operation{
		ObjectMeta: metav1.ObjectMeta{Name: v1.OperationName(id), Namespace: s.Identity.Namespace},
		Spec:       v1.OperationSpec{OperationID: id},
	}
	if err := s.Client.Create(ctx, cr); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating Operation CR %s: %w", cr.Name, err)
	}
	return nil
}
