package webhook

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

// EnvironmentPath is the path of the Environment webhook (as controller-runtime derives it).
const EnvironmentPath = "/validate-appstudio-redhat-com-v1alpha1-environment"

// MaxEnvironmentNameLength is the longest Environment name: the name is the value of the
// appstudio.openshift.io/environment label of the GitOpsDeployments generated for it, and a
// label value (like a DNS label) is at most 63 characters.
const MaxEnvironmentNameLength = validation.LabelValueMaxLength

// +kubebuilder:webhook:path=/validate-appstudio-redhat-com-v1alpha1-environment,mutating=false,failurePolicy=fail,sideEffects=None,groups=appstudio.redhat.com,resources=environments,verbs=create;update,versions=v1alpha1,name=venvironment.appstudio.redhat.com,admissionReviewVersions=v1,timeoutSeconds=10

// EnvironmentValidator validates Environments: a name of at most MaxEnvironmentNameLength
// characters, and, with spec.unstableConfigurationFields.clusterType Kubernetes, an
// ingressDomain in kubernetesCredentials (a generic Kubernetes cluster has no default ingress
// domain that could be looked up, as an OpenShift cluster's can).
type EnvironmentValidator struct{}

var _ admission.Validator[*appstudio.Environment] = EnvironmentValidator{}

// ValidateCreate applies every rule.
func (EnvironmentValidator) ValidateCreate(_ context.Context, env *appstudio.Environment) (admission.Warnings, error) {
	return nil, ValidateEnvironment(env)
}

// ValidateUpdate refuses an update that breaks a rule the Environment kept before, so that an
// Environment stored before a rule existed stays updatable (to remove a finalizer, or to fix it).
func (EnvironmentValidator) ValidateUpdate(_ context.Context, old, env *appstudio.Environment) (admission.Warnings, error) {
	if ValidateEnvironment(old) != nil {
		return nil, nil
	}
	return nil, ValidateEnvironment(env)
}

// ValidateDelete allows every deletion.
func (EnvironmentValidator) ValidateDelete(context.Context, *appstudio.Environment) (admission.Warnings, error) {
	return nil, nil
}

// ValidateEnvironment returns an error listing every rule env breaks, or nil.
func ValidateEnvironment(env *appstudio.Environment) error {
	var problems []string
	if n := len(env.Name); n > MaxEnvironmentNameLength {
		problems = append(problems, fmt.Sprintf("metadata.name is %d characters long, at most %d are allowed "+
			"(it is the value of the %s label of the GitOpsDeployments generated for the Environment)",
			n, MaxEnvironmentNameLength, appstudio.LabelEnvironment))
	}
	if cfg := env.Spec.UnstableConfigurationFields; cfg != nil && cfg.ClusterType == appstudio.ConfigurationClusterTypeKubernetes &&
		cfg.KubernetesClusterCredentials.IngressDomain == "" {
		problems = append(problems, "spec.unstableConfigurationFields.kubernetesCredentials.ingressDomain is required when "+
			"spec.unstableConfigurationFields.clusterType is Kubernetes (for example apps.my-cluster.example.com)")
	}
	if cfg := env.Spec.UnstableConfigurationFields; cfg != nil && cfg.KubernetesClusterCredentials.IngressDomain != "" {
		if msg := dnsNameProblem(cfg.KubernetesClusterCredentials.IngressDomain); msg != "" {
			problems = append(problems, fmt.Sprintf("spec.unstableConfigurationFields.kubernetesCredentials.ingressDomain %q is not a DNS name: %s",
				cfg.KubernetesClusterCredentials.IngressDomain, msg))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("environment %q is invalid: %s", env.Name, strings.Join(problems, "; "))
}

// dnsNameProblem says why name is not a DNS name (a DNS-1123 subdomain of labels of at most 63
// characters: hosts are made by prefixing the ingress domain), or "".
func dnsNameProblem(name string) string {
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return strings.Join(errs, "; ")
	}
	for _, label := range strings.Split(name, ".") {
		if errs := validation.IsDNS1123Label(label); len(errs) > 0 {
			return fmt.Sprintf("label %q: %s", label, strings.Join(errs, "; "))
		}
	}
	return ""
}
