// Package environment reconciles AppStudio Environments into
// GitOpsDeploymentManagedEnvironments named managed-environment-<environment>: from the
// Environment's own cluster credentials, or from the DeploymentTarget bound to the
// DeploymentTargetClaim the Environment references.
package environment

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/appstudio-controller/internal/errcond"
	"github.com/gitops-service/gitops-service/appstudio-controller/internal/indexes"
	"github.com/gitops-service/gitops-service/backend-shared/manageropts"
	"github.com/gitops-service/gitops-service/backend-shared/outcome"
)

// ClaimRetry is how soon an Environment whose claim is not bound yet is looked at again, in
// case the claim's change is missed (its watch requeues the Environment first).
const ClaimRetry = time.Minute

// ManagedEnvironmentName is the name of the GitOpsDeploymentManagedEnvironment generated for
// the Environment env.
func ManagedEnvironmentName(env string) string { return "managed-environment-" + env }

// CopiedSecretName is the name of the managed-environment Secret copied from a
// DeploymentTarget's Secret of another type.
func CopiedSecretName(env string) string { return "managed-environment-secret-" + env }

// Reconciler reconciles Environments.
type Reconciler struct {
	Client                  client.Client
	Recorder                record.EventRecorder
	MaxConcurrentReconciles int
}

// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=environments,verbs=get;list;watch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=environments/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=environments/finalizers,verbs=update
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=deploymenttargetclaims;deploymenttargets,verbs=get;list;watch
// +kubebuilder:rbac:groups=managed-gitops.redhat.com,resources=gitopsdeploymentmanagedenvironments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// SetupWithManager registers the controller. Environments are requeued when their generated
// objects change, and when the Secret, DeploymentTargetClaim or DeploymentTarget they
// depend on changes.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&appstudio.Environment{}).
		Owns(&v1.GitOpsDeploymentManagedEnvironment{}).
		Owns(&corev1.Secret{}, builder.OnlyMetadata).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.forSecret), builder.OnlyMetadata).
		Watches(&appstudio.DeploymentTargetClaim{}, handler.EnqueueRequestsFromMapFunc(r.forClaim)).
		Watches(&appstudio.DeploymentTarget{}, handler.EnqueueRequestsFromMapFunc(r.forTarget)).
		WithOptions(manageropts.ControllerOptions(r.MaxConcurrentReconciles)).
		Named("environment").
		Complete(r)
}

// Credentials returns the Environment's own cluster credentials, or nil.
func Credentials(env *appstudio.Environment) *appstudio.KubernetesClusterCredentials {
	u := env.Spec.UnstableConfigurationFields
	if u == nil || (u.KubernetesClusterCredentials.APIURL == "" && u.KubernetesClusterCredentials.ClusterCredentialsSecret == "") {
		return nil
	}
	return &u.KubernetesClusterCredentials
}

// ClaimName returns the name of the DeploymentTargetClaim the Environment deploys to, or "".
func ClaimName(env *appstudio.Environment) string {
	if t := env.Spec.Configuration.Target; t != nil {
		return t.DeploymentTargetClaim.ClaimName
	}
	return ""
}

func (r *Reconciler) envsBy(ctx context.Context, ns, index, value string) []reconcile.Request {
	list := &appstudio.EnvironmentList{}
	if err := r.Client.List(ctx, list, client.InNamespace(ns), client.MatchingFields{index: value}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing environments", "index", index)
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, e := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: e.Namespace, Name: e.Name}})
	}
	return reqs
}

func (r *Reconciler) forSecret(ctx context.Context, o client.Object) []reconcile.Request {
	reqs := r.envsBy(ctx, o.GetNamespace(), indexes.EnvironmentSecret, o.GetName())
	// Secrets of DeploymentTargets: requeue the Environments of the claims bound to them.
	targets := &appstudio.DeploymentTargetList{}
	if err := r.Client.List(ctx, targets, client.InNamespace(o.GetNamespace())); err != nil {
		return reqs
	}
	for _, dt := range targets.Items {
		if dt.Spec.KubernetesClusterCredentials.ClusterCredentialsSecret == o.GetName() {
			reqs = append(reqs, r.forTarget(ctx, &dt)...)
		}
	}
	return reqs
}

func (r *Reconciler) forClaim(ctx context.Context, o client.Object) []reconcile.Request {
	return r.envsBy(ctx, o.GetNamespace(), indexes.EnvironmentClaim, o.GetName())
}

func (r *Reconciler) forTarget(ctx context.Context, o client.Object) []reconcile.Request {
	dt := o.(*appstudio.DeploymentTarget)
	var reqs []reconcile.Request
	if dt.Spec.ClaimRef != "" {
		reqs = r.envsBy(ctx, dt.Namespace, indexes.EnvironmentClaim, dt.Spec.ClaimRef)
	}
	claims := &appstudio.DeploymentTargetClaimList{}
	if err := r.Client.List(ctx, claims, client.InNamespace(dt.Namespace)); err == nil {
		for _, c := range claims.Items {
			if c.Spec.TargetName == dt.Name && c.Name != dt.Spec.ClaimRef {
				reqs = append(reqs, r.envsBy(ctx, dt.Namespace, indexes.EnvironmentClaim, c.Name)...)
			}
		}
	}
	return reqs
}

// Reconcile makes the Environment's managed environment match its spec.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	env := &appstudio.Environment{}
	if err := r.Client.Get(ctx, req.NamespacedName, env); err != nil {
		// Deleted: owner references let the garbage collector remove what we created.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !env.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	start := env.DeepCopy()
	progress, err := r.reconcile(ctx, env)
	changed := errcond.Apply(&env.Status.Conditions, env.Generation, err)
	return outcome.Ending{Client: r.Client, Recorder: r.Recorder, OwnEvents: true}.End(ctx, env, start, outcome.Status{
		Conditions:         outcome.MetaConditions{List: &env.Status.Conditions, Generation: env.Generation},
		ObservedGeneration: &env.Status.ObservedGeneration,
		Written: func() {
			if changed {
				r.recordError(env, err)
			}
		},
	}, progress, err)
}

// recordError records the change of the ErrorOccurred condition that api.md documents.
func (r *Reconciler) recordError(env *appstudio.Environment, err error) {
	if r.Recorder == nil {
		return
	}
	if err == nil {
		r.Recorder.Event(env, corev1.EventTypeNormal, appstudio.ReasonErrorOccurredResolved, "The Environment's earlier error is resolved")
		return
	}
	reason, msg := errcond.Shown(err)
	r.Recorder.Event(env, corev1.EventTypeWarning, reason, msg)
}

// desired is what the managed environment should be.
type desired struct {
	spec v1.GitOpsDeploymentManagedEnvironmentSpec
	// copyFrom is a DeploymentTarget Secret of another type to copy into CopiedSecretName.
	copyFrom *corev1.Secret
}

// reconcile generates what the Environment needs and returns how far it is from Ready.
func (r *Reconciler) reconcile(ctx context.Context, env *appstudio.Environment) (outcome.Progress, error) {
	creds, claim := Credentials(env), ClaimName(env)
	switch {
	case creds != nil && claim != "":
		// Keep whatever was generated before: invalid input does not break what works.
		return outcome.Progress{}, outcome.UserError(appstudio.EnvironmentReasonInvalidEnvironment, "Environment is invalid: it cannot set both spec.configuration.target.deploymentTargetClaim and spec.unstableConfigurationFields.kubernetesCredentials; remove one of them")
	case creds == nil && claim == "":
		// Deploys into its own namespace: nothing to generate, remove what an earlier spec made.
		return outcome.Done(appstudio.EnvironmentReasonOwnNamespace, "The Environment deploys to its own namespace"), r.deleteGenerated(ctx, env)
	}
	var want *desired
	var err error
	if creds != nil {
		want, err = r.fromCredentials(ctx, env, creds)
	} else {
		want, err = r.fromClaim(ctx, env, claim)
	}
	if err != nil {
		return outcome.Progress{}, err
	}
	if want.copyFrom != nil {
		if err := r.ensureCopiedSecret(ctx, env, want.copyFrom); err != nil {
			return outcome.Progress{}, err
		}
		want.spec.ClusterCredentialsSecret = CopiedSecretName(env.Name)
	} else if err := r.deleteOwned(ctx, env, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: CopiedSecretName(env.Name)}}); err != nil {
		return outcome.Progress{}, err
	}
	me, err := r.ensureManagedEnvironment(ctx, env, want.spec)
	if err != nil {
		return outcome.Progress{}, err
	}
	return connection(me), nil
}

// connection is the progress of an Environment whose generated managed environment is me:
// Ready once the backend has connected me's current spec to the cluster, Stalled when it
// cannot without a change, in progress until then.
func connection(me *v1.GitOpsDeploymentManagedEnvironment) outcome.Progress {
	seen := me.Status.ObservedGeneration == me.Generation && me.Generation != 0
	ready := meta.FindStatusCondition(me.Status.Conditions, outcome.TypeReady)
	switch {
	case seen && ready != nil && ready.Status == metav1.ConditionTrue:
		return outcome.Done(appstudio.EnvironmentReasonClusterConnected, fmt.Sprintf("GitOpsDeploymentManagedEnvironment %s is connected to the cluster", me.Name))
	case seen && ready != nil && meta.IsStatusConditionTrue(me.Status.Conditions, outcome.TypeStalled):
		return outcome.Failed(appstudio.EnvironmentReasonClusterNotConnected, fmt.Sprintf("GitOpsDeploymentManagedEnvironment %s cannot connect to the cluster: %s", me.Name, ready.Message))
	}
	return outcome.Working(appstudio.EnvironmentReasonConnectingCluster, fmt.Sprintf("Waiting for the GitOps Service to connect GitOpsDeploymentManagedEnvironment %s to the cluster", me.Name), false)
}

func (r *Reconciler) fromCredentials(ctx context.Context, env *appstudio.Environment, creds *appstudio.KubernetesClusterCredentials) (*desired, error) {
	if creds.ClusterCredentialsSecret == "" || creds.APIURL == "" {
		return nil, outcome.UserError(appstudio.EnvironmentReasonInvalidEnvironment, "spec.unstableConfigurationFields.kubernetesCredentials needs both apiURL and clusterCredentialsSecret")
	}
	secret := &corev1.Secret{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: creds.ClusterCredentialsSecret}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, outcome.StalledError(appstudio.EnvironmentReasonMissingCredentialsSecret, "the cluster credentials Secret %q does not exist in namespace %q", creds.ClusterCredentialsSecret, env.Namespace)
		}
		return nil, err
	}
	return &desired{spec: v1.GitOpsDeploymentManagedEnvironmentSpec{
		APIURL:                     creds.APIURL,
		ClusterCredentialsSecret:   creds.ClusterCredentialsSecret,
		AllowInsecureSkipTLSVerify: creds.AllowInsecureSkipTLSVerify,
		Namespaces:                 creds.Namespaces,
		ClusterResources:           creds.ClusterResources,
	}}, nil
}

// BoundTarget returns the DeploymentTarget bound to the claim named claimName, or an outcome
// error saying why there is none (transient while the claim is not bound yet).
func BoundTarget(ctx context.Context, c client.Reader, namespace, claimName string) (*appstudio.DeploymentTarget, error) {
	dtc := &appstudio.DeploymentTargetClaim{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: claimName}, dtc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, outcome.StalledError(appstudio.EnvironmentReasonClaimNotFound, "DeploymentTargetClaim %q does not exist in namespace %q", claimName, namespace)
		}
		return nil, err
	}
	if dtc.Status.Phase != appstudio.DeploymentTargetClaimPhaseBound || dtc.Spec.TargetName == "" {
		return nil, outcome.TransientError(appstudio.EnvironmentReasonClaimNotBound, ClaimRetry, "DeploymentTargetClaim %q is not bound to a DeploymentTarget yet (phase %q)", claimName, dtc.Status.Phase)
	}
	dt := &appstudio.DeploymentTarget{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: dtc.Spec.TargetName}, dt); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, outcome.StalledError(appstudio.EnvironmentReasonTargetNotFound, "DeploymentTarget %q, bound to DeploymentTargetClaim %q, does not exist", dtc.Spec.TargetName, claimName)
		}
		return nil, err
	}
	return dt, nil
}

func (r *Reconciler) fromClaim(ctx context.Context, env *appstudio.Environment, claimName string) (*desired, error) {
	dt, err := BoundTarget(ctx, r.Client, env.Namespace, claimName)
	if err != nil {
		return nil, err
	}
	creds := dt.Spec.KubernetesClusterCredentials
	secret := &corev1.Secret{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: creds.ClusterCredentialsSecret}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, outcome.StalledError(appstudio.EnvironmentReasonMissingCredentialsSecret, "the Secret %q of DeploymentTarget %q does not exist in namespace %q", creds.ClusterCredentialsSecret, dt.Name, env.Namespace)
		}
		return nil, err
	}
	want := &desired{spec: v1.GitOpsDeploymentManagedEnvironmentSpec{
		APIURL:                     creds.APIURL,
		ClusterCredentialsSecret:   creds.ClusterCredentialsSecret,
		AllowInsecureSkipTLSVerify: creds.AllowInsecureSkipTLSVerify,
	}}
	if creds.DefaultNamespace != "" {
		// The target's credentials are for one namespace (see the DeploymentTarget API).
		want.spec.Namespaces = []string{creds.DefaultNamespace}
	}
	if secret.Type != v1.ManagedEnvironmentSecretType {
		want.copyFrom = secret
	}
	return want, nil
}

func (r *Reconciler) ensureCopiedSecret(ctx context.Context, env *appstudio.Environment, from *corev1.Secret) error {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: CopiedSecretName(env.Name)}}
	return r.createOrUpdateOwned(ctx, env, s, func() {
		s.Type = v1.ManagedEnvironmentSecretType
		s.Data = map[string][]byte{v1.ManagedEnvironmentSecretKubeconfigKey: from.Data[v1.ManagedEnvironmentSecretKubeconfigKey]}
	})
}

// ensureManagedEnvironment writes the managed environment and returns it as stored.
func (r *Reconciler) ensureManagedEnvironment(ctx context.Context, env *appstudio.Environment, spec v1.GitOpsDeploymentManagedEnvironmentSpec) (*v1.GitOpsDeploymentManagedEnvironment, error) {
	me := &v1.GitOpsDeploymentManagedEnvironment{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: ManagedEnvironmentName(env.Name)}}
	if err := r.createOrUpdateOwned(ctx, env, me, func() { me.Spec = spec }); err != nil {
		return nil, err
	}
	return me, nil
}

// createOrUpdateOwned creates obj (controlled by env) or brings it back to mutate's state;
// an object of that name that env does not control is left alone and reported.
func (r *Reconciler) createOrUpdateOwned(ctx context.Context, env *appstudio.Environment, obj client.Object, mutate func()) error {
	op, err := controllerutil.CreateOrUpdate(ctx, r.Client, obj, func() error {
		if obj.GetResourceVersion() != "" && !metav1.IsControlledBy(obj, env) {
			// Stalled: deleting a foreign object requeues nothing, so it is looked at again later.
			return outcome.StalledError(appstudio.EnvironmentReasonNameConflict, "%s %q already exists and is not owned by this Environment; delete or rename it", kindOf(obj), obj.GetName())
		}
		mutate()
		return controllerutil.SetControllerReference(env, obj, r.Client.Scheme())
	})
	if err != nil {
		return err
	}
	if op != controllerutil.OperationResultNone {
		ctrl.LoggerFrom(ctx).Info("generated object written", "kind", kindOf(obj), "name", obj.GetName(), "operation", op)
		if r.Recorder != nil && op == controllerutil.OperationResultCreated {
			r.Recorder.Eventf(env, corev1.EventTypeNormal, "Created", "Created %s %s", kindOf(obj), obj.GetName())
		}
	}
	return nil
}

func kindOf(obj client.Object) string {
	switch obj.(type) {
	case *corev1.Secret:
		return "Secret"
	default:
		return "GitOpsDeploymentManagedEnvironment"
	}
}

func (r *Reconciler) deleteGenerated(ctx context.Context, env *appstudio.Environment) error {
	if err := r.deleteOwned(ctx, env, &v1.GitOpsDeploymentManagedEnvironment{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: ManagedEnvironmentName(env.Name)}}); err != nil {
		return err
	}
	return r.deleteOwned(ctx, env, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: CopiedSecretName(env.Name)}})
}

// deleteOwned deletes obj if it exists and env controls it.
func (r *Reconciler) deleteOwned(ctx context.Context, env *appstudio.Environment, obj client.Object) error {
	if err := r.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !metav1.IsControlledBy(obj, env) {
		return nil
	}
	if err := r.Client.Delete(ctx, obj, client.Preconditions{UID: ptr(obj.GetUID())}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	ctrl.LoggerFrom(ctx).Info("generated object deleted", "kind", kindOf(obj), "name", obj.GetName())
	return nil
}

func ptr[T any](v T) *T { return &v }
