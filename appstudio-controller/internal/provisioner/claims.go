package provisioner

import (
	"context"
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

// ClassNames says whether a claim's DeploymentTargetClass names the provisioner name. Only
// the class counts: a class is cluster-scoped, so an administrator chose it, while the
// claim's annotations are the tenant's to write. A claim without a class, or whose class
// does not exist (yet), is not the provisioner's.
func ClassNames(ctx context.Context, c client.Reader, dtc *appstudio.DeploymentTargetClaim, name string) (bool, error) {
	if dtc.Spec.DeploymentTargetClassName == "" {
		return false, nil
	}
	cls := &appstudio.DeploymentTargetClass{}
	if err := c.Get(ctx, client.ObjectKey{Name: string(dtc.Spec.DeploymentTargetClassName)}, cls); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return string(cls.Spec.Provisioner) == name, nil
}

// SetCondition writes a claim's Provisioned condition (the provisioners' report on it), with
// an Event when it changes.
func SetCondition(ctx context.Context, c client.Client, recorder record.EventRecorder, dtc *appstudio.DeploymentTargetClaim,
	status metav1.ConditionStatus, reason, msg string) error {
	prev := meta.FindStatusCondition(dtc.Status.Conditions, appstudio.DeploymentTargetClaimConditionProvisioned)
	if prev != nil && prev.Status == status && prev.Reason == reason && prev.Message == msg && prev.ObservedGeneration == dtc.Generation {
		return nil
	}
	changed := prev == nil || prev.Status != status || prev.Reason != reason // before SetStatusCondition changes *prev
	meta.SetStatusCondition(&dtc.Status.Conditions, metav1.Condition{Type: appstudio.DeploymentTargetClaimConditionProvisioned,
		Status: status, Reason: reason, Message: msg, ObservedGeneration: dtc.Generation})
	// Only the conditions (a merge patch replaces the list; the binder patches the phase),
	// and only over the copy they were read from: the list also holds the binder's Ready.
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": dtc.ResourceVersion},
		"status":   map[string]any{"conditions": dtc.Status.Conditions},
	})
	if err != nil {
		return err
	}
	if err := c.Status().Patch(ctx, dtc, client.RawPatch(client.Merge.Type(), patch)); err != nil {
		if apierrors.IsConflict(err) {
			// The claim changed since it was read: its watch runs this reconcile again.
			ctrl.LoggerFrom(ctx).V(1).Info("Stale claim; retrying", "error", err.Error())
			return nil
		}
		return client.IgnoreNotFound(err)
	}
	if changed {
		typ := corev1.EventTypeNormal
		if status == metav1.ConditionFalse && reason != appstudio.DeploymentTargetClaimReasonWaitingForSpaceRequest {
			typ = corev1.EventTypeWarning
		}
		ctrl.LoggerFrom(ctx).Info("claim provisioning condition changed", "reason", reason, "message", msg)
		if recorder != nil {
			recorder.Event(dtc, typ, reason, msg)
		}
	}
	return nil
}
