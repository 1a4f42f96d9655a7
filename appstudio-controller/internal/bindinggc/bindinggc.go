// Package bindinggc deletes SnapshotEnvironmentBindings whose AppStudio Application
// (spec.application, appstudio.redhat.com/v1alpha1 Application, created by the Application
// Service) has not existed for longer than a grace period. The binding's GitOpsDeployments
// go with it through their owner references.
//
// The service neither defines a Go type for Application nor ships its CRD: Applications are
// read and watched as metadata only (metav1.PartialObjectMetadata).
//
// "Has not existed for" is measured across restarts: the first time the controller finds the
// Application missing it records the time in the binding's MissingSinceAnnotation, and it
// deletes the binding once the grace period has passed since then. When the Application
// exists again, the annotation is removed.
package bindinggc

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/appstudio-controller/internal/indexes"
	"github.com/gitops-service/gitops-service/backend-shared/manageropts"
)

const (
	// Name is the controller's name.
	Name = "binding-application-gc"
	// MissingSinceAnnotation holds, on a binding, the time (RFC 3339) at which its
	// Application was first found missing.
	MissingSinceAnnotation = "appstudio.redhat.com/application-missing-since"
	// ReasonApplicationGone is the reason of the Warning event recorded on a binding before
	// it is deleted.
	ReasonApplicationGone = "ApplicationGone"
	// DefaultGrace is how long an Application may be missing before its bindings are deleted.
	DefaultGrace = 3 * time.Minute
)

// ApplicationGVK is the AppStudio Application kind named by a binding's spec.application.
var ApplicationGVK = schema.GroupVersionKind{Group: appstudio.GroupVersion.Group, Version: "v1alpha1", Kind: "Application"}

// Reconciler deletes bindings whose Application has been missing for longer than Grace.
type Reconciler struct {
	// Client reads through the manager's cache; bindings must be indexed by indexes.Application.
	Client client.Client
	// Reader, when set, confirms with a live read that the Application is missing before a
	// binding is deleted (the cache may lag behind an Application just re-created).
	Reader   client.Reader
	Recorder record.EventRecorder
	// Grace is how long the Application must be missing; it must be positive.
	Grace                   time.Duration
	MaxConcurrentReconciles int
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
}

// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=applications,verbs=get;list;watch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=snapshotenvironmentbindings,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// SetupWithManager registers the controller: bindings are reconciled when they change and
// when an Application of their namespace with their spec.application changes (created,
// deleted).
func (r *Reconciler) SetupWithManager(_ context.Context, mgr ctrl.Manager) error {
	if r.Grace <= 0 {
		return fmt.Errorf("%s: the grace period must be positive, got %s", Name, r.Grace)
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&appstudio.SnapshotEnvironmentBinding{}).
		Watches(newApplication(), handler.EnqueueRequestsFromMapFunc(r.bindingsOf), builder.OnlyMetadata).
		WithOptions(manageropts.ControllerOptions(r.MaxConcurrentReconciles)).
		Named(Name).
		Complete(r)
}

func newApplication() *metav1.PartialObjectMetadata {
	app := &metav1.PartialObjectMetadata{}
	app.SetGroupVersionKind(ApplicationGVK)
	return app
}

// bindingsOf requeues the bindings of an Application's namespace whose spec.application is
// its name.
func (r *Reconciler) bindingsOf(ctx context.Context, o client.Object) []reconcile.Request {
	list := &appstudio.SnapshotEnvironmentBindingList{}
	if err := r.Client.List(ctx, list, client.InNamespace(o.GetNamespace()), client.MatchingFields{indexes.Application: o.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing bindings of application", "application", o.GetName())
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, b := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: b.Namespace, Name: b.Name}})
	}
	return reqs
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// applicationExists reports whether the binding's Application exists, read through reader.
func applicationExists(ctx context.Context, reader client.Reader, b *appstudio.SnapshotEnvironmentBinding) (bool, error) {
	err := reader.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: b.Spec.Application}, newApplication())
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err):
		return false, nil
	default:
		return false, err
	}
}

// Reconcile records when the binding's Application went missing, clears that record when it
// is back, and deletes the binding once it has been missing for Grace.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	b := &appstudio.SnapshotEnvironmentBinding{}
	if err := r.Client.Get(ctx, req.NamespacedName, b); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !b.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	exists, err := applicationExists(ctx, r.Client, b)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("reading application %q: %w", b.Spec.Application, err)
	}
	value, annotated := b.Annotations[MissingSinceAnnotation]
	if exists {
		if annotated {
			return ctrl.Result{}, r.annotate(ctx, b, nil)
		}
		return ctrl.Result{}, nil
	}

	now := r.now()
	since, perr := time.Parse(time.RFC3339, value)
	// Missing, unparsable, or in the future (hand-written, or another replica's clock):
	// the Application is missing since now.
	if !annotated || perr != nil || since.After(now) {
		stamp := now.UTC().Format(time.RFC3339)
		if err := r.annotate(ctx, b, &stamp); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: r.Grace}, nil
	}
	if missing := now.Sub(since); missing < r.Grace {
		return ctrl.Result{RequeueAfter: r.Grace - missing}, nil
	}

	if r.Reader != nil {
		live, err := applicationExists(ctx, r.Reader, b)
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("reading application %q: %w", b.Spec.Application, err)
		}
		if live {
			// The cache has not seen it yet; its watch event will clear the annotation.
			return ctrl.Result{RequeueAfter: time.Second}, nil
		}
	}
	if r.Recorder != nil {
		r.Recorder.Eventf(b, corev1.EventTypeWarning, ReasonApplicationGone,
			"Application %q has not existed for more than %s (missing since %s): deleting the binding",
			b.Spec.Application, r.Grace, since.UTC().Format(time.RFC3339))
	}
	// The preconditions make sure the binding deleted is the one just examined.
	uid, rv := b.UID, b.ResourceVersion
	err = r.Client.Delete(ctx, b, client.Preconditions{UID: &uid, ResourceVersion: &rv})
	switch {
	case apierrors.IsNotFound(err):
		return ctrl.Result{}, nil
	case apierrors.IsConflict(err):
		// Changed since it was read: look again.
		return ctrl.Result{RequeueAfter: time.Second}, nil
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("deleting binding: %w", err)
	}
	ctrl.LoggerFrom(ctx).Info("deleted binding: its application is gone",
		"application", b.Spec.Application, "missingSince", since, "grace", r.Grace)
	return ctrl.Result{}, nil
}

// annotate sets (value non-nil) or removes (nil) the binding's MissingSinceAnnotation.
func (r *Reconciler) annotate(ctx context.Context, b *appstudio.SnapshotEnvironmentBinding, value *string) error {
	orig := b.DeepCopy()
	if value != nil {
		if b.Annotations == nil {
			b.Annotations = map[string]string{}
		}
		b.Annotations[MissingSinceAnnotation] = *value
	} else {
		delete(b.Annotations, MissingSinceAnnotation)
	}
	if err := r.Client.Patch(ctx, b, client.MergeFrom(orig)); err != nil {
		return client.IgnoreNotFound(err)
	}
	return nil
}
