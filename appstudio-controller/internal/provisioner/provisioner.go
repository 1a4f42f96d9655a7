// Package provisioner is the built-in DeploymentTarget provisioner "appstudio.redhat.com/namespace":
// for a DeploymentTargetClaim that the binder marked for it (annotation
// provisioner.appstudio.redhat.com/dt-provisioner), it creates a namespace on this cluster, a
// ServiceAccount with every right in that namespace only, the ServiceAccount's token Secret,
// a kubeconfig Secret (type managed-gitops.redhat.com/managed-environment) in the claim's
// namespace, and a DeploymentTarget pointing at them, pre-bound to the claim (the binder
// completes the binding). When such a DeploymentTarget is deleted (reclaim policy Delete),
// its namespace is deleted too; with Retain, everything is kept.
//
// It acts only on what it made: a claim is provisioned only when its class names this
// provisioner (a tenant can annotate its claim, not create a class), and a namespace is
// deleted only when its labels, which only the provisioner writes, name the deleted
// target's UID and namespace; what the target's spec says is not trusted for that.
//
// The ServiceAccount is bound, in its namespace only, to the ClusterRole DeployerRole
// (manifests/components/namespace-provisioner/rbac.yaml): every verb on every kind. The built-in
// admin role would not do: it leaves out kinds Argo CD must list and watch (podtemplates).
package provisioner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/manageropts"
)

// Name is the provisioner name a DeploymentTargetClass sets in spec.provisioner to use it.
const Name = "appstudio.redhat.com/namespace"

// Names and labels of the provisioned objects.
const (
	ServiceAccountName = "deployer"
	RoleBindingName    = "deployer"
	TokenSecretName    = "deployer-token"
	// DeployerRole is the ClusterRole the RoleBinding grants in the provisioned namespace.
	DeployerRole = "gitops-service-namespace-deployer"
	// LabelClaimUID on a provisioned namespace holds the UID of the claim it was made for,
	// LabelClaimNamespace the claim's namespace (the tenant's), and LabelTargetUID the UID of
	// the DeploymentTarget made with it: only the namespace whose labels name a deleted
	// target's UID and namespace is deleted with it.
	LabelClaimUID       = "provisioner.appstudio.redhat.com/claim-uid"
	LabelClaimNamespace = "provisioner.appstudio.redhat.com/claim-namespace"
	LabelTargetUID      = "provisioner.appstudio.redhat.com/target-uid"
	// limitRecheck is how often a claim held back by MaxNamespaces looks again.
	limitRecheck = 10 * time.Second
	// tokenPoll is how often the token Secret is re-read while the controller-manager fills it.
	tokenPoll = 2 * time.Second
)

// Names returns the namespace and DeploymentTarget names provisioned for a claim.
func Names(dtc *appstudio.DeploymentTargetClaim) (namespace, target string) {
	h := ClaimHash(dtc)
	return truncate(dtc.Namespace, 40) + "-dt-" + h, ClaimName(dtc) + "-dt-" + h
}

// ClaimHash is a short hash of a claim's UID that makes the names of the objects
// provisioned for it unique (shared by the provisioners).
func ClaimHash(dtc *appstudio.DeploymentTargetClaim) string {
	sum := sha256.Sum256([]byte(dtc.UID))
	return hex.EncodeToString(sum[:])[:10]
}

// ClaimName is the claim's name, cut to leave room for a suffix and ClaimHash.
func ClaimName(dtc *appstudio.DeploymentTargetClaim) string { return truncate(dtc.Name, 200) }

// truncate cuts s to at most n characters and then drops the dots and hyphens it ends with,
// so that a suffix appended to it still makes a valid object name.
func truncate(s string, n int) string {
	if len(s) > n {
		return strings.TrimRight(s[:n], "-.")
	}
	return s
}

// ClaimReconciler provisions DeploymentTargets for claims.
type ClaimReconciler struct {
	Client client.Client
	// Reader reads the provisioned namespace, which the manager's cache may not cover.
	Reader                  client.Reader
	Recorder                record.EventRecorder
	APIServerURL            string
	MaxConcurrentReconciles int
	// MaxNamespaces bounds the namespaces provisioned for the claims of one namespace
	// (tenant); 0 means no bound.
	MaxNamespaces int
}

// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=deploymenttargetclaims,verbs=get;list;watch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=deploymenttargetclaims/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=deploymenttargetclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=deploymenttargets,verbs=get;list;watch;create
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;create;patch
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=create
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=rolebindings,verbs=create
// The provisioned RoleBinding grants DeployerRole; bind on it avoids holding its permissions
// ourselves (RBAC escalation check).
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,verbs=bind,resourceNames=gitops-service-namespace-deployer
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// SetupWithManager registers the controller.
func (r *ClaimReconciler) SetupWithManager(_ context.Context, mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&appstudio.DeploymentTargetClaim{}).
		WithOptions(manageropts.ControllerOptions(r.MaxConcurrentReconciles)).
		Named("namespace-provisioner").
		Complete(r)
}

// Reconcile provisions a target for a claim marked for this provisioner, step by step.
func (r *ClaimReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	dtc := &appstudio.DeploymentTargetClaim{}
	if err := r.Client.Get(ctx, req.NamespacedName, dtc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if dtc.Annotations[appstudio.AnnTargetProvisioner] != Name || !dtc.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	if ours, err := ClassNames(ctx, r.Client, dtc, Name); err != nil || !ours {
		return ctrl.Result{}, err // the tenant's own annotation, without a class of this provisioner
	}
	nsName, dtName := Names(dtc)
	dt := &appstudio.DeploymentTarget{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: dtc.Namespace, Name: dtName}, dt); err == nil {
		// Provisioned (the binder binds it). A target provisioned by an earlier release
		// gets the current grant and labels.
		if dt.DeletionTimestamp.IsZero() {
			if err := r.ensure(ctx, deployerBinding(nsName)); err != nil {
				return ctrl.Result{}, err
			}
			if err := r.labelNamespace(ctx, nsName, dtc, dt); err != nil {
				return ctrl.Result{}, err
			}
		}
		return ctrl.Result{}, r.ownSecret(ctx, dt)
	} else if !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	if dtc.Spec.TargetName != "" {
		return ctrl.Result{}, nil // bound to another target
	}

	if limited, err := r.limitReached(ctx, dtc, nsName); err != nil || limited {
		if err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: limitRecheck}, SetCondition(ctx, r.Client, r.Recorder, dtc, metav1.ConditionFalse,
			appstudio.DeploymentTargetClaimReasonProvisioningLimitReached,
			fmt.Sprintf("Namespace %s has at most %d provisioned namespaces, all in use: delete a claim of it to release one", dtc.Namespace, r.MaxNamespaces))
	}
	if err := r.ensure(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nsName,
		Labels: map[string]string{LabelClaimUID: string(dtc.UID), LabelClaimNamespace: dtc.Namespace}}}); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.ensure(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: nsName, Name: ServiceAccountName}}); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.ensure(ctx, deployerBinding(nsName)); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.ensure(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: nsName, Name: TokenSecretName,
			Annotations: map[string]string{corev1.ServiceAccountNameKey: ServiceAccountName}},
		Type: corev1.SecretTypeServiceAccountToken,
	}); err != nil {
		return ctrl.Result{}, err
	}
	token := &corev1.Secret{}
	if err := r.Reader.Get(ctx, client.ObjectKey{Namespace: nsName, Name: TokenSecretName}, token); err != nil {
		return ctrl.Result{}, err
	}
	if len(token.Data[corev1.ServiceAccountTokenKey]) == 0 {
		log.V(1).Info("waiting for the token of the provisioned ServiceAccount", "namespace", nsName)
		return ctrl.Result{RequeueAfter: tokenPoll}, nil
	}
	kubeconfig, err := Kubeconfig(r.APIServerURL, nsName, token.Data[corev1.ServiceAccountRootCAKey], token.Data[corev1.ServiceAccountTokenKey])
	if err != nil {
		return ctrl.Result{}, err
	}

	dt = &appstudio.DeploymentTarget{
		ObjectMeta: metav1.ObjectMeta{Namespace: dtc.Namespace, Name: dtName,
			Annotations: map[string]string{appstudio.AnnDynamicallyProvisioned: Name},
			Finalizers:  []string{appstudio.FinalizerDT}},
		Spec: appstudio.DeploymentTargetSpec{
			DeploymentTargetClassName: dtc.Spec.DeploymentTargetClassName,
			ClaimRef:                  dtc.Name,
			KubernetesClusterCredentials: appstudio.DeploymentTargetKubernetesClusterCredentials{
				DefaultNamespace: nsName, APIURL: r.APIServerURL, ClusterCredentialsSecret: dtName + "-kubeconfig"},
		},
	}
	// The kubeconfig Secret first, then the target that references it (so an Environment
	// never sees a target whose Secret is missing). The Secret is owned by the target.
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: dtc.Namespace, Name: dtName + "-kubeconfig"},
		Type: v1.ManagedEnvironmentSecretType,
		Data: map[string][]byte{v1.ManagedEnvironmentSecretKubeconfigKey: kubeconfig}}
	if err := r.ensure(ctx, secret); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.Client.Create(ctx, dt); err != nil {
		return ctrl.Result{}, client.IgnoreAlreadyExists(err)
	}
	if err := r.labelNamespace(ctx, nsName, dtc, dt); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.ownSecret(ctx, dt); err != nil {
		return ctrl.Result{}, err
	}
	log.Info("provisioned deployment target", "deploymentTarget", dtName, "targetNamespace", nsName)
	return ctrl.Result{}, SetCondition(ctx, r.Client, r.Recorder, dtc, metav1.ConditionTrue, appstudio.DeploymentTargetClaimReasonProvisioned,
		fmt.Sprintf("Provisioned DeploymentTarget %s for namespace %s", dtName, nsName))
}

// labelNamespace binds the provisioned namespace to its target: the target's UID and the
// claim's namespace, on the namespace made for this claim (its claim UID label) only.
func (r *ClaimReconciler) labelNamespace(ctx context.Context, nsName string, dtc *appstudio.DeploymentTargetClaim, dt *appstudio.DeploymentTarget) error {
	ns := &corev1.Namespace{}
	if err := r.Reader.Get(ctx, client.ObjectKey{Name: nsName}, ns); err != nil {
		return client.IgnoreNotFound(err)
	}
	if ns.Labels[LabelClaimUID] != string(dtc.UID) || !ns.DeletionTimestamp.IsZero() {
		return nil // not made for this claim
	}
	if ns.Labels[LabelTargetUID] == string(dt.UID) && ns.Labels[LabelClaimNamespace] == dtc.Namespace {
		return nil
	}
	if ns.Labels[LabelTargetUID] != "" {
		return nil // bound to the target it was made with; a later one of the same name is not it
	}
	patch := client.MergeFromWithOptions(ns.DeepCopy(), client.MergeFromWithOptimisticLock{})
	ns.Labels[LabelTargetUID] = string(dt.UID)
	ns.Labels[LabelClaimNamespace] = dtc.Namespace
	return r.Client.Patch(ctx, ns, patch)
}

// limitReached says whether the claim's namespace already has MaxNamespaces provisioned
// namespaces (not counting nsName, the claim's own, nor those being deleted).
func (r *ClaimReconciler) limitReached(ctx context.Context, dtc *appstudio.DeploymentTargetClaim, nsName string) (bool, error) {
	if r.MaxNamespaces <= 0 {
		return false, nil
	}
	list := &corev1.NamespaceList{}
	if err := r.Reader.List(ctx, list, client.MatchingLabels{LabelClaimNamespace: dtc.Namespace}); err != nil {
		return false, err
	}
	n := 0
	for _, ns := range list.Items {
		if ns.Name == nsName {
			return false, nil // already made: carry on
		}
		if ns.DeletionTimestamp.IsZero() {
			n++
		}
	}
	return n >= r.MaxNamespaces, nil
}

// deployerBinding grants the provisioned ServiceAccount DeployerRole in its namespace.
func deployerBinding(namespace string) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: RoleBindingName},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: DeployerRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: ServiceAccountName}},
	}
}

// ownSecret makes the target own its kubeconfig Secret, so that the Secret goes with it.
func (r *ClaimReconciler) ownSecret(ctx context.Context, dt *appstudio.DeploymentTarget) error {
	secret := &corev1.Secret{}
	key := client.ObjectKey{Namespace: dt.Namespace, Name: dt.Spec.KubernetesClusterCredentials.ClusterCredentialsSecret}
	if err := r.Client.Get(ctx, key, secret); err != nil {
		return client.IgnoreNotFound(err)
	}
	for _, ref := range secret.OwnerReferences {
		if ref.UID == dt.UID {
			return nil
		}
	}
	orig := secret.DeepCopy()
	if err := controllerutil.SetOwnerReference(dt, secret, r.Client.Scheme()); err != nil {
		return err
	}
	return r.Client.Patch(ctx, secret, client.MergeFrom(orig))
}

// ensure creates obj unless it exists.
func (r *ClaimReconciler) ensure(ctx context.Context, obj client.Object) error {
	return client.IgnoreAlreadyExists(r.Client.Create(ctx, obj))
}

// Kubeconfig builds a kubeconfig for a ServiceAccount token, defaulting to namespace.
func Kubeconfig(server, namespace string, ca, token []byte) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["cluster"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos["deployer"] = &clientcmdapi.AuthInfo{Token: string(token)}
	cfg.Contexts["deployer"] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: "deployer", Namespace: namespace}
	cfg.CurrentContext = "deployer"
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("writing kubeconfig: %w", err)
	}
	return out, nil
}

// TargetReconciler releases the external resources of provisioned DeploymentTargets when they
// are deleted: the provisioned namespace goes, then the finalizer.
type TargetReconciler struct {
	Client                  client.Client
	Reader                  client.Reader
	Recorder                record.EventRecorder
	MaxConcurrentReconciles int
}

// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=deploymenttargets,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;delete

// SetupWithManager registers the controller.
func (r *TargetReconciler) SetupWithManager(_ context.Context, mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&appstudio.DeploymentTarget{}).
		WithOptions(manageropts.ControllerOptions(r.MaxConcurrentReconciles)).
		Named("namespace-provisioner-deleter").
		Complete(r)
}

// Reconcile deletes the namespace of a deleted provisioned target: the one whose labels name
// the target's UID and namespace. The target's spec (its default namespace) and
// annotations are the tenant's to write, so they choose nothing here.
func (r *TargetReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	dt := &appstudio.DeploymentTarget{}
	if err := r.Client.Get(ctx, req.NamespacedName, dt); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if dt.Annotations[appstudio.AnnDynamicallyProvisioned] != Name || dt.DeletionTimestamp.IsZero() ||
		!controllerutil.ContainsFinalizer(dt, appstudio.FinalizerDT) {
		return ctrl.Result{}, nil
	}
	list := &corev1.NamespaceList{}
	if err := r.Reader.List(ctx, list, client.MatchingLabels{LabelTargetUID: string(dt.UID), LabelClaimNamespace: dt.Namespace}); err != nil {
		return ctrl.Result{}, err
	}
	for i := range list.Items {
		ns := &list.Items[i]
		if !ns.DeletionTimestamp.IsZero() {
			continue
		}
		if err := r.Client.Delete(ctx, ns, client.Preconditions{UID: &ns.UID}); err != nil && !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		ctrl.LoggerFrom(ctx).Info("deleting provisioned namespace", "targetNamespace", ns.Name)
	}
	controllerutil.RemoveFinalizer(dt, appstudio.FinalizerDT)
	return ctrl.Result{}, client.IgnoreNotFound(r.Client.Update(ctx, dt))
}
