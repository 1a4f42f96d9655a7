// Package managedenv reconciles GitOpsDeploymentManagedEnvironments: it checks the
// kubeconfig Secret, proves the credentials against the cluster, stores them encrypted with
// the managed environment's row (with createNewServiceAccount: installs a ServiceAccount
// with them and stores its token instead), and signals the cluster-agent to write Argo CD's
// cluster Secret. Its condition ConnectionInitializationSucceeded says what went wrong, if anything.
package managedenv

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/uptrace/bun"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/manageropts"
	"github.com/gitops-service/gitops-service/backend-shared/outcome"
	"github.com/gitops-service/gitops-service/backend/internal/crcleanup"
	"github.com/gitops-service/gitops-service/backend/internal/indexes"
	"github.com/gitops-service/gitops-service/backend/internal/notifyroute"
	"github.com/gitops-service/gitops-service/backend/internal/opsignal"
	"github.com/gitops-service/gitops-service/backend/internal/tenancy"
	"github.com/gitops-service/gitops-service/backend/internal/tenantcap"
	"github.com/gitops-service/gitops-service/backend/internal/watches"
)

// Store is the part of the database the controller uses.
type Store interface {
	CreateManagedEnvironment(ctx context.Context, idb bun.IDB, env *db.ManagedEnvironment, creds *db.ClusterCredentials) error
	UpdateManagedEnvironment(ctx context.Context, idb bun.IDB, env *db.ManagedEnvironment, creds *db.ClusterCredentials) error
	DeleteManagedEnvironment(ctx context.Context, idb bun.IDB, tenantID, id string) error
	GetManagedEnvironmentCredentials(ctx context.Context, idb bun.IDB, tenantID, envID string) (*db.ClusterCredentials, error)
	GetOrCreateAPICRMapping(ctx context.Context, idb bun.IDB, m *db.APICRMapping) (*db.APICRMapping, error)
	GetAPICRMapping(ctx context.Context, idb bun.IDB, tenantID string, kind db.APIResourceType, uid string) (*db.APICRMapping, error)
	ListAPICRMappingsByName(ctx context.Context, idb bun.IDB, tenantID string, kind db.APIResourceType, name string) ([]db.APICRMapping, error)
}

// Reconciler reconciles GitOpsDeploymentManagedEnvironments.
type Reconciler struct {
	Client   client.Client
	DB       *bun.DB
	Store    Store
	Tenancy  *tenancy.Resolver
	Signal   *opsignal.Signaller
	Recorder record.EventRecorder
	// Queue hands the controller's workqueue to the sweep, which puts the names of gone
	// environments and environments without rows into it.
	Queue notifyroute.Queue
	// MaxConcurrentReconciles is how many environments are reconciled at once (0: 1), so
	// that one tenant's slow cluster does not hold up the others.
	MaxConcurrentReconciles int
	// CheckTimeout bounds each call to the user's cluster, dial included (0: DefaultCheckTimeout).
	CheckTimeout time.Duration
}

// DefaultCheckTimeout is the default of Reconciler.CheckTimeout.
const DefaultCheckTimeout = 10 * time.Second

// +kubebuilder:rbac:groups=managed-gitops.redhat.com,resources=gitopsdeploymentmanagedenvironments,verbs=get;list;watch
// +kubebuilder:rbac:groups=managed-gitops.redhat.com,resources=gitopsdeploymentmanagedenvironments/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// SetupWithManager registers the controller; a change of a referenced Secret re-reconciles
// the environments that use it.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	// Each tenant's checks hold at most a quarter of the workers.
	limiter := tenantcap.Limit(r, tenantcap.PerTenant(r.MaxConcurrentReconciles))
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1.GitOpsDeploymentManagedEnvironment{}).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(watches.ByIndex(r.Client, func() client.ObjectList { return &v1.GitOpsDeploymentManagedEnvironmentList{} }, indexes.ManagedEnvironmentSecret)), builder.OnlyMetadata).
		WatchesRawSource(r.Queue.Source()).
		WatchesRawSource(limiter.Source()).
		WithOptions(manageropts.ControllerOptions(r.MaxConcurrentReconciles)).
		Named("gitopsdeploymentmanagedenvironment").
		Complete(limiter)
}

// Reconcile connects a ManagedEnvironment, or removes what is left of a deleted one.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	env := &v1.GitOpsDeploymentManagedEnvironment{}
	if err := r.Client.Get(ctx, req.NamespacedName, env); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		return ctrl.Result{}, r.remove(ctx, req.Namespace, req.Name, "")
	}
	if !env.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	start := env.DeepCopy()
	err := r.connect(ctx, env)
	cond := connectionCondition(err)
	cond.ObservedGeneration = env.Generation
	prev := meta.FindStatusCondition(env.Status.Conditions, cond.Type)
	// One Event per change of the connection's state; a new generation or a retry with the
	// same result (SetStatusCondition reports those as changes too) records nothing.
	changed := prev == nil || prev.Status != cond.Status || prev.Reason != cond.Reason || prev.Message != cond.Message
	meta.SetStatusCondition(&env.Status.Conditions, cond)
	return outcome.Ending{Client: r.Client, Recorder: r.Recorder, OwnEvents: true}.End(ctx, env, start, outcome.Status{
		Conditions:         outcome.MetaConditions{List: &env.Status.Conditions, Generation: env.Generation},
		ObservedGeneration: &env.Status.ObservedGeneration,
		Written: func() {
			if changed && r.Recorder != nil {
				eventType := corev1.EventTypeNormal
				if cond.Status != metav1.ConditionTrue {
					eventType = corev1.EventTypeWarning
				}
				r.Recorder.Event(env, eventType, cond.Reason, cond.Message)
			}
		},
	}, outcome.Done(string(v1.ManagedEnvironmentReasonSucceeded), msgConnected), err)
}

const msgConnected = "Connected to the cluster; Argo CD can deploy to it."

// connectionCondition is the ConnectionInitializationSucceeded condition api.md documents,
// for the result of connect.
func connectionCondition(err error) metav1.Condition {
	cond := metav1.Condition{
		Type: v1.ManagedEnvironmentConditionConnectionInitializationSucceeded, Status: metav1.ConditionTrue,
		Reason: string(v1.ManagedEnvironmentReasonSucceeded), Message: msgConnected,
	}
	switch e := outcome.As(err); {
	case err == nil:
	case e != nil && e.Kind != outcome.Internal:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, e.Reason, e.Message
	default:
		cond.Status, cond.Reason = metav1.ConditionFalse, string(v1.ManagedEnvironmentReasonUnknownError)
		cond.Message = "An internal error occurred while connecting the environment; the service retries automatically."
	}
	return cond
}

// TransientRetry is how soon an environment whose cluster could not be reached is tried again.
var TransientRetry = 30 * time.Second

// connect verifies the credentials and stores them; unchanged credentials write nothing.
func (r *Reconciler) connect(ctx context.Context, env *v1.GitOpsDeploymentManagedEnvironment) error {
	secret := &corev1.Secret{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: env.Spec.ClusterCredentialsSecret}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return credErr(v1.ManagedEnvironmentReasonUnableToRetrieveRestConfig,
				"Secret %q (spec.credentialsSecret) does not exist in namespace %q", env.Spec.ClusterCredentialsSecret, env.Namespace)
		}
		return err
	}
	conn, err := Resolve(env, secret)
	if err != nil {
		return err
	}
	conn.Config = bound(conn.Config, r.CheckTimeout)
	if err := Verify(ctx, conn, env.Spec.Namespaces); err != nil {
		return err
	}
	var creds *db.ClusterCredentials
	if env.Spec.CreateNewServiceAccount {
		// The user's credentials install a ServiceAccount and are then dropped: only the
		// ServiceAccount's token (and the cluster's address and CA) is stored.
		token, err := installServiceAccount(ctx, conn, env, r.storedServiceAccountToken(ctx, env))
		if err != nil {
			return err
		}
		if creds, err = serviceAccountCredentials(env, conn, token); err != nil {
			return err
		}
	} else {
		creds = &db.ClusterCredentials{
			Host:                       env.Spec.APIURL,
			Kubeconfig:                 db.Secret(secret.Data["kubeconfig"]),
			KubeconfigContext:          conn.ContextName,
			AllowInsecureSkipTLSVerify: env.Spec.AllowInsecureSkipTLSVerify,
			Namespaces:                 env.Spec.Namespaces,
			ClusterResources:           env.Spec.ClusterResources,
		}
	}
	var (
		engine   *db.EngineInstance
		op       *db.Operation
		replaced *db.ClusterCredentials
	)
	err = r.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		tenant, err := r.Tenancy.Tenant(ctx, tx, env.Namespace)
		if err != nil {
			return err
		}
		if engine, err = r.Tenancy.EngineInstance(ctx, tx, tenant); err != nil {
			return err
		}
		envID, changed, prev, err := r.store(ctx, tx, tenant, env, creds)
		if err != nil || !changed {
			return err
		}
		replaced = prev
		op, err = r.Signal.Row(ctx, tx, engine, tenant.ID, db.OperationResourceManagedEnvironment, envID)
		return err
	})
	if err != nil || op == nil {
		return err
	}
	err = r.Signal.CRs(ctx, op)
	// A ServiceAccount installed earlier that is no longer used (createNewServiceAccount was
	// turned off, or spec.apiURL names another cluster) is removed with its own token.
	if replaced != nil && replaced.ServiceAccountNamespace != "" &&
		(creds.ServiceAccountNamespace == "" || !argocd.SameAPIURL(replaced.Host, creds.Host)) {
		r.uninstall(ctx, replaced, string(env.UID))
	}
	return err
}

// storedServiceAccountToken is the ServiceAccount token stored for env on its current
// cluster, or "" (none, or it cannot be read).
func (r *Reconciler) storedServiceAccountToken(ctx context.Context, env *v1.GitOpsDeploymentManagedEnvironment) string {
	tenant, err := r.Tenancy.ExistingTenant(ctx, r.DB, env.Namespace)
	if err != nil {
		return ""
	}
	m, err := r.Store.GetAPICRMapping(ctx, r.DB, tenant.ID, db.APIResourceManagedEnvironment, string(env.UID))
	if err != nil {
		return ""
	}
	creds, err := r.Store.GetManagedEnvironmentCredentials(ctx, r.DB, tenant.ID, m.TargetID())
	if err != nil || creds.ServiceAccountNamespace == "" || !argocd.SameAPIURL(creds.Host, env.Spec.APIURL) {
		return ""
	}
	return string(creds.BearerToken)
}

// uninstall removes, best effort and bounded in time, the ServiceAccount installed for the
// ManagedEnvironment uid; a failure is logged (the stored token is the only credential left
// for it, so there is nothing to retry with once its row is gone).
func (r *Reconciler) uninstall(ctx context.Context, creds *db.ClusterCredentials, uid string) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := uninstallServiceAccount(ctx, creds, uid); err != nil {
		ctrl.LoggerFrom(ctx).Info("could not remove the ServiceAccount installed on the target cluster; delete it by hand",
			"clusterRole", ServiceAccountName(types.UID(uid)), "problem", err.Error())
	}
}

// store writes the environment's row and credentials, reporting whether they changed and,
// if so, the credentials they replaced (nil for a new row).
func (r *Reconciler) store(ctx context.Context, tx bun.IDB, tenant *db.Tenant, env *v1.GitOpsDeploymentManagedEnvironment,
	creds *db.ClusterCredentials) (string, bool, *db.ClusterCredentials, error) {
	mapping, err := r.Store.GetAPICRMapping(ctx, tx, tenant.ID, db.APIResourceManagedEnvironment, string(env.UID))
	if errors.Is(err, db.ErrNotFound) {
		row := &db.ManagedEnvironment{TenantID: tenant.ID, Name: env.Name}
		if err := r.Store.CreateManagedEnvironment(ctx, tx, row, creds); err != nil {
			return "", false, nil, err
		}
		_, err := r.Store.GetOrCreateAPICRMapping(ctx, tx, &db.APICRMapping{
			APIResourceType: db.APIResourceManagedEnvironment, APIResourceUID: string(env.UID),
			APIResourceName: env.Name, APIResourceNamespace: env.Namespace,
			TenantID: tenant.ID, ManagedEnvironmentID: row.ID,
		})
		return row.ID, true, nil, err
	}
	if err != nil {
		return "", false, nil, err
	}
	envID := mapping.TargetID()
	stored, err := r.Store.GetManagedEnvironmentCredentials(ctx, tx, tenant.ID, envID)
	if err != nil {
		return "", false, nil, err
	}
	if sameCredentials(stored, creds) {
		return envID, false, nil, nil
	}
	err = r.Store.UpdateManagedEnvironment(ctx, tx, &db.ManagedEnvironment{ID: envID, TenantID: tenant.ID, Name: env.Name}, creds)
	return envID, true, stored, err
}

func sameCredentials(a, b *db.ClusterCredentials) bool {
	return a.Host == b.Host && a.Kubeconfig == b.Kubeconfig && a.KubeconfigContext == b.KubeconfigContext &&
		a.BearerToken == b.BearerToken && a.ServiceAccountNamespace == b.ServiceAccountNamespace &&
		a.AllowInsecureSkipTLSVerify == b.AllowInsecureSkipTLSVerify &&
		slices.Equal(a.Namespaces, b.Namespaces) && a.ClusterResources == b.ClusterResources
}

// remove deletes what is left of the CRs called name in namespace except keepUID: first,
// best effort, the ServiceAccounts createNewServiceAccount installed for them (with their
// stored tokens, before the rows holding those go), then the rows.
func (r *Reconciler) remove(ctx context.Context, namespace, name, keepUID string) error {
	if tenant, err := r.Tenancy.ExistingTenant(ctx, r.DB, namespace); err == nil {
		mappings, err := r.Store.ListAPICRMappingsByName(ctx, r.DB, tenant.ID, db.APIResourceManagedEnvironment, name)
		if err != nil {
			return err
		}
		for _, m := range mappings {
			if m.APIResourceUID == keepUID {
				continue
			}
			if creds, err := r.Store.GetManagedEnvironmentCredentials(ctx, r.DB, tenant.ID, m.TargetID()); err == nil && creds.ServiceAccountNamespace != "" {
				r.uninstall(ctx, creds, m.APIResourceUID)
			}
		}
	}
	remover := &crcleanup.Remover{DB: r.DB, Store: r.Store, Tenancy: r.Tenancy, Signal: r.Signal,
		Kind: db.APIResourceManagedEnvironment, ResourceType: db.OperationResourceManagedEnvironment, DeleteRow: r.Store.DeleteManagedEnvironment}
	return remover.Remove(ctx, namespace, name, keepUID)
}
