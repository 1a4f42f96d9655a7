// Package validation holds the rules on the core API that the CRD schema cannot express.
// The validating webhook rejects violations at admission; the controllers apply the same
// rules again (objects written while the webhook was down, or before it existed) and show
// violations as conditions.
package validation

import (
	"slices"
	"strings"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	"github.com/gitops-service/gitops-service/backend-shared/conditions"
)

// GitOpsDeployment checks every rule on depl; the error is a conditions.UserError.
func GitOpsDeployment(depl *v1.GitOpsDeployment) error {
	path := strings.TrimSpace(depl.Spec.Source.Path)
	if path == "" || path == "/" || path == "." {
		return conditions.Userf("spec.source.path must name a directory inside the repository; %q would deploy the whole repository root, which is not supported", depl.Spec.Source.Path)
	}
	return GitOpsDeploymentAdmission(depl)
}

// GitOpsDeploymentAdmission checks the rules the webhook enforces. An unusable path is not
// among them: it is accepted and reported in the ErrorOccurred condition, as the API
// documents.
func GitOpsDeploymentAdmission(depl *v1.GitOpsDeployment) error {
	if depl.Spec.Destination.Environment == "" && depl.Spec.Destination.Namespace != "" &&
		depl.Spec.Destination.Namespace != depl.Namespace {
		return conditions.Userf("spec.destination.namespace %q: without spec.destination.environment a GitOpsDeployment can only deploy to its own namespace %q",
			depl.Spec.Destination.Namespace, depl.Namespace)
	}
	opts := SyncOptions(depl)
	for _, opt := range opts {
		if err := argocd.ValidateSyncOption(opt); err != nil {
			return conditions.Userf("spec.syncPolicy.syncOptions: %s", err.Error())
		}
	}
	if slices.Contains(opts, string(v1.SyncOptionCreateNamespaceTrue)) && slices.Contains(opts, string(v1.SyncOptionCreateNamespaceFalse)) {
		return conditions.Userf("spec.syncPolicy.syncOptions: %s and %s contradict each other; keep one of them",
			v1.SyncOptionCreateNamespaceTrue, v1.SyncOptionCreateNamespaceFalse)
	}
	return nil
}

// SyncOptions returns the sync options of depl as strings.
func SyncOptions(depl *v1.GitOpsDeployment) []string {
	if depl.Spec.SyncPolicy == nil {
		return nil
	}
	opts := make([]string, 0, len(depl.Spec.SyncPolicy.SyncOptions))
	for _, o := range depl.Spec.SyncPolicy.SyncOptions {
		opts = append(opts, string(o))
	}
	return opts
}
