package webhook_test

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/appstudio-controller/internal/webhook"
)

func environment(namespace, name string, clusterType appstudio.ConfigurationClusterType, ingressDomain string) *appstudio.Environment {
	env := &appstudio.Environment{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if clusterType != "" {
		env.Spec.UnstableConfigurationFields = &appstudio.UnstableEnvironmentConfiguration{
			ClusterType: clusterType,
			KubernetesClusterCredentials: appstudio.KubernetesClusterCredentials{
				TargetNamespace: "team-a", APIURL: "https://api.example.com:6443", ClusterCredentialsSecret: "cluster-a",
				IngressDomain: ingressDomain,
			},
		}
	}
	return env
}

const ingressRequired = "spec.unstableConfigurationFields.kubernetesCredentials.ingressDomain is required when spec.unstableConfigurationFields.clusterType is Kubernetes"

func TestValidateEnvironment(t *testing.T) {
	name63, name64 := strings.Repeat("e", 63), strings.Repeat("e", 64)
	tests := []struct {
		name string
		env  *appstudio.Environment
		want []string // substrings of the error; none: valid
	}{
		{"own namespace", environment("ns", "staging", "", ""), nil},
		{"Kubernetes with ingressDomain", environment("ns", "staging", appstudio.ConfigurationClusterTypeKubernetes, "apps.example.com"), nil},
		{"Kubernetes without ingressDomain", environment("ns", "staging", appstudio.ConfigurationClusterTypeKubernetes, ""), []string{`environment "staging" is invalid`, ingressRequired}},
		{"OpenShift without ingressDomain", environment("ns", "staging", appstudio.ConfigurationClusterTypeOpenShift, ""), nil},
		{"name of 63 characters", environment("ns", name63, "", ""), nil},
		{"name of 64 characters", environment("ns", name64, "", ""), []string{"metadata.name is 64 characters long, at most 63 are allowed"}},
		{"both", environment("ns", name64, appstudio.ConfigurationClusterTypeKubernetes, ""), []string{"metadata.name is 64 characters long", ingressRequired}},
		{"ingressDomain not a DNS name", environment("ns", "staging", appstudio.ConfigurationClusterTypeKubernetes, "Apps_example.com"),
			[]string{`spec.unstableConfigurationFields.kubernetesCredentials.ingressDomain "Apps_example.com" is not a DNS name: a lowercase RFC 1123 subdomain`}},
		{"ingressDomain with a label past 63 characters", environment("ns", "staging", appstudio.ConfigurationClusterTypeOpenShift, name64+".example.com"),
			[]string{`is not a DNS name: label "` + name64 + `": must be no more than 63 characters`}},
		{"ingressDomain of 63-character labels", environment("ns", "staging", appstudio.ConfigurationClusterTypeKubernetes, name63+"."+name63+".example.com"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := webhook.EnvironmentValidator{}.ValidateCreate(context.Background(), tt.env)
			if tt.want == nil {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(HaveOccurred())
			for _, s := range tt.want {
				g.Expect(err.Error()).To(ContainSubstring(s))
			}
		})
	}
}

func TestValidateEnvironmentUpdate(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	v := webhook.EnvironmentValidator{}
	valid := environment("ns", "staging", appstudio.ConfigurationClusterTypeKubernetes, "apps.example.com")
	invalid := environment("ns", "staging", appstudio.ConfigurationClusterTypeKubernetes, "")
	// Breaking a rule is refused; an Environment stored before the rule stays updatable.
	_, err := v.ValidateUpdate(ctx, valid, invalid)
	g.Expect(err).To(MatchError(ContainSubstring(ingressRequired)))
	_, err = v.ValidateUpdate(ctx, invalid, invalid.DeepCopy())
	g.Expect(err).NotTo(HaveOccurred())
	_, err = v.ValidateUpdate(ctx, invalid, valid)
	g.Expect(err).NotTo(HaveOccurred())
}

func TestWebhookRefusesInvalidEnvironment(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(ctx, g)
	// The webhook may need a moment to serve after the manager starts (failurePolicy Fail).
	g.Eventually(func() error {
		return cp.Client.Create(ctx, environment(ns, "staging", appstudio.ConfigurationClusterTypeKubernetes, "apps.example.com"))
	}, "20s", "100ms").Should(Succeed())
	err := cp.Client.Create(ctx, environment(ns, "dev", appstudio.ConfigurationClusterTypeKubernetes, ""))
	g.Expect(err).To(MatchError(And(ContainSubstring("admission webhook"), ContainSubstring(`environment "dev" is invalid: `+ingressRequired))))
	err = cp.Client.Create(ctx, environment(ns, strings.Repeat("e", 64), "", ""))
	g.Expect(err).To(MatchError(ContainSubstring("metadata.name is 64 characters long, at most 63 are allowed")))
}
