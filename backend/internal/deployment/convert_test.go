package deployment

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
)

func TestConditionMessageJoinsArgoCDConditionsOfOneType(t *testing.T) {
	list := []argov1alpha1.ApplicationCondition{
		{Type: argov1alpha1.ApplicationConditionComparisonError, Message: "path does not exist"},
		{Type: "SharedResourceWarning", Message: "shared"},
		{Type: argov1alpha1.ApplicationConditionComparisonError, Message: "rpc error"},
		{Type: argov1alpha1.ApplicationConditionSyncError, Message: "apply failed"},
	}
	tests := []struct {
		name string
		list []argov1alpha1.ApplicationCondition
		typ  string
		want string
	}{
		{"several of the type, in order", list, argov1alpha1.ApplicationConditionComparisonError, "path does not exist; rpc error"},
		{"one of the type", list, argov1alpha1.ApplicationConditionSyncError, "apply failed"},
		{"none of the type", list, "OrphanedResourceWarning", ""},
		{"no conditions", nil, argov1alpha1.ApplicationConditionSyncError, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := conditionMessage(tt.list, tt.typ); got != tt.want {
				t.Errorf("conditionMessage = %q, want %q", got, tt.want)
			}
		})
	}
}

// The conditions readStatus mirrors are the two api.md documents, each with its resolved
// reason.
func TestMirroredConditionsAreTheDocumentedOnes(t *testing.T) {
	g := NewWithT(t)
	type m struct{ argo, typ, reason, resolved string }
	var got []m
	for _, c := range mirrored {
		got = append(got, m{c.argo, string(c.typ), string(c.reason), string(c.resolved)})
	}
	g.Expect(got).To(ConsistOf(
		m{"SyncError", "SyncError", "SyncError", "SyncErrorResolved"},
		m{"ComparisonError", "ComparisonError", "ComparisonError", "ComparisonErrorResolved"},
	))
}

func TestResourcesCopiesEachResource(t *testing.T) {
	tests := []struct {
		name string
		in   []argov1alpha1.ResourceStatus
		want []v1.ResourceStatus
	}{
		// Omitted from the status rather than an empty list.
		{name: "none", in: nil, want: nil},
		{name: "an empty list", in: []argov1alpha1.ResourceStatus{}, want: nil},
		{
			name: "with and without health",
			in: []argov1alpha1.ResourceStatus{
				{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "jane", Name: "web", Status: argov1alpha1.SyncStatusCodeSynced,
					Health: &argov1alpha1.HealthStatus{Status: argov1alpha1.HealthStatusDegraded, Message: "no ready replicas"}, RequiresPruning: true},
				{Version: "v1", Kind: "ConfigMap", Namespace: "jane", Name: "settings", Status: argov1alpha1.SyncStatusCodeOutOfSync},
			},
			want: []v1.ResourceStatus{
				{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "jane", Name: "web", Status: v1.SyncStatusCodeSynced,
					Health: &v1.HealthStatus{Status: v1.HealthStatusCodeDegraded, Message: "no ready replicas"}},
				{Version: "v1", Kind: "ConfigMap", Namespace: "jane", Name: "settings", Status: v1.SyncStatusCodeOutOfSync},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(resources(tt.in)).To(Equal(tt.want))
		})
	}
}

// api.md's operationState is Argo CD's: every field both shapes know survives the copy.
func TestOperationStateKeepsArgoCDFields(t *testing.T) {
	g := NewWithT(t)
	g.Expect(operationState(nil)).To(BeNil())

	started := metav1.NewTime(time.Date(2023, 8, 17, 18, 1, 26, 0, time.UTC))
	finished := metav1.NewTime(started.Add(time.Minute))
	factor := int64(2)
	in := &argov1alpha1.OperationState{
		Operation: argov1alpha1.Operation{
			Sync:        &argov1alpha1.SyncOperation{Revision: "abc", Prune: true, SyncOptions: argov1alpha1.SyncOptions{"PrunePropagationPolicy=background"}},
			InitiatedBy: argov1alpha1.OperationInitiator{Automated: true},
			Info:        []*argov1alpha1.Info{{Name: argocd.InfoSyncOperationID, Value: "run-1"}},
			Retry:       argov1alpha1.RetryStrategy{Limit: -1, Backoff: &argov1alpha1.Backoff{Duration: "5s", Factor: &factor, MaxDuration: "3m"}},
		},
		Phase:      argov1alpha1.OperationFailed,
		Message:    "one or more objects failed to apply",
		SyncResult: &argov1alpha1.SyncOperationResult{Revision: "abc", Source: argov1alpha1.ApplicationSource{RepoURL: "https://git.example/r", Path: "dev", TargetRevision: "main"}},
		StartedAt:  started,
		FinishedAt: &finished,
		RetryCount: 3,
	}
	out, err := operationState(in)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.Phase).To(Equal(v1.OperationPhaseFailed))
	g.Expect(out.Message).To(Equal("one or more objects failed to apply"))
	g.Expect(out.StartedAt.Equal(&started)).To(BeTrue())
	g.Expect(out.FinishedAt).NotTo(BeNil())
	g.Expect(out.FinishedAt.Equal(&finished)).To(BeTrue())
	g.Expect(out.RetryCount).To(Equal(int64(3)))
	g.Expect(out.Operation.InitiatedBy.Automated).To(BeTrue())
	g.Expect(out.Operation.Info).To(Equal([]v1.OperationInfo{{Name: argocd.InfoSyncOperationID, Value: "run-1"}}))
	g.Expect(out.Operation.Sync).NotTo(BeNil())
	g.Expect(out.Operation.Sync.Revision).To(Equal("abc"))
	g.Expect(out.Operation.Sync.Prune).To(BeTrue())
	g.Expect(out.Operation.Sync.SyncOptions).To(Equal([]string{"PrunePropagationPolicy=background"}))
	g.Expect(out.Operation.Retry.Limit).To(Equal(int64(-1)))
	g.Expect(out.Operation.Retry.Backoff).To(Equal(&v1.Backoff{Duration: "5s", Factor: &factor, MaxDuration: "3m"}))
	g.Expect(out.SyncResult).NotTo(BeNil())
	g.Expect(out.SyncResult.Revision).To(Equal("abc"))
	g.Expect(out.SyncResult.Source.RepoURL).To(Equal("https://git.example/r"))
	g.Expect(out.SyncResult.Source.Path).To(Equal("dev"))
	g.Expect(out.SyncResult.Source.TargetRevision).To(Equal("main"))
}

func TestComparedEnvironmentID(t *testing.T) {
	tests := []struct {
		name string
		dest argov1alpha1.ApplicationDestination
		want string
	}{
		{"a managed environment's cluster Secret", argov1alpha1.ApplicationDestination{Name: argocd.ClusterSecretName("6f1c"), Namespace: "n"}, "6f1c"},
		{"this cluster by address", argov1alpha1.ApplicationDestination{Server: argocd.InClusterServer, Namespace: "n"}, ""},
		{"Argo CD's in-cluster name", argov1alpha1.ApplicationDestination{Name: "in-cluster"}, ""},
		// The prefix must start the name, not merely appear in it.
		{"a name that only contains the prefix", argov1alpha1.ApplicationDestination{Name: "x-" + argocd.ClusterSecretName("6f1c")}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := comparedEnvironmentID(&argov1alpha1.ComparedTo{Destination: tt.dest}); got != tt.want {
				t.Errorf("comparedEnvironmentID = %q, want %q", got, tt.want)
			}
		})
	}
}
