// Package dtbinder binds DeploymentTargetClaims to DeploymentTargets, following the
// PersistentVolumeClaim/PersistentVolume binder: a claim without spec.targetName binds to an
// Available target of its class that no claim holds (or to a target provisioned for it); a
// claim whose class has a provisioner and finds no target asks that provisioner for one
// (annotation provisioner.appstudio.redhat.com/dt-provisioner). When a claim is deleted its
// target is deleted (class reclaimPolicy Delete) or released (Retain).
//
// ClaimReconciler owns the claims (finalizer, spec.targetName, annotations, status) and the
// targets' spec.claimRef; TargetReconciler owns the targets' status.phase.
package dtbinder

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	"github.com/gitops-service/gitops-service/backend-shared/statuspatch"
)

// ClaimReconciler binds DeploymentTargetClaims.
type ClaimReconciler struct {
	Client                  client.Client
	Recorder                record.EventRecorder
	MaxConcurrentReconciles int
}

// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=deploymenttargetclaims,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=deploymenttargetclaims/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=deploymenttargets,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=deploymenttargetclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// SetupWithManager registers the controller: claims are requeued when a target in their
// namespace changes (it may now satisfy them) and when a class changes.
func (r *ClaimReconciler) SetupWithManager(_ context.Context, mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&appstudio.DeploymentTargetClaim{}).
		Watches(&appstudio.DeploymentTarget{}, handler.EnqueueRequestsFromMapFunc(r.forTarget)).
		Watches(&appstudio.DeploymentTargetClass{}, handler.EnqueueRequestsFromMapFunc(r.forClass)).
		WithOptions(manageropts.ControllerOptions(r.MaxConcurrentReconciles)).
		Named("deploymenttargetclaim-binder").
		Complete(r)
}

func (r *ClaimReconciler) forTarget(ctx context.Context, o client.Object) []reconcile.Request {
	dt := o.(*appstudio.DeploymentTarget)
	claims := &appstudio.DeploymentTargetClaimList{}
	if err := r.Client.List(ctx, claims, client.InNamespace(dt.Namespace)); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for _, c := range claims.Items {
		if c.Name == dt.Spec.ClaimRef || c.Spec.TargetName == dt.Name ||
			(c.Spec.TargetName == "" && c.Spec.DeploymentTargetClassName == dt.Spec.DeploymentTargetClassName) {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: c.Namespace, Name: c.Name}})
		}
	}
	return reqs
}

func (r *ClaimReconciler) forClass(ctx context.Context, o client.Object) []reconcile.Request {
	claims := &appstudio.DeploymentTargetClaimList{}
	if err := r.Client.List(ctx, claims); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for _, c := range claims.Items {
		if string(c.Spec.DeploymentTargetClassName) == o.GetName() && c.Status.Phase != appstudio.DeploymentTargetClaimPhaseBound {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: c.Namespace, Name: c.Name}})
		}
	}
	return reqs
}

// Reconcile binds, or releases, one claim.
func (r *ClaimReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	dtc := &appstudio.DeploymentTargetClaim{}
	if err := r.Client.Get(ctx, req.NamespacedName, dtc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !dtc.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, dtc)
	}
	if controllerutil.AddFinalizer(dtc, appstudio.FinalizerBinder) {
		if err := r.Client.Update(ctx, dtc); err != nil {
			return ctrl.Result{}, err
		}
	}
	start := dtc.DeepCopy()
	phase, n, err := r.bind(ctx, dtc)
	if apierrors.IsConflict(err) {
		// A write met a newer object (the cache lags behind a write, or another claim took
		// the target): look again on fresh data rather than report it.
		ctrl.LoggerFrom(ctx).V(1).Info("Stale object; retrying", "error", err.Error())
		return ctrl.Result{RequeueAfter: statuspatch.StaleRetry}, nil
	}
	// One Event per change: what bind did (it reports only changes), else the new phase.
	if n != nil {
		r.event(dtc, n.typ, n.reason, n.msg)
	}
	if phase != "" {
		dtc.Status.Phase = phase
	}
	return outcome.Ending{Client: r.Client, Recorder: r.Recorder, OwnEvents: true}.End(ctx, dtc, start, outcome.Status{
		Conditions: outcome.MetaConditions{List: &dtc.Status.Conditions, Generation: dtc.Generation},
		Written: func() {
			if prev := start.Status.Phase; dtc.Status.Phase != prev {
				ctrl.LoggerFrom(ctx).Info("claim phase changed", "from", prev, "to", dtc.Status.Phase)
				if n == nil {
					typ, reason, msg := phaseEvent(dtc, dtc.Status.Phase)
					r.event(dtc, typ, reason, msg)
				}
			}
		},
	}, ClaimProgress(dtc), err)
}

// ClaimProgress is where a claim is: Ready once Bound, Stalled when its target is Lost, in
// progress while Pending (its generation is processed: a target or a provisioner is awaited).
func ClaimProgress(dtc *appstudio.DeploymentTargetClaim) outcome.Progress {
	phase := dtc.Status.Phase
	if phase == "" {
		phase = appstudio.DeploymentTargetClaimPhasePending
	}
	_, reason, msg := phaseEvent(dtc, phase)
	switch phase {
	case appstudio.DeploymentTargetClaimPhaseBound:
		return outcome.Done(reason, msg)
	case appstudio.DeploymentTargetClaimPhaseLost:
		return outcome.Failed(reason, msg)
	default:
		if p := dtc.Annotations[appstudio.AnnTargetProvisioner]; p != "" && dtc.Spec.TargetName == "" {
			msg = "Waiting for provisioner " + p + " to provision a DeploymentTarget"
		}
		return outcome.Working(reason, msg, false)
	}
}

// note is the Event describing what a reconcile changed.
type note struct{ typ, reason, msg string }

// phaseEvent describes a claim's move to phase.
func phaseEvent(dtc *appstudio.DeploymentTargetClaim, phase appstudio.DeploymentTargetClaimPhase) (string, string, string) {
	switch phase {
	case appstudio.DeploymentTargetClaimPhaseBound:
		return corev1.EventTypeNormal, "Bound", "Bound to DeploymentTarget " + dtc.Spec.TargetName
	case appstudio.DeploymentTargetClaimPhaseLost:
		return corev1.EventTypeWarning, "TargetLost", "DeploymentTarget " + dtc.Spec.TargetName + " no longer exists"
	case appstudio.DeploymentTargetClaimPhasePending:
		return corev1.EventTypeNormal, "Pending", "Waiting for a DeploymentTarget of class " + string(dtc.Spec.DeploymentTargetClassName)
	}
	return corev1.EventTypeNormal, string(phase), "DeploymentTargetClaim is " + string(phase)
}

func (r *ClaimReconciler) event(o client.Object, typ, reason, msg string) {
	if r.Recorder != nil {
		r.Recorder.Event(o, typ, reason, msg)
	}
}

// bind returns the phase the claim is in after trying to bind it ("" = leave as is), and a
// note when it changed something worth an Event.
func (r *ClaimReconciler) bind(ctx context.Context, dtc *appstudio.DeploymentTargetClaim) (appstudio.DeploymentTargetClaimPhase, *note, error) {
	if dtc.Spec.TargetName != "" {
		return r.bindNamed(ctx, dtc)
	}
	dt, err := r.findTarget(ctx, dtc)
	if err != nil {
		return "", nil, err
	}
	if dt == nil {
		n, err := r.askProvisioner(ctx, dtc)
		return appstudio.DeploymentTargetClaimPhasePending, n, err
	}
	// As the PV binder does: bind the target first, then the claim.
	if err := r.bindTarget(ctx, dt, dtc); err != nil {
		return "", nil, err
	}
	dtc.Spec.TargetName = dt.Name
	setAnn(dtc, appstudio.AnnBoundByController, appstudio.AnnBinderValueTrue)
	setAnn(dtc, appstudio.AnnBindCompleted, appstudio.AnnBinderValueTrue)
	if err := r.Client.Update(ctx, dtc); err != nil {
		return "", nil, err
	}
	ctrl.LoggerFrom(ctx).Info("claim bound", "deploymentTarget", dt.Name)
	return appstudio.DeploymentTargetClaimPhaseBound, nil, nil
}

// bindNamed handles a claim whose spec.targetName is set (by us, or by the user).
func (r *ClaimReconciler) bindNamed(ctx context.Context, dtc *appstudio.DeploymentTargetClaim) (appstudio.DeploymentTargetClaimPhase, *note, error) {
	dt := &appstudio.DeploymentTarget{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: dtc.Namespace, Name: dtc.Spec.TargetName}, dt); err != nil {
		if !apierrors.IsNotFound(err) {
			return "", nil, err
		}
		if dtc.Annotations[appstudio.AnnBindCompleted] == appstudio.AnnBinderValueTrue {
			return appstudio.DeploymentTargetClaimPhaseLost, nil, nil
		}
		return appstudio.DeploymentTargetClaimPhasePending, nil, nil
	}
	switch dt.Spec.ClaimRef {
	case dtc.Name:
	case "":
		if dt.Status.Phase == appstudio.DeploymentTargetPhaseReleased || dt.Status.Phase == appstudio.DeploymentTargetPhaseFailed {
			return appstudio.DeploymentTargetClaimPhasePending, nil, nil
		}
		if err := r.bindTarget(ctx, dt, dtc); err != nil {
			return "", nil, err
		}
	default:
		var n *note
		if dtc.Status.Phase != appstudio.DeploymentTargetClaimPhasePending {
			n = &note{corev1.EventTypeWarning, "TargetClaimed", fmt.Sprintf("DeploymentTarget %s is bound to another claim (%s)", dt.Name, dt.Spec.ClaimRef)}
		}
		return appstudio.DeploymentTargetClaimPhasePending, n, nil
	}
	if setAnn(dtc, appstudio.AnnBindCompleted, appstudio.AnnBinderValueTrue) {
		if err := r.Client.Update(ctx, dtc); err != nil {
			return "", nil, err
		}
	}
	return appstudio.DeploymentTargetClaimPhaseBound, nil, nil
}

// findTarget returns a target for an unbound claim: first one provisioned for (or pre-bound
// to) it, else the oldest Available unclaimed target of its class.
func (r *ClaimReconciler) findTarget(ctx context.Context, dtc *appstudio.DeploymentTargetClaim) (*appstudio.DeploymentTarget, error) {
	list := &appstudio.DeploymentTargetList{}
	if err := r.Client.List(ctx, list, client.InNamespace(dtc.Namespace)); err != nil {
		return nil, err
	}
	items := list.Items
	sort.Slice(items, func(i, j int) bool {
		if !items[i].CreationTimestamp.Equal(&items[j].CreationTimestamp) {
			return items[i].CreationTimestamp.Before(&items[j].CreationTimestamp)
		}
		return items[i].Name < items[j].Name
	})
	var candidate *appstudio.DeploymentTarget
	for i := range items {
		dt := &items[i]
		if !dt.DeletionTimestamp.IsZero() || dt.Spec.DeploymentTargetClassName != dtc.Spec.DeploymentTargetClassName {
			continue
		}
		if dt.Status.Phase == appstudio.DeploymentTargetPhaseReleased || dt.Status.Phase == appstudio.DeploymentTargetPhaseFailed {
			continue
		}
		if dt.Spec.ClaimRef == dtc.Name {
			return dt, nil
		}
		if candidate == nil && dt.Spec.ClaimRef == "" && dt.Status.Phase == appstudio.DeploymentTargetPhaseAvailable {
			candidate = dt
		}
	}
	return candidate, nil
}

func (r *ClaimReconciler) bindTarget(ctx context.Context, dt *appstudio.DeploymentTarget, dtc *appstudio.DeploymentTargetClaim) error {
	if dt.Spec.ClaimRef == dtc.Name {
		return nil
	}
	dt.Spec.ClaimRef = dtc.Name
	// Update (optimistic concurrency) so that two claims cannot take the same target.
	return r.Client.Update(ctx, dt)
}

// askProvisioner annotates the claim for its class's provisioner, if the class has one.
func (r *ClaimReconciler) askProvisioner(ctx context.Context, dtc *appstudio.DeploymentTargetClaim) (*note, error) {
	cls := &appstudio.DeploymentTargetClass{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: string(dtc.Spec.DeploymentTargetClassName)}, cls); err != nil {
		// No class (yet): the class watch requeues the claim when it appears.
		return nil, client.IgnoreNotFound(err)
	}
	if cls.Spec.Provisioner == "" || dtc.Annotations[appstudio.AnnTargetProvisioner] == string(cls.Spec.Provisioner) {
		return nil, nil
	}
	setAnn(dtc, appstudio.AnnTargetProvisioner, string(cls.Spec.Provisioner))
	if err := r.Client.Update(ctx, dtc); err != nil {
		return nil, err
	}
	ctrl.LoggerFrom(ctx).Info("claim marked for provisioning", "provisioner", cls.Spec.Provisioner)
	return &note{corev1.EventTypeNormal, "Provisioning", "Waiting for provisioner " + string(cls.Spec.Provisioner) + " to provision a DeploymentTarget"}, nil
}

// finalize releases or deletes the claim's target according to the class's reclaim policy,
// then removes the finalizer. A claim whose class is gone retains its target (nothing lost).
func (r *ClaimReconciler) finalize(ctx context.Context, dtc *appstudio.DeploymentTargetClaim) error {
	if !controllerutil.ContainsFinalizer(dtc, appstudio.FinalizerBinder) {
		return nil
	}
	if dtc.Spec.TargetName != "" {
		dt := &appstudio.DeploymentTarget{}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: dtc.Namespace, Name: dtc.Spec.TargetName}, dt)
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		if err == nil && dt.Spec.ClaimRef == dtc.Name && dt.DeletionTimestamp.IsZero() {
			policy := appstudio.ReclaimPolicyRetain
			cls := &appstudio.DeploymentTargetClass{}
			if cerr := r.Client.Get(ctx, client.ObjectKey{Name: string(dt.Spec.DeploymentTargetClassName)}, cls); cerr == nil {
				policy = cls.Spec.ReclaimPolicy
			} else if !apierrors.IsNotFound(cerr) {
				return cerr
			}
			if policy == appstudio.ReclaimPolicyDelete {
				if err := r.Client.Delete(ctx, dt, client.Preconditions{UID: &dt.UID}); err != nil && !apierrors.IsNotFound(err) {
					return err
				}
				ctrl.LoggerFrom(ctx).Info("deleted target of deleted claim", "deploymentTarget", dt.Name)
			} else {
				// Retain: the target keeps claimRef (as a PV keeps claimRef) and TargetReconciler
				// marks it Released once the claim is gone.
				ctrl.LoggerFrom(ctx).Info("retained target of deleted claim", "deploymentTarget", dt.Name)
			}
		}
	}
	controllerutil.RemoveFinalizer(dtc, appstudio.FinalizerBinder)
	return client.IgnoreNotFound(r.Client.Update(ctx, dtc))
}

func setAnn(o client.Object, k, v string) bool {
	a := o.GetAnnotations()
	if a[k] == v {
		return false
	}
	if a == nil {
		a = map[string]string{}
	}
	a[k] = v
	o.SetAnnotations(a)
	return true
}
