package dtbinder

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/manageropts"
	"github.com/gitops-service/gitops-service/backend-shared/outcome"
)

// DefaultStuckTermination is how long a deleted DeploymentTarget may keep its finalizer
// (its provisioner cleaning up) before it is Failed.
const DefaultStuckTermination = 2 * time.Minute

// TargetReconciler keeps the phase of DeploymentTargets: Available without a claim, Bound
// while its claim exists, Released once its claim is gone (sticky, as for PVs: an
// administrator clears spec.claimRef to make it Available again), and Failed when its
// termination (deletion while the provisioner's finalizer is on it) takes longer than
// StuckTermination.
type TargetReconciler struct {
	Client                  client.Client
	Recorder                record.EventRecorder
	MaxConcurrentReconciles int
	// StuckTermination: zero means DefaultStuckTermination.
	StuckTermination time.Duration
}

// stuck returns whether dt's termination has taken longer than after, and otherwise how
// long until it has (zero when dt is not terminating).
func stuck(dt *appstudio.DeploymentTarget, after time.Duration, now time.Time) (bool, time.Duration) {
	if dt.DeletionTimestamp.IsZero() || !controllerutil.ContainsFinalizer(dt, appstudio.FinalizerDT) {
		return false, 0
	}
	left := dt.DeletionTimestamp.Add(after).Sub(now)
	if left < 0 {
		return true, 0
	}
	return false, left + 100*time.Millisecond
}

// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=deploymenttargets,verbs=get;list;watch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=deploymenttargets/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=deploymenttargetclaims,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// SetupWithManager registers the controller; targets are requeued when their claim changes.
func (r *TargetReconciler) SetupWithManager(_ context.Context, mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&appstudio.DeploymentTarget{}).
		Watches(&appstudio.DeploymentTargetClaim{}, handler.EnqueueRequestsFromMapFunc(r.forClaim)).
		WithOptions(manageropts.ControllerOptions(r.MaxConcurrentReconciles)).
		Named("deploymenttarget-binder").
		Complete(r)
}

func (r *TargetReconciler) forClaim(ctx context.Context, o client.Object) []reconcile.Request {
	dtc := o.(*appstudio.DeploymentTargetClaim)
	var reqs []reconcile.Request
	if dtc.Spec.TargetName != "" {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: dtc.Namespace, Name: dtc.Spec.TargetName}})
	}
	list := &appstudio.DeploymentTargetList{}
	if err := r.Client.List(ctx, list, client.InNamespace(dtc.Namespace)); err == nil {
		for _, dt := range list.Items {
			if dt.Spec.ClaimRef == dtc.Name && dt.Name != dtc.Spec.TargetName {
				reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: dt.Namespace, Name: dt.Name}})
			}
		}
	}
	return reqs
}

// Phase computes a target's phase from its claim (nil when the claim does not exist).
func Phase(dt *appstudio.DeploymentTarget, claim *appstudio.DeploymentTargetClaim) appstudio.DeploymentTargetPhase {
	switch {
	case dt.Spec.ClaimRef == "":
		return appstudio.DeploymentTargetPhaseAvailable
	case dt.Status.Phase == appstudio.DeploymentTargetPhaseReleased || dt.Status.Phase == appstudio.DeploymentTargetPhaseFailed:
		return dt.Status.Phase
	case claim == nil || !claim.DeletionTimestamp.IsZero():
		if dt.Status.Phase == appstudio.DeploymentTargetPhaseBound {
			return appstudio.DeploymentTargetPhaseReleased
		}
		// Provisioned or pre-bound for a claim that is not there (yet).
		if claim == nil && dt.Status.Phase == "" {
			return appstudio.DeploymentTargetPhasePending
		}
		return dt.Status.Phase
	case claim.Spec.TargetName == dt.Name:
		return appstudio.DeploymentTargetPhaseBound
	default:
		// claimRef set, the claim not bound to it yet: the claim binder finishes the binding.
		return appstudio.DeploymentTargetPhasePending
	}
}

// Reconcile updates one target's phase.
func (r *TargetReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	dt := &appstudio.DeploymentTarget{}
	if err := r.Client.Get(ctx, req.NamespacedName, dt); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	start := dt.DeepCopy()
	claim, err := r.claim(ctx, dt)
	if err == nil {
		dt.Status.Phase = Phase(dt, claim)
	}
	after := r.StuckTermination
	if after <= 0 {
		after = DefaultStuckTermination
	}
	isStuck, wait := stuck(dt, after, time.Now())
	if isStuck {
		dt.Status.Phase = appstudio.DeploymentTargetPhaseFailed
	}
	progress := TargetProgress(dt)
	if wait > 0 && (progress.RequeueAfter == 0 || wait < progress.RequeueAfter) {
		progress.RequeueAfter = wait
	}
	return outcome.Ending{Client: r.Client, Recorder: r.Recorder, OwnEvents: true}.End(ctx, dt, start, outcome.Status{
		Conditions: outcome.MetaConditions{List: &dt.Status.Conditions, Generation: dt.Generation},
		Written: func() {
			if prev := start.Status.Phase; dt.Status.Phase != prev {
				ctrl.LoggerFrom(ctx).Info("target phase changed", "from", prev, "to", dt.Status.Phase)
				if r.Recorder != nil {
					typ, reason, msg := targetPhaseEvent(dt, dt.Status.Phase)
					r.Recorder.Event(dt, typ, reason, msg)
				}
			}
		},
	}, progress, err)
}

// claim returns the claim dt names in spec.claimRef, or nil when there is none.
func (r *TargetReconciler) claim(ctx context.Context, dt *appstudio.DeploymentTarget) (*appstudio.DeploymentTargetClaim, error) {
	if dt.Spec.ClaimRef == "" {
		return nil, nil
	}
	c := &appstudio.DeploymentTargetClaim{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: dt.Namespace, Name: dt.Spec.ClaimRef}, c); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return c, nil
}

// TargetProgress is where a target is: Ready while Available or Bound, in progress while
// Pending (its claim finishes the binding), Stalled when Failed, and waiting for an
// administrator when Released.
func TargetProgress(dt *appstudio.DeploymentTarget) outcome.Progress {
	phase := dt.Status.Phase
	if phase == "" {
		phase = appstudio.DeploymentTargetPhasePending
	}
	_, reason, msg := targetPhaseEvent(dt, phase)
	switch phase {
	case appstudio.DeploymentTargetPhaseAvailable, appstudio.DeploymentTargetPhaseBound:
		return outcome.Done(reason, msg)
	case appstudio.DeploymentTargetPhaseReleased:
		return outcome.Waiting(reason, msg)
	case appstudio.DeploymentTargetPhaseFailed:
		return outcome.Failed(reason, msg)
	default:
		return outcome.Working(reason, msg, false)
	}
}

// targetPhaseEvent describes a target's move to phase: the reason is the phase, Warning for
// Failed.
func targetPhaseEvent(dt *appstudio.DeploymentTarget, phase appstudio.DeploymentTargetPhase) (string, string, string) {
	switch phase {
	case appstudio.DeploymentTargetPhaseAvailable:
		return corev1.EventTypeNormal, string(phase), "DeploymentTarget is available to be claimed"
	case appstudio.DeploymentTargetPhasePending:
		return corev1.EventTypeNormal, string(phase), "DeploymentTarget is reserved for DeploymentTargetClaim " + dt.Spec.ClaimRef + ", which has not bound it yet"
	case appstudio.DeploymentTargetPhaseBound:
		return corev1.EventTypeNormal, string(phase), "DeploymentTarget is bound to DeploymentTargetClaim " + dt.Spec.ClaimRef
	case appstudio.DeploymentTargetPhaseReleased:
		return corev1.EventTypeNormal, string(phase), "DeploymentTargetClaim " + dt.Spec.ClaimRef + " was deleted; the DeploymentTarget is kept and is not bound again automatically"
	case appstudio.DeploymentTargetPhaseFailed:
		if !dt.DeletionTimestamp.IsZero() && controllerutil.ContainsFinalizer(dt, appstudio.FinalizerDT) {
			return corev1.EventTypeWarning, string(phase), fmt.Sprintf(
				"DeploymentTarget termination is stuck: deleted at %s, its finalizer %s is still there (the provisioner has not cleaned up)",
				dt.DeletionTimestamp.UTC().Format(time.RFC3339), appstudio.FinalizerDT)
		}
		return corev1.EventTypeWarning, string(phase), "DeploymentTarget failed"
	}
	return corev1.EventTypeNormal, string(phase), "DeploymentTarget is " + string(phase)
}
