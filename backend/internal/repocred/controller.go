// Package repocred reconciles GitOpsDeploymentRepositoryCredentials: it checks the
// credentials Secret, proves the URL and credentials against the Git server, stores them
// encrypted, adds the repository to the tenant's AppProject, and signals the cluster-agent
// to write Argo CD's repository Secret. Its conditions ErrorOccurred, ValidRepositoryUrl and
// ValidRepositoryCredential say what went wrong, if anything.
package repocred

import (
	"context"
	"errors"
	"time"

	"github.com/uptrace/bun"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/manageropts"
	"github.com/gitops-service/gitops-service/backend-shared/outcome"
	"github.com/gitops-service/gitops-service/backend/internal/crcleanup"
	"github.com/gitops-service/gitops-service/backend/internal/indexes"
	"github.com/gitops-service/gitops-service/backend/internal/jitter"
	"github.com/gitops-service/gitops-service/backend/internal/notifyroute"
	"github.com/gitops-service/gitops-service/backend/internal/opsignal"
	"github.com/gitops-service/gitops-service/backend/internal/tenancy"
	"github.com/gitops-service/gitops-service/backend/internal/tenantcap"
	"github.com/gitops-service/gitops-service/backend/internal/watches"
)

// DefaultRevalidateInterval is the default of Reconciler.RevalidateInterval.
const DefaultRevalidateInterval = 5 * time.Minute

// Store is the part of the database the controller uses.
type Store interface {
	CreateRepositoryCredential(ctx context.Context, idb bun.IDB, c *db.RepositoryCredential) error
	GetRepositoryCredential(ctx context.Context, idb bun.IDB, tenantID, id string) (*db.RepositoryCredential, error)
	UpdateRepositoryCredential(ctx context.Context, idb bun.IDB, c *db.RepositoryCredential) error
	DeleteRepositoryCredential(ctx context.Context, idb bun.IDB, tenantID, id string) error
	AddAppProjectRepository(ctx context.Context, idb bun.IDB, tenantID, repositoryURL string) (bool, error)
	GetOrCreateAPICRMapping(ctx context.Context, idb bun.IDB, m *db.APICRMapping) (*db.APICRMapping, error)
	GetAPICRMapping(ctx context.Context, idb bun.IDB, tenantID string, kind db.APIResourceType, uid string) (*db.APICRMapping, error)
	ListAPICRMappingsByName(ctx context.Context, idb bun.IDB, tenantID string, kind db.APIResourceType, name string) ([]db.APICRMapping, error)
}

// Reconciler reconciles GitOpsDeploymentRepositoryCredentials.
type Reconciler struct {
	Client   client.Client
	DB       *bun.DB
	Store    Store
	Tenancy  *tenancy.Resolver
	Signal   *opsignal.Signaller
	Recorder record.EventRecorder
	// Queue hands the controller's workqueue to the sweep, which puts the names of gone
	// credentials and credentials without rows into it.
	Queue notifyroute.Queue
	// CABundle, when not nil, holds PEM certificates trusted (besides the system's) when
	// validating https:// repositories.
	CABundle []byte
	// RevalidateInterval is how often a credential is checked again against the server
	// (tokens expire and keys are revoked without the CR or Secret changing); 0 disables it.
	RevalidateInterval time.Duration
	// MaxConcurrentReconciles is how many credentials are checked at once (0: 1), so that
	// one tenant's slow Git server does not hold up the others.
	MaxConcurrentReconciles int
	// CheckTimeout bounds one listing of the repository, dial included (0: DefaultCheckTimeout).
	CheckTimeout time.Duration
}

// +kubebuilder:rbac:groups=managed-gitops.redhat.com,resources=gitopsdeploymentrepositorycredentials,verbs=get;list;watch
// +kubebuilder:rbac:groups=managed-gitops.redhat.com,resources=gitopsdeploymentrepositorycredentials/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// SetupWithManager registers the controller; a change of a referenced Secret re-reconciles
// the credentials that use it.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	// Each tenant's checks hold at most a quarter of the workers.
	limiter := tenantcap.Limit(r, tenantcap.PerTenant(r.MaxConcurrentReconciles))
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1.GitOpsDeploymentRepositoryCredential{}).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(watches.ByIndex(r.Client, func() client.ObjectList { return &v1.GitOpsDeploymentRepositoryCredentialList{} }, indexes.RepositoryCredentialSecret)), builder.OnlyMetadata).
		WatchesRawSource(r.Queue.Source()).
		WatchesRawSource(limiter.Source()).
		WithOptions(manageropts.ControllerOptions(r.MaxConcurrentReconciles)).
		Named("gitopsdeploymentrepositorycredential").
		Complete(limiter)
}

// Reconcile validates and stores a RepositoryCredential, or removes what is left of a
// deleted one.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cred := &v1.GitOpsDeploymentRepositoryCredential{}
	if err := r.Client.Get(ctx, req.NamespacedName, cred); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		return ctrl.Result{}, r.remove(ctx, req.Namespace, req.Name, "")
	}
	if !cred.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	start := cred.DeepCopy()
	conds := &cred.Status.Conditions
	gen := cred.Generation
	set := func(typ string, status metav1.ConditionStatus, reason, message string) bool {
		return meta.SetStatusCondition(conds, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: message, ObservedGeneration: gen})
	}
	err := r.connect(ctx, cred)
	switch p := outcome.As(err); {
	case p != nil && p.Kind != outcome.Internal:
		set(v1.RepositoryCredentialConditionErrorOccurred, metav1.ConditionTrue, v1.RepositoryCredentialReasonErrorOccurred, p.Message)
		set(problemCondition(p.Reason), metav1.ConditionFalse, p.Reason, p.Message)
		// The other property could not be checked: its state is unknown.
		other := v1.RepositoryCredentialConditionValidRepositoryUrl
		if problemCondition(p.Reason) == other {
			other = v1.RepositoryCredentialConditionValidRepositoryCredential
		}
		meta.RemoveStatusCondition(conds, other)
		if p.Reason == v1.RepositoryCredentialReasonInvalidCredentials || p.Reason == v1.RepositoryCredentialReasonInvalidRepositoryUrl {
			// The server's answer may change without the CR or Secret changing.
			p.Kind, p.RetryAfter = outcome.Stalled, jitter.Spread(r.RevalidateInterval)
		}
	case err != nil:
		set(v1.RepositoryCredentialConditionErrorOccurred, metav1.ConditionTrue, v1.RepositoryCredentialReasonErrorOccurred,
			"An internal error occurred while storing the credentials; the service retries automatically.")
	default:
		set(v1.RepositoryCredentialConditionErrorOccurred, metav1.ConditionFalse, v1.RepositoryCredentialReasonErrorOccurredResolved, "")
		set(v1.RepositoryCredentialConditionValidRepositoryUrl, metav1.ConditionTrue, v1.RepositoryCredentialReasonValidRepositoryUrl,
			"The repository exists and is reachable.")
		set(v1.RepositoryCredentialConditionValidRepositoryCredential, metav1.ConditionTrue, v1.RepositoryCredentialReasonValidCredentials,
			msgValid)
	}
	done := outcome.Done(v1.RepositoryCredentialReasonValidCredentials, msgValid)
	done.RequeueAfter = jitter.Spread(r.RevalidateInterval)
	return outcome.Ending{Client: r.Client, Recorder: r.Recorder, OwnEvents: true}.End(ctx, cred, start, outcome.Status{
		Conditions:         outcome.MetaConditions{List: conds, Generation: gen},
		ObservedGeneration: &cred.Status.ObservedGeneration,
		Written: func() {
			if r.Recorder != nil {
				r.recordTransition(cred, start.Status.Conditions, *conds)
			}
		},
	}, done, err)
}

const msgValid = "The credentials give access to the repository."

// connect validates the credentials and stores them; unchanged credentials write nothing.
func (r *Reconciler) connect(ctx context.Context, cred *v1.GitOpsDeploymentRepositoryCredential) error {
	secret := &corev1.Secret{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: cred.Namespace, Name: cred.Spec.Secret}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return problem(v1.RepositoryCredentialReasonSecretNotFound,
				"Secret %q (spec.secret) does not exist in namespace %q", cred.Spec.Secret, cred.Namespace)
		}
		return err
	}
	creds, err := Resolve(cred, secret)
	if err != nil {
		return err
	}
	if err := Verify(ctx, cred.Spec.Repository, creds, r.CABundle, r.CheckTimeout); err != nil {
		return err
	}
	var (
		engine *db.EngineInstance
		ops    []*db.Operation
	)
	err = r.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		tenant, err := r.Tenancy.Tenant(ctx, tx, cred.Namespace)
		if err != nil {
			return err
		}
		if engine, err = r.Tenancy.EngineInstance(ctx, tx, tenant); err != nil {
			return err
		}
		row := &db.RepositoryCredential{
			TenantID: tenant.ID, EngineInstanceID: engine.ID, RepositoryURL: cred.Spec.Repository,
			Username: db.Secret(creds.Username), Password: db.Secret(creds.Password), SSHPrivateKey: db.Secret(creds.SSHPrivateKey),
		}
		changed, err := r.store(ctx, tx, cred, row)
		if err != nil {
			return err
		}
		if changed {
			op, err := r.Signal.Row(ctx, tx, engine, tenant.ID, db.OperationResourceRepositoryCredential, row.ID)
			if err != nil {
				return err
			}
			ops = append(ops, op)
		}
		// The tenant may deploy from the repository.
		added, err := r.Store.AddAppProjectRepository(ctx, tx, tenant.ID, cred.Spec.Repository)
		if err != nil || !added {
			return err
		}
		op, err := r.Signal.Row(ctx, tx, engine, tenant.ID, db.OperationResourceAppProject, tenant.ID)
		if err != nil {
			return err
		}
		ops = append(ops, op)
		return nil
	})
	if err != nil {
		return err
	}
	return r.Signal.CRs(ctx, ops...)
}

// store writes the credential's row (filling in row.ID), reporting whether it changed.
func (r *Reconciler) store(ctx context.Context, tx bun.IDB, cred *v1.GitOpsDeploymentRepositoryCredential, row *db.RepositoryCredential) (bool, error) {
	mapping, err := r.Store.GetAPICRMapping(ctx, tx, row.TenantID, db.APIResourceRepositoryCredential, string(cred.UID))
	if errors.Is(err, db.ErrNotFound) {
		if err := r.Store.CreateRepositoryCredential(ctx, tx, row); err != nil {
			return false, err
		}
		_, err := r.Store.GetOrCreateAPICRMapping(ctx, tx, &db.APICRMapping{
			APIResourceType: db.APIResourceRepositoryCredential, APIResourceUID: string(cred.UID),
			APIResourceName: cred.Name, APIResourceNamespace: cred.Namespace,
			TenantID: row.TenantID, RepositoryCredentialID: row.ID,
		})
		return true, err
	}
	if err != nil {
		return false, err
	}
	row.ID = mapping.TargetID()
	stored, err := r.Store.GetRepositoryCredential(ctx, tx, row.TenantID, row.ID)
	if err != nil {
		return false, err
	}
	if sameCredential(stored, row) {
		return false, nil
	}
	return true, r.Store.UpdateRepositoryCredential(ctx, tx, row)
}

func sameCredential(a, b *db.RepositoryCredential) bool {
	return a.EngineInstanceID == b.EngineInstanceID && a.RepositoryURL == b.RepositoryURL &&
		a.Username == b.Username && a.Password == b.Password && a.SSHPrivateKey == b.SSHPrivateKey
}

// remove deletes what is left of the CRs called name in namespace except keepUID.
func (r *Reconciler) remove(ctx context.Context, namespace, name, keepUID string) error {
	remover := &crcleanup.Remover{DB: r.DB, Store: r.Store, Tenancy: r.Tenancy, Signal: r.Signal,
		Kind: db.APIResourceRepositoryCredential, ResourceType: db.OperationResourceRepositoryCredential, DeleteRow: r.Store.DeleteRepositoryCredential}
	return remover.Remove(ctx, namespace, name, keepUID)
}

// recordTransition records one Event when the credential turns valid or invalid, or becomes
// invalid for another reason: Warning with the failing condition's reason (or ErrorOccurred
// for an internal error), Normal ValidCredentials once valid again. A reconcile that repeats
// the same result (a re-validation, a new generation) records nothing.
func (r *Reconciler) recordTransition(cred *v1.GitOpsDeploymentRepositoryCredential, before, after []metav1.Condition) {
	was, now := credentialState(before), credentialState(after)
	if was == now || now.status == "" {
		return
	}
	if now.status == metav1.ConditionTrue {
		r.Recorder.Event(cred, corev1.EventTypeWarning, now.reason, now.message)
		return
	}
	if was.status != metav1.ConditionFalse {
		r.Recorder.Event(cred, corev1.EventTypeNormal, v1.RepositoryCredentialReasonValidCredentials, msgValid)
	}
}

// credState is what an Event reports of a credential: the ErrorOccurred status, and the reason
// and message of the problem.
type credState struct {
	status          metav1.ConditionStatus
	reason, message string
}

func credentialState(conds []metav1.Condition) credState {
	e := meta.FindStatusCondition(conds, v1.RepositoryCredentialConditionErrorOccurred)
	if e == nil {
		return credState{}
	}
	if e.Status != metav1.ConditionTrue {
		return credState{status: e.Status}
	}
	st := credState{status: e.Status, reason: e.Reason, message: e.Message}
	for _, typ := range []string{v1.RepositoryCredentialConditionValidRepositoryUrl, v1.RepositoryCredentialConditionValidRepositoryCredential} {
		if c := meta.FindStatusCondition(conds, typ); c != nil && c.Status == metav1.ConditionFalse && c.Message == e.Message {
			st.reason = c.Reason
		}
	}
	return st
}
