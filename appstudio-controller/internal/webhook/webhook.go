// Package webhook serves the appstudio-controller's validating admission webhooks: the rules
// on AppStudio resources that a CRD schema cannot express, so that bad input is refused with
// a clear message before it is stored.
//
// SnapshotEnvironmentBinding: at most one binding per (application, environment) in a
// namespace (api.md: "There should not exist multiple SnapshotEnvironmentBinding CRs in a
// Namespace that share the same Application and Environment value"). Duplicate component
// names in spec.components need no webhook: the list is a map keyed by name
// (+listType=map), which the API server already enforces.
//
// Environment: see EnvironmentValidator.
package webhook

import (
	"context"
	"fmt"
	"sort"
	"strings"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/appstudio-controller/internal/indexes"
)

// BindingPath is the path of the SnapshotEnvironmentBinding webhook (as controller-runtime
// derives it).
const BindingPath = "/validate-appstudio-redhat-com-v1alpha1-snapshotenvironmentbinding"

// +kubebuilder:webhook:path=/validate-appstudio-redhat-com-v1alpha1-snapshotenvironmentbinding,mutating=false,failurePolicy=fail,sideEffects=None,groups=appstudio.redhat.com,resources=snapshotenvironmentbindings,verbs=create;update,versions=v1alpha1,name=vsnapshotenvironmentbinding.appstudio.redhat.com,admissionReviewVersions=v1,timeoutSeconds=10

// Setup registers the webhooks with the manager's webhook server. The binding webhook reads
// through the manager's cache, by indexes.BindingApplicationEnvironment.
//
// Why the cache (with an index) rather than a live LIST per admission request: the webhook
// runs on every create in the tenant's namespace, and a namespace may hold many bindings; the
// index makes the check a map lookup with no API round trip. The cache lags the API server by
// the watch latency, so two bindings created back to back within that window can both pass —
// but a live LIST would not close the race either (two concurrent creates both see neither),
// since a validating webhook cannot take a lock. It is the first line of defence against a
// mistaken second binding, not a uniqueness guarantee.
func Setup(ctx context.Context, mgr ctrl.Manager) error {
	if err := ctrl.NewWebhookManagedBy(mgr, &appstudio.SnapshotEnvironmentBinding{}).
		WithValidator(&BindingValidator{Reader: mgr.GetClient()}).Complete(); err != nil {
		return err
	}
	return ctrl.NewWebhookManagedBy(mgr, &appstudio.Environment{}).WithValidator(EnvironmentValidator{}).Complete()
}

// BindingValidator validates SnapshotEnvironmentBindings. Reader must support listing
// bindings with client.MatchingFields{indexes.BindingApplicationEnvironment: ...}.
type BindingValidator struct {
	Reader client.Reader
}

var _ admission.Validator[*appstudio.SnapshotEnvironmentBinding] = &BindingValidator{}

// ValidateCreate refuses a binding whose (application, environment) another binding of the
// namespace already has.
func (v *BindingValidator) ValidateCreate(ctx context.Context, b *appstudio.SnapshotEnvironmentBinding) (admission.Warnings, error) {
	return nil, v.checkUnique(ctx, b)
}

// ValidateUpdate refuses an update that makes the binding collide with another one. Only a
// change of (application, environment) is checked: both are immutable today (CEL rules, which
// the API server applies before this webhook), and two bindings that already collide (created
// while the webhook was not serving) must stay updatable — for a promotion, or to remove a
// finalizer — until one of them is deleted.
func (v *BindingValidator) ValidateUpdate(ctx context.Context, old, b *appstudio.SnapshotEnvironmentBinding) (admission.Warnings, error) {
	if old.Spec.Application == b.Spec.Application && old.Spec.Environment == b.Spec.Environment {
		return nil, nil
	}
	return nil, v.checkUnique(ctx, b)
}

// ValidateDelete allows every deletion.
func (v *BindingValidator) ValidateDelete(context.Context, *appstudio.SnapshotEnvironmentBinding) (admission.Warnings, error) {
	return nil, nil
}

// checkUnique returns an error naming the other bindings of b's namespace that have b's
// application and environment. A binding being deleted does not count (its deletion is the
// user's intent; deleting and re-creating must work while finalizers run), nor does one of
// b's own name (on create it can only be a deleted one the cache still holds).
func (v *BindingValidator) checkUnique(ctx context.Context, b *appstudio.SnapshotEnvironmentBinding) error {
	list := &appstudio.SnapshotEnvironmentBindingList{}
	if err := v.Reader.List(ctx, list, client.InNamespace(b.Namespace),
		client.MatchingFields{indexes.BindingApplicationEnvironment: indexes.ApplicationEnvironmentKey(b.Spec.Application, b.Spec.Environment)}); err != nil {
		return fmt.Errorf("listing the SnapshotEnvironmentBindings of namespace %q: %w", b.Namespace, err)
	}
	var others []string
	for _, o := range list.Items {
		if o.Name == b.Name || !o.DeletionTimestamp.IsZero() ||
			o.Spec.Application != b.Spec.Application || o.Spec.Environment != b.Spec.Environment {
			continue
		}
		others = append(others, fmt.Sprintf("%q", o.Name))
	}
	if len(others) == 0 {
		return nil
	}
	sort.Strings(others)
	subject := "SnapshotEnvironmentBinding " + others[0] + " already binds"
	if len(others) > 1 {
		subject = "SnapshotEnvironmentBindings " + strings.Join(others, ", ") + " already bind"
	}
	return fmt.Errorf("%s application %q to environment %q; update it instead of creating another",
		subject, b.Spec.Application, b.Spec.Environment)
}
