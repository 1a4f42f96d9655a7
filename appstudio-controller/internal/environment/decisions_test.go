package environment

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/outcome"
)

func newEnv(name string, creds *appstudio.KubernetesClusterCredentials, claim string) *appstudio.Environment {
	env := &appstudio.Environment{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: name}}
	if creds != nil {
		env.Spec.UnstableConfigurationFields = &appstudio.UnstableEnvironmentConfiguration{KubernetesClusterCredentials: *creds}
	}
	if claim != "" {
		env.Spec.Configuration.Target = &appstudio.EnvironmentTarget{DeploymentTargetClaim: appstudio.DeploymentTargetClaimConfig{ClaimName: claim}}
	}
	return env
}

func TestCredentialsOfAnEnvironment(t *testing.T) {
	full := &appstudio.KubernetesClusterCredentials{APIURL: "https://api.example.com:6443", ClusterCredentialsSecret: "cluster-a", TargetNamespace: "team-a"}
	tests := []struct {
		name string
		env  *appstudio.Environment
		want *appstudio.KubernetesClusterCredentials
	}{
		{"no unstable fields: its own namespace", newEnv("dev", nil, ""), nil},
		// Only the cluster type, or a target namespace, names no cluster.
		{"unstable fields without a cluster", &appstudio.Environment{Spec: appstudio.EnvironmentSpec{
			UnstableConfigurationFields: &appstudio.UnstableEnvironmentConfiguration{ClusterType: appstudio.ConfigurationClusterTypeOpenShift,
				KubernetesClusterCredentials: appstudio.KubernetesClusterCredentials{TargetNamespace: "team-a"}}}}, nil},
		{"a remote cluster", newEnv("prod", full, ""), full},
		// Half of the credentials still counts (the reconcile reports what is missing).
		{"only the API URL", newEnv("prod", &appstudio.KubernetesClusterCredentials{APIURL: "https://api.example.com"}, ""),
			&appstudio.KubernetesClusterCredentials{APIURL: "https://api.example.com"}},
		{"only the Secret", newEnv("prod", &appstudio.KubernetesClusterCredentials{ClusterCredentialsSecret: "s"}, ""),
			&appstudio.KubernetesClusterCredentials{ClusterCredentialsSecret: "s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(Credentials(tt.env)).To(Equal(tt.want))
		})
	}
}

func TestClaimNameOfAnEnvironment(t *testing.T) {
	g := NewWithT(t)
	g.Expect(ClaimName(newEnv("dev", nil, ""))).To(BeEmpty())
	g.Expect(ClaimName(newEnv("prod", nil, "staging-dtc"))).To(Equal("staging-dtc"))
}

func TestGeneratedNames(t *testing.T) {
	g := NewWithT(t)
	// NOTES.md: Environment -> GitOpsDeploymentManagedEnvironment named managed-environment-<environment>.
	g.Expect(ManagedEnvironmentName("staging")).To(Equal("managed-environment-staging"))
	g.Expect(CopiedSecretName("staging")).To(Equal("managed-environment-secret-staging"))
	// The two generated objects are of different kinds, but must not be confused in events.
	g.Expect(kindOf(&corev1.Secret{})).To(Equal("Secret"))
	g.Expect(kindOf(&v1.GitOpsDeploymentManagedEnvironment{})).To(Equal("GitOpsDeploymentManagedEnvironment"))
}

// An Environment that cannot be generated is refused before anything is read or written:
// these reconciles need no API server (the Reconciler has no client).
func TestReconcileRefusesAnInvalidEnvironment(t *testing.T) {
	creds := &appstudio.KubernetesClusterCredentials{APIURL: "https://api.example.com:6443", ClusterCredentialsSecret: "cluster-a", TargetNamespace: "team-a"}
	tests := []struct {
		name    string
		env     *appstudio.Environment
		wantMsg string
	}{
		{"a claim and cluster credentials", newEnv("prod", creds, "prod-dtc"),
			"Environment is invalid: it cannot set both spec.configuration.target.deploymentTargetClaim and spec.unstableConfigurationFields.kubernetesCredentials; remove one of them"},
		{"credentials without a Secret", newEnv("prod", &appstudio.KubernetesClusterCredentials{APIURL: "https://api.example.com:6443", TargetNamespace: "team-a"}, ""),
			"spec.unstableConfigurationFields.kubernetesCredentials needs both apiURL and clusterCredentialsSecret"},
		{"credentials without an API URL", newEnv("prod", &appstudio.KubernetesClusterCredentials{ClusterCredentialsSecret: "cluster-a", TargetNamespace: "team-a"}, ""),
			"spec.unstableConfigurationFields.kubernetesCredentials needs both apiURL and clusterCredentialsSecret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			progress, err := (&Reconciler{}).reconcile(context.Background(), tt.env)
			e := outcome.As(err)
			g.Expect(e).NotTo(BeNil())
			// A user error: Stalled until the user changes the Environment.
			g.Expect(e.Kind).To(Equal(outcome.User))
			g.Expect(e.Reason).To(Equal(appstudio.EnvironmentReasonInvalidEnvironment))
			g.Expect(e.Message).To(Equal(tt.wantMsg))
			g.Expect(progress).To(Equal(outcome.Progress{}))
		})
	}
}

func TestRecordErrorOfAnEnvironment(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"resolved", nil, "Normal ErrorOccurredResolved The Environment's earlier error is resolved"},
		{"user error", outcome.StalledError(appstudio.EnvironmentReasonClaimNotFound, `DeploymentTargetClaim "prod-dtc" does not exist in namespace "tenant"`),
			`Warning DeploymentTargetClaimNotFound DeploymentTargetClaim "prod-dtc" does not exist in namespace "tenant"`},
		{"internal error", errors.New("secrets is forbidden"), "Warning ErrorOccurred " + outcome.InternalMessage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			rec := record.NewFakeRecorder(10)
			(&Reconciler{Recorder: rec}).recordError(newEnv("prod", nil, ""), tt.err)
			g.Expect(rec.Events).To(HaveLen(1))
			g.Expect(<-rec.Events).To(Equal(tt.want))
		})
	}
	// Without a recorder there is nothing to record.
	(&Reconciler{}).recordError(newEnv("prod", nil, ""), errors.New("boom"))
}

// connection only trusts a managed environment's status for its current spec.
func TestConnectionEdgeCases(t *testing.T) {
	cond := func(typ string, status metav1.ConditionStatus) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: "R", Message: "m"}
	}
	tests := []struct {
		name       string
		gen, seen  int64
		conds      []metav1.Condition
		wantReason string
	}{
		// Generation 0: not stored yet (a zero observedGeneration matches it by accident).
		{"not stored yet", 0, 0, []metav1.Condition{cond(outcome.TypeReady, metav1.ConditionTrue)}, appstudio.EnvironmentReasonConnectingCluster},
		// Stalled needs Ready (for its message) at the current generation.
		{"stalled without Ready", 1, 1, []metav1.Condition{cond(outcome.TypeStalled, metav1.ConditionTrue)}, appstudio.EnvironmentReasonConnectingCluster},
		{"ready unknown", 1, 1, []metav1.Condition{cond(outcome.TypeReady, metav1.ConditionUnknown)}, appstudio.EnvironmentReasonConnectingCluster},
		{"stalled False", 1, 1, []metav1.Condition{cond(outcome.TypeReady, metav1.ConditionFalse), cond(outcome.TypeStalled, metav1.ConditionFalse)},
			appstudio.EnvironmentReasonConnectingCluster},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			me := &v1.GitOpsDeploymentManagedEnvironment{ObjectMeta: metav1.ObjectMeta{Name: "managed-environment-prod", Generation: tt.gen}}
			me.Status.ObservedGeneration, me.Status.Conditions = tt.seen, tt.conds
			p := connection(me)
			g := NewWithT(t)
			g.Expect(p.Reason).To(Equal(tt.wantReason))
			g.Expect(p.Ready).To(Equal(metav1.ConditionFalse))
			g.Expect(p.Message).To(Equal("Waiting for the GitOps Service to connect GitOpsDeploymentManagedEnvironment managed-environment-prod to the cluster"))
		})
	}
}
