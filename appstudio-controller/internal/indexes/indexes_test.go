package indexes

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

func TestEachIndexReadsItsField(t *testing.T) {
	run := &appstudio.PromotionRun{Spec: appstudio.PromotionRunSpec{Application: "shop"}}
	binding := &appstudio.SnapshotEnvironmentBinding{Spec: appstudio.SnapshotEnvironmentBindingSpec{Application: "shop", Environment: "staging"}}
	snapshot := &appstudio.Snapshot{Spec: appstudio.SnapshotSpec{Application: "shop"}}
	claimed := &appstudio.Environment{Spec: appstudio.EnvironmentSpec{Configuration: appstudio.EnvironmentConfiguration{
		Target: &appstudio.EnvironmentTarget{DeploymentTargetClaim: appstudio.DeploymentTargetClaimConfig{ClaimName: "prod-dtc"}}}}}
	withCredentials := &appstudio.Environment{Spec: appstudio.EnvironmentSpec{UnstableConfigurationFields: &appstudio.UnstableEnvironmentConfiguration{
		KubernetesClusterCredentials: appstudio.KubernetesClusterCredentials{ClusterCredentialsSecret: "cluster-creds"}}}}
	tests := []struct {
		name  string
		obj   client.Object
		field string
		want  []string
	}{
		// Runs, bindings and Snapshots of an Application are found together.
		{"runs by application", run, Application, []string{"shop"}},
		{"bindings by application", binding, Application, []string{"shop"}},
		{"snapshots by application", snapshot, Application, []string{"shop"}},
		// An Environment's change reaches its bindings; the webhook finds a second binding
		// of the same pair.
		{"bindings by environment", binding, BindingEnvironment, []string{"staging"}},
		{"bindings by application and environment", binding, BindingApplicationEnvironment, []string{"shop/staging"}},
		// A claim's or a Secret's change reaches the Environments that use it; an
		// Environment that uses neither is in neither index.
		{"environments by claim", claimed, EnvironmentClaim, []string{"prod-dtc"}},
		{"environments without a claim", withCredentials, EnvironmentClaim, nil},
		{"environments by credentials Secret", withCredentials, EnvironmentSecret, []string{"cluster-creds"}},
		{"environments without credentials", claimed, EnvironmentSecret, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var found bool
			for _, i := range all {
				if i.field == tt.field && fmt.Sprintf("%T", i.obj) == fmt.Sprintf("%T", tt.obj) {
					found = true
					g.Expect(i.extract(tt.obj)).To(Equal(tt.want))
				}
			}
			g.Expect(found).To(BeTrue(), "the index is registered")
		})
	}
	NewWithT(t).Expect(all).To(HaveLen(7), "every index has a case above")
}

func TestApplicationEnvironmentKey(t *testing.T) {
	g := NewWithT(t)
	g.Expect(ApplicationEnvironmentKey("app-a", "staging")).To(Equal("app-a/staging"))
	// Documented: keys may coincide; lookups compare the fields afterwards.
	g.Expect(ApplicationEnvironmentKey("a/b", "c")).To(Equal(ApplicationEnvironmentKey("a", "b/c")))
}
