// Package webhook serves the backend's validating admission webhooks: the rules of package
// validation, so bad input is refused with a clear message before it is stored.
package webhook

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend/internal/validation"
)

// Path of the GitOpsDeployment webhook (as controller-runtime derives it).
const GitOpsDeploymentPath = "/validate-managed-gitops-redhat-com-v1alpha1-gitopsdeployment"

// +kubebuilder:webhook:path=/validate-managed-gitops-redhat-com-v1alpha1-gitopsdeployment,mutating=false,failurePolicy=fail,sideEffects=None,groups=managed-gitops.redhat.com,resources=gitopsdeployments,verbs=create;update,versions=v1alpha1,name=vgitopsdeployment.managed-gitops.redhat.com,admissionReviewVersions=v1,timeoutSeconds=10

// Setup registers the webhooks with the manager's webhook server.
func Setup(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &v1.GitOpsDeployment{}).WithValidator(gitOpsDeploymentValidator{}).Complete()
}

type gitOpsDeploymentValidator struct{}

var _ admission.Validator[*v1.GitOpsDeployment] = gitOpsDeploymentValidator{}

func (gitOpsDeploymentValidator) ValidateCreate(_ context.Context, depl *v1.GitOpsDeployment) (admission.Warnings, error) {
	return nil, validation.GitOpsDeploymentAdmission(depl)
}

func (gitOpsDeploymentValidator) ValidateUpdate(_ context.Context, _, depl *v1.GitOpsDeployment) (admission.Warnings, error) {
	return nil, validation.GitOpsDeploymentAdmission(depl)
}

func (gitOpsDeploymentValidator) ValidateDelete(context.Context, *v1.GitOpsDeployment) (admission.Warnings, error) {
	return nil, nil
}
