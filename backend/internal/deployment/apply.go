package deployment

import (
	"context"
	"errors"

	"github.com/uptrace/bun"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	"github.com/gitops-service/gitops-service/backend-shared/crashpoint"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/outcome"
	"github.com/gitops-service/gitops-service/backend/internal/validation"
)

// desired is what a GitOpsDeployment asks for, validated and resolved.
type desired struct {
	input argocd.ApplicationInput
	// managedEnvironmentID is the row of spec.destination.environment; empty in-cluster.
	managedEnvironmentID string
	// created: the apply created the application row, so no state of it can exist yet.
	created bool
	// recorded: the application's state was read with its row (recorded holds it, nil
	// when there is none), so the status needs no read of its own.
	recorded     *db.ApplicationState
	recordedRead bool
}

// apply writes the application row, mapping and operations of depl in one transaction
// (shared with the deployments reconciled at the same time), then signals the
// cluster-agent. It returns the tenant (nil when it could not be
// resolved) and what depl asks for (nil when it could not be resolved). User errors leave
// the existing rows untouched: a running deployment keeps running until the user fixes the
// spec. unseen says that depl was created since the controller started watching, and has
// not been reconciled: it has no row to look for.
func (r *Reconciler) apply(ctx context.Context, depl *v1.GitOpsDeployment, unseen bool) (*db.Tenant, *desired, error) {
	if err := validation.GitOpsDeployment(depl); err != nil {
		tenant, _ := r.Tenancy.ExistingTenant(ctx, r.DB, depl.Namespace)
		return tenant, nil, err
	}
	if !unseen {
		if tenant, want := r.alreadyApplied(ctx, depl); want != nil {
			depl.Status.LastHandledRefresh = depl.Annotations[v1.RefreshAnnotation]
			return tenant, want, nil
		}
	}
	var (
		tenant  *db.Tenant
		want    *desired
		engine  *db.EngineInstance
		ops     []*db.Operation
		written bool
	)
	// Written together with the deployments reconciled at the same time (a burst shares
	// the transaction and one raise of the signal), so this may run more than once.
	err := r.writes.Run(ctx, func(ctx context.Context, tx bun.Tx) error {
		ops, written = nil, false
		var err error
		if tenant, err = r.Tenancy.Tenant(ctx, tx, depl.Namespace); err != nil {
			return err
		}
		if want, err = r.resolve(ctx, tx, tenant, depl); err != nil {
			return err
		}
		if tenant.EngineInstanceID != "" {
			// Placed: the id is all the rows and operations need.
			engine = &db.EngineInstance{ID: tenant.EngineInstanceID}
		} else if engine, err = r.Tenancy.EngineInstance(ctx, tx, tenant); err != nil {
			return err
		}
		app := applicationRow(depl, tenant, engine.ID, want)
		changed, err := r.Store.UpsertApplication(ctx, tx, app)
		if err != nil {
			return err
		}
		written = changed
		want.created = changed && app.Created()
		if changed {
			// The mapping and the AppProject's rows were written with the application
			// row as it is; only a change needs them again.
			if _, err := r.Store.GetOrCreateDeploymentMapping(ctx, tx, &db.DeploymentMapping{
				DeploymentUID: string(depl.UID), TenantID: tenant.ID,
				DeploymentName: depl.Name, DeploymentNamespace: depl.Namespace, ApplicationID: app.ID,
			}); err != nil {
				return err
			}
			if _, err := r.Store.AddAppProjectRepository(ctx, tx, tenant.ID, want.input.RepoURL); err != nil {
				return err
			}
			if want.managedEnvironmentID != "" {
				if _, err := r.Store.AddAppProjectDestination(ctx, tx, tenant.ID, want.managedEnvironmentID); err != nil {
					return err
				}
			}
			op, err := r.Signal.Row(ctx, tx, engine, tenant.ID, db.OperationResourceApplication, app.ID)
			if err != nil {
				return err
			}
			ops = append(ops, op)
			// An earlier incarnation of this name, deleted while nobody watched, goes now.
			stale, err := r.removeIncarnations(ctx, tx, tenant, depl.Name, string(depl.UID))
			if err != nil {
				return err
			}
			ops = append(ops, stale...)
		}
		if want.created {
			// No earlier reconcile wrote operations on a row that did not exist: a
			// deployment's row is deleted only with the deployment (its UID never comes
			// back), and the cluster-agent takes on any other operation on the
			// resource with this one.
			return nil
		}
		// Operations committed by an earlier reconcile whose CR was never created.
		waiting, err := r.Store.ListOperationsForResource(ctx, tx, db.OperationResourceApplication, app.ID)
		if err != nil {
			return err
		}
		for i := range waiting {
			if waiting[i].State == db.OperationWaiting && !containsOp(ops, waiting[i].ID) {
				ops = append(ops, &waiting[i])
			}
		}
		return nil
	})
	if err != nil {
		return tenant, nil, err
	}
	crashpoint.Hit(crashpoint.BackendAfterApplyCommit)
	if written {
		r.wakeSyncRuns(ctx, depl)
	}
	if err := r.Signal.CRs(ctx, ops...); err != nil {
		return tenant, want, err
	}
	depl.Status.LastHandledRefresh = depl.Annotations[v1.RefreshAnnotation]
	return tenant, want, nil
}

// alreadyApplied returns the tenant and what depl asks for when its application row says
// so already and no operation on it waits, read in one statement with the application's
// state: the reconcile that
// brings Argo CD's report to the status, like any other that finds nothing changed, then
// opens no transaction. Otherwise it returns nil and apply writes as usual; so it does for
// a deployment to a managed environment, whose resolution reads more, and on any error,
// which apply meets again and reports.
func (r *Reconciler) alreadyApplied(ctx context.Context, depl *v1.GitOpsDeployment) (*db.Tenant, *desired) {
	if depl.Spec.Destination.Environment != "" {
		return nil, nil
	}
	namespaceUID, err := r.Tenancy.NamespaceUID(ctx, depl.Namespace)
	if err != nil {
		return nil, nil
	}
	row, err := r.Store.GetAppliedApplication(ctx, r.DB, namespaceUID, string(depl.UID))
	if err != nil || row.Waiting || row.Tenant.EngineInstanceID == "" {
		return nil, nil
	}
	want, err := r.resolve(ctx, r.DB, row.Tenant, depl)
	if err != nil || !row.SameAs(applicationRow(depl, row.Tenant, row.Tenant.EngineInstanceID, want)) {
		return nil, nil
	}
	want.recorded, want.recordedRead = row.AppState(), true
	return row.Tenant, want
}

// applicationRow is the application row of depl for tenant on engine instance engineID; it
// sets the project of want's input.
func applicationRow(depl *v1.GitOpsDeployment, tenant *db.Tenant, engineID string, want *desired) *db.Application {
	want.input.Project = argocd.ProjectName(tenant.ID, want.input.Destination)
	return &db.Application{
		ID:                   string(depl.UID),
		TenantID:             tenant.ID,
		Name:                 argocd.ApplicationName(depl.UID),
		EngineInstanceID:     engineID,
		ManagedEnvironmentID: want.managedEnvironmentID,
		Spec:                 argocd.ApplicationSpec(want.input),
		Refresh:              depl.Annotations[v1.RefreshAnnotation],
	}
}

func containsOp(ops []*db.Operation, id string) bool {
	for _, op := range ops {
		if op.ID == id {
			return true
		}
	}
	return false
}

// resolve turns the spec into the Application input, resolving the managed environment.
func (r *Reconciler) resolve(ctx context.Context, idb bun.IDB, tenant *db.Tenant, depl *v1.GitOpsDeployment) (*desired, error) {
	namespace := depl.Spec.Destination.Namespace
	if namespace == "" {
		namespace = depl.Namespace
	}
	want := &desired{input: argocd.ApplicationInput{
		RepoURL:        depl.Spec.Source.RepoURL,
		Path:           depl.Spec.Source.Path,
		TargetRevision: depl.Spec.Source.TargetRevision,
		Destination:    argocd.Destination{Namespace: namespace},
		Automated:      depl.Spec.Type == v1.GitOpsDeploymentSpecTypeAutomated,
		SyncOptions:    validation.SyncOptions(depl),
	}}
	envName := depl.Spec.Destination.Environment
	if envName == "" {
		return want, nil
	}
	env := &v1.GitOpsDeploymentManagedEnvironment{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: depl.Namespace, Name: envName}, env); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, outcome.StalledError(ReasonEnvironmentNotFound, "GitOpsDeploymentManagedEnvironment %q, named in spec.destination.environment, does not exist in namespace %q", envName, depl.Namespace)
		}
		return nil, err
	}
	mapping, err := r.Store.GetAPICRMapping(ctx, idb, tenant.ID, db.APIResourceManagedEnvironment, string(env.UID))
	if errors.Is(err, db.ErrNotFound) {
		return nil, outcome.StalledError(ReasonEnvironmentNotConnected, "GitOpsDeploymentManagedEnvironment %q is not connected yet: see its ConnectionInitializationSucceeded condition", envName)
	}
	if err != nil {
		return nil, err
	}
	want.managedEnvironmentID = mapping.TargetID()
	want.input.Destination.ManagedEnvironmentID = want.managedEnvironmentID
	return want, nil
}

// removeByName removes the rows of every incarnation of namespace/name except keepUID
// (empty: all), creating the operations that delete their Argo CD Applications.
func (r *Reconciler) removeByName(ctx context.Context, namespace, name, keepUID string) error {
	tenant, err := r.Tenancy.ExistingTenant(ctx, r.DB, namespace)
	if errors.Is(err, db.ErrNotFound) {
		return nil // no tenant, no rows; a namespace deleted with its rows is left to the sweep
	}
	if err != nil {
		return err
	}
	var ops []*db.Operation
	err = r.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var err error
		ops, err = r.removeIncarnations(ctx, tx, tenant, name, keepUID)
		return err
	})
	if err != nil {
		return err
	}
	crashpoint.Hit(crashpoint.BackendAfterDeleteCommit)
	return r.Signal.CRs(ctx, ops...)
}

// removeIncarnations deletes, inside tx, the applications of the tenant's GitOpsDeployments
// called name other than keepUID, with an operation each.
func (r *Reconciler) removeIncarnations(ctx context.Context, tx bun.IDB, tenant *db.Tenant, name, keepUID string) ([]*db.Operation, error) {
	mappings, err := r.Store.ListDeploymentMappingsByName(ctx, tx, tenant.ID, name)
	if err != nil {
		return nil, err
	}
	var ops []*db.Operation
	for _, m := range mappings {
		if m.DeploymentUID == keepUID {
			continue
		}
		// The mapping goes with the application (ON DELETE CASCADE).
		app, err := r.Store.DeleteApplicationByDeploymentUID(ctx, tx, tenant.ID, m.DeploymentUID)
		if errors.Is(err, db.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		// An application still moving is on two instances: both delete it.
		for _, engine := range []string{app.EngineInstanceID, app.MovingFromEngineInstanceID} {
			if engine == "" {
				continue
			}
			op, err := r.Signal.Row(ctx, tx, &db.EngineInstance{ID: engine}, tenant.ID, db.OperationResourceApplication, app.ID)
			if err != nil {
				return nil, err
			}
			ops = append(ops, op)
		}
	}
	return ops, nil
}
