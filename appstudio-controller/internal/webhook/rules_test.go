package webhook_test

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/appstudio-controller/internal/webhook"
)

func TestValidateEnvironmentIngressDomains(t *testing.T) {
	const k8s, openshift = appstudio.ConfigurationClusterTypeKubernetes, appstudio.ConfigurationClusterTypeOpenShift
	tests := []struct {
		name        string
		clusterType appstudio.ConfigurationClusterType
		domain      string
		want        string // substring of the error; "": valid
	}{
		{"a single label", k8s, "localhost", ""},
		{"digits and hyphens", k8s, "apps-1.cluster-02.example.com", ""},
		// Hosts are made by prefixing the domain: a trailing dot would give "host..domain".
		{"a trailing dot", k8s, "apps.example.com.", `ingressDomain "apps.example.com." is not a DNS name`},
		{"upper case", openshift, "Apps.Example.com", `ingressDomain "Apps.Example.com" is not a DNS name`},
		{"a label starting with a hyphen", k8s, "apps.-x.example.com", `ingressDomain "apps.-x.example.com" is not a DNS name`},
		{"a scheme", k8s, "https://apps.example.com", `ingressDomain "https://apps.example.com" is not a DNS name`},
		// An OpenShift cluster's ingress domain can be looked up: it may be left out.
		{"OpenShift without a domain", openshift, "", ""},
		{"no cluster type, no domain", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			env := environment("ns", "staging", tt.clusterType, tt.domain)
			if tt.clusterType == "" {
				env.Spec.UnstableConfigurationFields = &appstudio.UnstableEnvironmentConfiguration{}
			}
			err := webhook.ValidateEnvironment(env)
			if tt.want == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tt.want)))
		})
	}
}

// Every broken rule is listed in one message, so that the user fixes them in one go.
func TestValidateEnvironmentListsEveryProblem(t *testing.T) {
	g := NewWithT(t)
	env := environment("ns", strings.Repeat("e", 70), appstudio.ConfigurationClusterTypeOpenShift, "Bad_Domain")
	err := webhook.ValidateEnvironment(env)
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(HavePrefix(`environment "` + strings.Repeat("e", 70) + `" is invalid: metadata.name is 70 characters long, at most 63 are allowed`))
	g.Expect(err.Error()).To(ContainSubstring(`; spec.unstableConfigurationFields.kubernetesCredentials.ingressDomain "Bad_Domain" is not a DNS name`))
}

// The pair (application, environment) unchanged: the update is allowed without looking at the
// other bindings (a Reader that is never used), so that colliding bindings stay updatable.
func TestValidateUpdateWithoutAChangeOfPairReadsNothing(t *testing.T) {
	g := NewWithT(t)
	v := &webhook.BindingValidator{Reader: nil}
	old := binding("ns", "b", "app-a", "staging")
	promoted := old.DeepCopy()
	promoted.Spec.Snapshot = "snapshot-2"
	promoted.Labels = map[string]string{"team": "a"}
	_, err := v.ValidateUpdate(context.Background(), old, promoted)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = v.ValidateDelete(context.Background(), old)
	g.Expect(err).NotTo(HaveOccurred())
}

func TestEnvironmentValidatorAllowsDeletion(t *testing.T) {
	// Even an invalid Environment can be deleted.
	_, err := webhook.EnvironmentValidator{}.ValidateDelete(context.Background(),
		environment("ns", strings.Repeat("e", 64), appstudio.ConfigurationClusterTypeKubernetes, ""))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
}
