package promotion

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/appstudio-controller/internal/indexes"
	"github.com/gitops-service/gitops-service/backend-shared/manageropts"
)

// SnapshotReconciler promotes the newest Snapshot of each Application to every Environment
// without a parent whose deploymentStrategy is AppStudioAutomated (api.md: "an environment
// without a parent will be automatically promoted to"). It creates one automated PromotionRun
// per such Environment, named by AutomatedRunName and owned by the Snapshot; the run then carries
// on to the Environment's AppStudioAutomated children. A run is created once: one that
// exists (whatever its outcome) is left alone. Only the newest Snapshot is promoted, so that
// an older one never overtakes it (and the Snapshots that existed before are not replayed).
type SnapshotReconciler struct {
	Client                  client.Client
	MaxConcurrentReconciles int
}

// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=promotionruns,verbs=create
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=environments;snapshots,verbs=get;list;watch

// SetupWithManager registers the controller: a Snapshot is looked at when it is created, and
// the newest Snapshot of each Application of a namespace when an Environment there changes
// (a new root Environment is promoted to as well).
func (r *SnapshotReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&appstudio.Snapshot{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&appstudio.Environment{}, handler.EnqueueRequestsFromMapFunc(r.newestSnapshots),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WithOptions(manageropts.ControllerOptions(r.MaxConcurrentReconciles)).
		Named("snapshot-promotion").
		Complete(r)
}

// newestSnapshots maps an Environment to the newest Snapshot of each Application of its namespace.
func (r *SnapshotReconciler) newestSnapshots(ctx context.Context, o client.Object) []reconcile.Request {
	list := &appstudio.SnapshotList{}
	if err := r.Client.List(ctx, list, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	byApp := map[string][]appstudio.Snapshot{}
	for _, s := range list.Items {
		byApp[s.Spec.Application] = append(byApp[s.Spec.Application], s)
	}
	var reqs []reconcile.Request
	for _, snaps := range byApp {
		if name := Newest(snaps); name != "" {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}})
		}
	}
	return reqs
}

// Reconcile creates the missing PromotionRuns of a Snapshot that is the newest of its Application.
func (r *SnapshotReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	snap := &appstudio.Snapshot{}
	if err := r.Client.Get(ctx, req.NamespacedName, snap); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !snap.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	snaps := &appstudio.SnapshotList{}
	if err := r.Client.List(ctx, snaps, client.InNamespace(snap.Namespace), client.MatchingFields{indexes.Application: snap.Spec.Application}); err != nil {
		return ctrl.Result{}, err
	}
	if Newest(snaps.Items) != snap.Name {
		return ctrl.Result{}, nil // a newer Snapshot of the Application is promoted instead
	}
	envs := &appstudio.EnvironmentList{}
	if err := r.Client.List(ctx, envs, client.InNamespace(snap.Namespace)); err != nil {
		return ctrl.Result{}, err
	}
	owner := metav1.OwnerReference{APIVersion: appstudio.GroupVersion.String(), Kind: "Snapshot", Name: snap.Name, UID: snap.UID}
	for _, env := range Roots(envs.Items) {
		if err := createAutomatedRun(ctx, r.Client, owner, snap.Namespace, snap.Spec.Application, snap.Name, env); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, nil
}

// createAutomatedRun creates the automated PromotionRun AutomatedRunName(owner, env) of
// snapshot from env, owned by owner (without blockOwnerDeletion, which would need the right
// to update the owner's finalizers), unless it exists.
func createAutomatedRun(ctx context.Context, c client.Client, owner metav1.OwnerReference, namespace, application, snapshot, env string) error {
	run := &appstudio.PromotionRun{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: AutomatedRunName(owner.Name, env), OwnerReferences: []metav1.OwnerReference{owner}},
		Spec: appstudio.PromotionRunSpec{Snapshot: snapshot, Application: application,
			AutomatedPromotion: &appstudio.AutomatedPromotionConfiguration{InitialEnvironment: env}},
	}
	if err := c.Create(ctx, run); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}
	ctrl.LoggerFrom(ctx).Info("created automated promotion", "promotionRun", run.Name, "snapshot", snapshot, "environment", env)
	return nil
}

// Roots returns, sorted, the Environments promoted to automatically when a Snapshot is
// created: those without a parent whose deploymentStrategy is AppStudioAutomated.
func Roots(envs []appstudio.Environment) []string {
	var out []string
	for _, e := range envs {
		if e.Spec.ParentEnvironment == "" && e.Spec.DeploymentStrategy == appstudio.DeploymentStrategyAppStudioAutomated && e.DeletionTimestamp.IsZero() {
			out = append(out, e.Name)
		}
	}
	sort.Strings(out)
	return out
}

// Newest returns the name of the newest of snaps (latest creation time, then greatest name),
// leaving out those being deleted; "" when there is none.
func Newest(snaps []appstudio.Snapshot) string {
	var newest *appstudio.Snapshot
	for i := range snaps {
		s := &snaps[i]
		if !s.DeletionTimestamp.IsZero() {
			continue
		}
		if newest == nil || newest.CreationTimestamp.Before(&s.CreationTimestamp) ||
			newest.CreationTimestamp.Equal(&s.CreationTimestamp) && s.Name > newest.Name {
			newest = s
		}
	}
	if newest == nil {
		return ""
	}
	return newest.Name
}

// maxRunName is the longest object name (a DNS subdomain).
const maxRunName = 253

// AutomatedRunName is the name of the automated PromotionRun from env that from (a Snapshot,
// or a manual PromotionRun to env's parent) starts: "<from>-<env>-automated"; past 253
// characters, the first 180 of it (without a trailing '-' or '.'), "-" and the first 32 hex
// digits of its sha256.
func AutomatedRunName(from, env string) string {
	full := from + "-" + env + "-automated"
	if len(full) <= maxRunName {
		return full
	}
	sum := sha256.Sum256([]byte(full))
	return strings.TrimRight(full[:180], "-.") + "-" + hex.EncodeToString(sum[:])[:32]
}
