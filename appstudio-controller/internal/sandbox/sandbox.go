// Package sandbox is the DeploymentTarget provisioner "appstudio.redhat.com/devsandbox": for a
// DeploymentTargetClaim that the binder marked for it (annotation
// provisioner.appstudio.redhat.com/dt-provisioner), it creates a SpaceRequest
// (toolchain.dev.openshift.com/v1alpha1) in the claim's namespace, waits until the Developer
// Sandbox reports it Ready, and creates a DeploymentTarget from its status (cluster URL, first
// namespace and that namespace's kubeconfig Secret), pre-bound to the claim (the binder
// completes the binding). Progress and failures are reported on the claim's Provisioned
// condition and as Events.
//
// The SpaceRequest is owned by the claim until the DeploymentTarget exists, then by the
// DeploymentTarget: deleting a claim that was never provisioned deletes its SpaceRequest;
// with reclaim policy Retain the SpaceRequest stays with the released DeploymentTarget; when
// the DeploymentTarget is deleted (reclaim policy Delete) its SpaceRequest is deleted, and the
// DeploymentTarget's finalizer is removed once the SpaceRequest is gone.
package sandbox

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	toolchain "github.com/gitops-service/gitops-service/api/toolchain/v1alpha1"
	"github.com/gitops-service/gitops-service/appstudio-controller/internal/provisioner"
	"github.com/gitops-service/gitops-service/backend-shared/manageropts"
)

// Name is the provisioner name a DeploymentTargetClass sets in spec.provisioner to use it.
const Name = string(appstudio.ProvisionerDevsandbox)

// DefaultTierName is the spec.tierName of the SpaceRequests (the sandbox tier of AppStudio
// environments). api.md defines no DeploymentTargetClass parameters, so it is not configurable.
const DefaultTierName = "appstudio-env"

// Labels and annotations linking the provisioned objects to their claim.
const (
	// LabelClaimUID on a SpaceRequest holds the UID of the claim it was made for; only
	// SpaceRequests with it are ever deleted by the provisioner.
	LabelClaimUID = "provisioner.appstudio.redhat.com/claim-uid"
	// LabelClaimName on a SpaceRequest holds the name of its claim (left out when the name
	// cannot be a label value).
	LabelClaimName = "provisioner.appstudio.redhat.com/claim-name"
	// AnnSpaceRequest on a provisioned DeploymentTarget names its SpaceRequest.
	AnnSpaceRequest = "provisioner.appstudio.redhat.com/space-request"
	// deletePoll is how often a deleted DeploymentTarget re-reads a SpaceRequest that it no
	// longer controls (so that no watch event reports its removal).
	deletePoll = 5 * time.Second
)

// Names returns the SpaceRequest and DeploymentTarget names provisioned for a claim.
func Names(dtc *appstudio.DeploymentTargetClaim) (spaceRequest, target string) {
	name, h := provisioner.ClaimName(dtc), provisioner.ClaimHash(dtc)
	return name + "-sr-" + h, name + "-dt-" + h
}

// ClaimReconciler provisions DeploymentTargets for claims through SpaceRequests.
type ClaimReconciler struct {
	Client                  client.Client
	Recorder                record.EventRecorder
	MaxConcurrentReconciles int
}

// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=deploymenttargetclaims,verbs=get;list;watch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=deploymenttargetclaims/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=deploymenttargetclaims/finalizers,verbs=update
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=deploymenttargetclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=deploymenttargets,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=toolchain.dev.openshift.com,resources=spacerequests,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// SetupWithManager registers the controller; a claim is requeued when its SpaceRequest changes.
func (r *ClaimReconciler) SetupWithManager(_ context.Context, mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&appstudio.DeploymentTargetClaim{}).
		Owns(&toolchain.SpaceRequest{}).
		WithOptions(manageropts.ControllerOptions(r.MaxConcurrentReconciles)).
		Named("devsandbox-provisioner").
		Complete(r)
}

// Reconcile provisions a target for a claim marked for this provisioner, step by step.
func (r *ClaimReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	dtc := &appstudio.DeploymentTargetClaim{}
	if err := r.Client.Get(ctx, req.NamespacedName, dtc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if dtc.Annotations[appstudio.AnnTargetProvisioner] != Name || !dtc.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	if ours, err := provisioner.ClassNames(ctx, r.Client, dtc, Name); err != nil || !ours {
		return ctrl.Result{}, err // the tenant's own annotation, without a class of this provisioner
	}
	srName, dtName := Names(dtc)
	dt := &appstudio.DeploymentTarget{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: dtc.Namespace, Name: dtName}, dt); err == nil {
		// Provisioned; the binder binds it. Finish the hand-over of the SpaceRequest.
		if err := r.handOver(ctx, dtc, dt, srName); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{}, r.setCondition(ctx, dtc, metav1.ConditionTrue, appstudio.DeploymentTargetClaimReasonProvisioned,
			fmt.Sprintf("Provisioned DeploymentTarget %s from SpaceRequest %s", dtName, srName))
	} else if !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	if dtc.Spec.TargetName != "" {
		return ctrl.Result{}, nil // bound (or being bound) to another target
	}

	sr := &toolchain.SpaceRequest{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: dtc.Namespace, Name: srName}, sr)
	switch {
	case apierrors.IsNotFound(err):
		return ctrl.Result{}, r.createSpaceRequest(ctx, dtc, srName)
	case err != nil:
		return ctrl.Result{}, err
	}
	if sr.Labels[LabelClaimUID] != string(dtc.UID) {
		return ctrl.Result{}, r.setCondition(ctx, dtc, metav1.ConditionFalse, appstudio.DeploymentTargetClaimReasonSpaceRequestConflict,
			fmt.Sprintf("SpaceRequest %s exists and was not created for this claim; delete it to let the provisioner create its own", srName))
	}
	if !sr.DeletionTimestamp.IsZero() {
		// Deleted under us (by a user): wait until it is gone, then make a new one.
		return ctrl.Result{}, r.setCondition(ctx, dtc, metav1.ConditionFalse, appstudio.DeploymentTargetClaimReasonWaitingForSpaceRequest,
			fmt.Sprintf("SpaceRequest %s is being deleted; a new one is created once it is gone", srName))
	}

	ready := sr.Status.FindCondition(toolchain.ConditionReady)
	switch {
	case ready == nil || ready.Status == toolchain.ConditionUnknown ||
		(ready.Status == toolchain.ConditionFalse && (ready.Reason == "" || ready.Reason == toolchain.ReasonProvisioning || ready.Reason == toolchain.ReasonUpdating)):
		msg := fmt.Sprintf("Waiting for the Developer Sandbox to provision SpaceRequest %s", srName)
		if ready != nil && ready.Reason != "" {
			msg += " (" + ready.Reason + ")"
		}
		return ctrl.Result{}, r.setCondition(ctx, dtc, metav1.ConditionFalse, appstudio.DeploymentTargetClaimReasonWaitingForSpaceRequest, msg)
	case ready.Status == toolchain.ConditionFalse:
		msg := fmt.Sprintf("SpaceRequest %s is not ready: %s", srName, ready.Reason)
		if ready.Message != "" {
			msg += ": " + ready.Message
		}
		return ctrl.Result{}, r.setCondition(ctx, dtc, metav1.ConditionFalse, appstudio.DeploymentTargetClaimReasonSpaceRequestFailed,
			msg+". Fix the cause in the Developer Sandbox, or delete the SpaceRequest to request a new space")
	}

	// Ready.
	st := sr.Status
	if st.TargetClusterURL == "" || len(st.NamespaceAccess) == 0 || st.NamespaceAccess[0].Name == "" || st.NamespaceAccess[0].SecretRef == "" {
		return ctrl.Result{}, r.setCondition(ctx, dtc, metav1.ConditionFalse, appstudio.DeploymentTargetClaimReasonInvalidSpaceRequestStatus,
			fmt.Sprintf("SpaceRequest %s is Ready but its status lacks targetClusterURL, or a namespaceAccess entry with name and secretRef", srName))
	}
	access := st.NamespaceAccess[0]
	dt = &appstudio.DeploymentTarget{
		ObjectMeta: metav1.ObjectMeta{Namespace: dtc.Namespace, Name: dtName,
			Annotations: map[string]string{appstudio.AnnDynamicallyProvisioned: Name, AnnSpaceRequest: srName},
			Finalizers:  []string{appstudio.FinalizerDT}},
		Spec: appstudio.DeploymentTargetSpec{
			DeploymentTargetClassName: dtc.Spec.DeploymentTargetClassName,
			ClaimRef:                  dtc.Name,
			KubernetesClusterCredentials: appstudio.DeploymentTargetKubernetesClusterCredentials{
				APIURL: st.TargetClusterURL, DefaultNamespace: access.Name, ClusterCredentialsSecret: access.SecretRef},
		},
	}
	if err := r.Client.Create(ctx, dt); err != nil {
		return ctrl.Result{}, client.IgnoreAlreadyExists(err)
	}
	if err := r.handOver(ctx, dtc, dt, srName); err != nil {
		return ctrl.Result{}, err
	}
	ctrl.LoggerFrom(ctx).Info("provisioned deployment target", "deploymentTarget", dtName, "spaceRequest", srName, "targetNamespace", access.Name)
	return ctrl.Result{}, r.setCondition(ctx, dtc, metav1.ConditionTrue, appstudio.DeploymentTargetClaimReasonProvisioned,
		fmt.Sprintf("Provisioned DeploymentTarget %s from SpaceRequest %s", dtName, srName))
}

func (r *ClaimReconciler) createSpaceRequest(ctx context.Context, dtc *appstudio.DeploymentTargetClaim, srName string) error {
	labels := map[string]string{LabelClaimUID: string(dtc.UID)}
	if len(validation.IsValidLabelValue(dtc.Name)) == 0 {
		labels[LabelClaimName] = dtc.Name
	}
	sr := &toolchain.SpaceRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: dtc.Namespace, Name: srName, Labels: labels},
		Spec:       toolchain.SpaceRequestSpec{TierName: DefaultTierName},
	}
	if err := controllerutil.SetControllerReference(dtc, sr, r.Client.Scheme()); err != nil {
		return err
	}
	if err := r.Client.Create(ctx, sr); err != nil {
		return client.IgnoreAlreadyExists(err)
	}
	ctrl.LoggerFrom(ctx).Info("created SpaceRequest", "spaceRequest", srName)
	r.event(dtc, corev1.EventTypeNormal, "SpaceRequestCreated", "Created SpaceRequest "+srName+" (tier "+DefaultTierName+")")
	return r.setCondition(ctx, dtc, metav1.ConditionFalse, appstudio.DeploymentTargetClaimReasonWaitingForSpaceRequest,
		fmt.Sprintf("Waiting for the Developer Sandbox to provision SpaceRequest %s", srName))
}

// handOver makes the DeploymentTarget, instead of the claim, the owner of the SpaceRequest,
// so that the SpaceRequest follows the target (kept with a retained target, deleted with a
// deleted one) rather than the claim.
func (r *ClaimReconciler) handOver(ctx context.Context, dtc *appstudio.DeploymentTargetClaim, dt *appstudio.DeploymentTarget, srName string) error {
	sr := &toolchain.SpaceRequest{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: dt.Namespace, Name: srName}, sr); err != nil {
		return client.IgnoreNotFound(err)
	}
	if sr.Labels[LabelClaimUID] != string(dtc.UID) || metav1.IsControlledBy(sr, dt) {
		return nil
	}
	orig := sr.DeepCopy()
	var refs []metav1.OwnerReference
	for _, ref := range sr.OwnerReferences {
		if ref.UID != dtc.UID {
			refs = append(refs, ref)
		}
	}
	sr.OwnerReferences = refs
	if err := controllerutil.SetControllerReference(dt, sr, r.Client.Scheme()); err != nil {
		return err
	}
	// Optimistic concurrency: the owner references are replaced as a whole.
	return r.Client.Patch(ctx, sr, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
}

// setCondition writes the claim's Provisioned condition, with an Event when it changes.
func (r *ClaimReconciler) setCondition(ctx context.Context, dtc *appstudio.DeploymentTargetClaim, status metav1.ConditionStatus, reason, msg string) error {
	return provisioner.SetCondition(ctx, r.Client, r.Recorder, dtc, status, reason, msg)
}

func (r *ClaimReconciler) event(o client.Object, typ, reason, msg string) {
	if r.Recorder != nil {
		r.Recorder.Event(o, typ, reason, msg)
	}
}

// TargetReconciler releases the SpaceRequests of deleted provisioned DeploymentTargets: the
// SpaceRequest is deleted, and the target's finalizer removed once it is gone.
type TargetReconciler struct {
	Client                  client.Client
	Recorder                record.EventRecorder
	MaxConcurrentReconciles int
}

// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=deploymenttargets,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=deploymenttargets/finalizers,verbs=update
// +kubebuilder:rbac:groups=toolchain.dev.openshift.com,resources=spacerequests,verbs=get;list;watch;delete

// SetupWithManager registers the controller; a target is requeued when its SpaceRequest changes.
func (r *TargetReconciler) SetupWithManager(_ context.Context, mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&appstudio.DeploymentTarget{}).
		Owns(&toolchain.SpaceRequest{}).
		WithOptions(manageropts.ControllerOptions(r.MaxConcurrentReconciles)).
		Named("devsandbox-provisioner-deleter").
		Complete(r)
}

// Reconcile deletes the SpaceRequest of a deleted provisioned target.
func (r *TargetReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	dt := &appstudio.DeploymentTarget{}
	if err := r.Client.Get(ctx, req.NamespacedName, dt); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if dt.Annotations[appstudio.AnnDynamicallyProvisioned] != Name || dt.DeletionTimestamp.IsZero() ||
		!controllerutil.ContainsFinalizer(dt, appstudio.FinalizerDT) {
		return ctrl.Result{}, nil
	}
	if srName := dt.Annotations[AnnSpaceRequest]; srName != "" {
		sr := &toolchain.SpaceRequest{}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: dt.Namespace, Name: srName}, sr)
		switch {
		case err == nil && sr.Labels[LabelClaimUID] != "":
			if sr.DeletionTimestamp.IsZero() {
				if err := r.Client.Delete(ctx, sr, client.Preconditions{UID: &sr.UID}); err != nil && !apierrors.IsNotFound(err) {
					return ctrl.Result{}, err
				}
				ctrl.LoggerFrom(ctx).Info("deleting SpaceRequest of deleted deployment target", "spaceRequest", srName)
				if r.Recorder != nil {
					r.Recorder.Event(dt, corev1.EventTypeNormal, "DeletingSpaceRequest", "Deleting SpaceRequest "+srName)
				}
			}
			// Wait until the sandbox has released the space (its own finalizer) and the
			// SpaceRequest is gone; its deletion requeues us when we own it.
			if metav1.IsControlledBy(sr, dt) {
				return ctrl.Result{}, nil
			}
			return ctrl.Result{RequeueAfter: deletePoll}, nil
		case err != nil && !apierrors.IsNotFound(err):
			return ctrl.Result{}, err
		}
	}
	controllerutil.RemoveFinalizer(dt, appstudio.FinalizerDT)
	return ctrl.Result{}, client.IgnoreNotFound(r.Client.Update(ctx, dt))
}
