package deployment

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/outcome"
)

func TestComparedAsksForTheCurrentSpec(t *testing.T) {
	inCluster := &desired{input: argocd.ApplicationInput{RepoURL: "https://git.example/r", Path: "dev", Destination: argocd.Destination{Namespace: "team"}}}
	pinned := &desired{input: argocd.ApplicationInput{RepoURL: "https://git.example/r", Path: "dev", TargetRevision: "v1.2.0", Destination: argocd.Destination{Namespace: "team"}}}
	remote := &desired{input: argocd.ApplicationInput{RepoURL: "https://git.example/r", Path: "dev",
		Destination: argocd.Destination{Namespace: "team", ManagedEnvironmentID: "env-1"}}}
	cmp := func(repo, path, rev string, dest argov1alpha1.ApplicationDestination) *argov1alpha1.ComparedTo {
		return &argov1alpha1.ComparedTo{Source: argov1alpha1.ApplicationSource{RepoURL: repo, Path: path, TargetRevision: rev}, Destination: dest}
	}
	local := argov1alpha1.ApplicationDestination{Server: argocd.InClusterServer, Namespace: "team"}
	env1 := argov1alpha1.ApplicationDestination{Name: argocd.ClusterSecretName("env-1"), Namespace: "team"}
	tests := []struct {
		name string
		got  *argov1alpha1.ComparedTo
		want *desired
		ok   bool
	}{
		{"nothing compared yet", nil, inCluster, false},
		{"the same spec", cmp("https://git.example/r", "dev", "", local), inCluster, true},
		// Argo CD reports the default branch as HEAD; the spec leaves it empty.
		{"HEAD is the empty revision", cmp("https://git.example/r", "dev", "HEAD", local), inCluster, true},
		{"an empty revision is HEAD", cmp("https://git.example/r", "dev", "", local), &desired{input: argocd.ApplicationInput{
			RepoURL: "https://git.example/r", Path: "dev", TargetRevision: "HEAD", Destination: argocd.Destination{Namespace: "team"}}}, true},
		{"the pinned revision", cmp("https://git.example/r", "dev", "v1.2.0", local), pinned, true},
		{"the default branch, while a tag is wanted", cmp("https://git.example/r", "dev", "HEAD", local), pinned, false},
		{"another repository", cmp("https://git.example/other", "dev", "", local), inCluster, false},
		{"another path", cmp("https://git.example/r", "prod", "", local), inCluster, false},
		{"another namespace", cmp("https://git.example/r", "dev", "", argov1alpha1.ApplicationDestination{Server: argocd.InClusterServer, Namespace: "old"}), inCluster, false},
		// After a move from a managed environment back to this cluster: the old cluster
		// was compared, not the current one.
		{"an environment's cluster, while this cluster is wanted", cmp("https://git.example/r", "dev", "", env1), inCluster, false},
		{"this cluster, while an environment is wanted", cmp("https://git.example/r", "dev", "", local), remote, false},
		{"the environment's cluster", cmp("https://git.example/r", "dev", "", env1), remote, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := compared(tt.got, tt.want); got != tt.ok {
				t.Errorf("compared = %v, want %v", got, tt.ok)
			}
		})
	}
}

func TestShortRevision(t *testing.T) {
	for in, want := range map[string]string{
		"":             "(unknown)",
		"abc":          "abc",
		"0123456789ab": "0123456789ab",
		"0123456789abcdef0123456789abcdef01234567": "0123456789ab",
		"main": "main",
	} {
		if got := shortRevision(in); got != want {
			t.Errorf("shortRevision(%q) = %q, want %q", in, got, want)
		}
	}
}

// The messages of Ready are what `kubectl get -o wide` and `kubectl wait` show: they name the
// revision (short) and, where Argo CD said why, Argo CD's words.
func TestProgressMessages(t *testing.T) {
	want := &desired{input: argocd.ApplicationInput{RepoURL: "https://git.example/r", Path: "dev", Destination: argocd.Destination{Namespace: "t"}}}
	state := &db.ApplicationState{ReconciledState: &argov1alpha1.ComparedTo{
		Source:      argov1alpha1.ApplicationSource{RepoURL: "https://git.example/r", Path: "dev"},
		Destination: argov1alpha1.ApplicationDestination{Server: argocd.InClusterServer, Namespace: "t"},
	}}
	const rev = "0123456789abcdef0123456789abcdef01234567"
	synced := v1.SyncStatus{Status: v1.SyncStatusCodeSynced, Revision: rev}
	tests := []struct {
		name   string
		manual bool
		state  *db.ApplicationState
		status v1.GitOpsDeploymentStatus
		want   outcome.Progress
	}{
		{
			name:  "not reported yet",
			state: nil,
			want:  outcome.Working(ReasonProgressing, "Waiting for Argo CD to compare the current spec", true),
		},
		{
			name:   "deployed",
			state:  state,
			status: v1.GitOpsDeploymentStatus{Sync: synced, Health: v1.HealthStatus{Status: v1.HealthStatusCodeHealthy}},
			want:   outcome.Done(ReasonDeployed, "Revision 0123456789ab is deployed and healthy"),
		},
		{
			name:   "degraded, with Argo CD's health message",
			state:  state,
			status: v1.GitOpsDeploymentStatus{Sync: synced, Health: v1.HealthStatus{Status: v1.HealthStatusCodeDegraded, Message: "Deployment has no ready replicas"}},
			want:   outcome.Failed(ReasonDegraded, "Deployment has no ready replicas"),
		},
		{
			name:   "degraded, without a message",
			state:  state,
			status: v1.GitOpsDeploymentStatus{Sync: synced, Health: v1.HealthStatus{Status: v1.HealthStatusCodeDegraded}},
			want:   outcome.Failed(ReasonDegraded, "Revision 0123456789ab is deployed, and some of its resources are Degraded"),
		},
		{
			name:   "suspended, without a message",
			state:  state,
			status: v1.GitOpsDeploymentStatus{Sync: synced, Health: v1.HealthStatus{Status: v1.HealthStatusCodeSuspended}},
			want:   outcome.Waiting(ReasonSuspended, "Revision 0123456789ab is deployed, and some of its resources are Suspended"),
		},
		{
			// Missing resources of a Synced deployment: Argo CD is still creating them.
			name:   "synced, health missing",
			state:  state,
			status: v1.GitOpsDeploymentStatus{Sync: synced, Health: v1.HealthStatus{Status: v1.HealthStatusCodeMissing}},
			want:   outcome.Working(ReasonProgressing, "Revision 0123456789ab is deployed; waiting for its resources to become healthy (Missing)", false),
		},
		{
			name:   "synced, no health reported",
			state:  state,
			status: v1.GitOpsDeploymentStatus{Sync: synced},
			want:   outcome.Working(ReasonProgressing, "Revision 0123456789ab is deployed; waiting for its resources to become healthy (Unknown)", false),
		},
		{
			name:   "automated, out of sync: being deployed",
			state:  state,
			status: v1.GitOpsDeploymentStatus{Sync: v1.SyncStatus{Status: v1.SyncStatusCodeOutOfSync, Revision: rev}},
			want:   outcome.Working(ReasonOutOfSync, "Deploying revision 0123456789ab", false),
		},
		{
			name:   "manual, out of sync: waits for a SyncRun",
			manual: true,
			state:  state,
			status: v1.GitOpsDeploymentStatus{Sync: v1.SyncStatus{Status: v1.SyncStatusCodeOutOfSync, Revision: rev}},
			want:   outcome.Waiting(ReasonOutOfSync, "The live resources differ from revision 0123456789ab; a GitOpsDeploymentSyncRun deploys it"),
		},
		{
			name:   "out of sync without a revision",
			state:  state,
			status: v1.GitOpsDeploymentStatus{Sync: v1.SyncStatus{Status: v1.SyncStatusCodeOutOfSync}},
			want:   outcome.Working(ReasonOutOfSync, "Deploying revision (unknown)", false),
		},
		{
			name:  "a failed sync of a deployment still out of sync",
			state: state,
			status: v1.GitOpsDeploymentStatus{Sync: v1.SyncStatus{Status: v1.SyncStatusCodeOutOfSync, Revision: rev},
				OperationState: &v1.OperationState{Phase: "Error", Message: "namespace t not found"}},
			want: outcome.Failed(ReasonSyncFailed, "The sync of revision 0123456789ab failed: namespace t not found"),
		},
		{
			// A failed sync followed by a Synced comparison (fixed by hand, or by a later
			// commit) is no longer a failure.
			name:  "a failed sync, but synced since",
			state: state,
			status: v1.GitOpsDeploymentStatus{Sync: synced, Health: v1.HealthStatus{Status: v1.HealthStatusCodeHealthy},
				OperationState: &v1.OperationState{Phase: "Failed", Message: "apply failed"}},
			want: outcome.Done(ReasonDeployed, "Revision 0123456789ab is deployed and healthy"),
		},
		{
			name:  "a running sync is not a failure",
			state: state,
			status: v1.GitOpsDeploymentStatus{Sync: v1.SyncStatus{Status: v1.SyncStatusCodeOutOfSync, Revision: rev},
				OperationState: &v1.OperationState{Phase: "Running"}},
			want: outcome.Working(ReasonOutOfSync, "Deploying revision 0123456789ab", false),
		},
		{
			name:  "a comparison error carries Argo CD's message",
			state: state,
			status: v1.GitOpsDeploymentStatus{Conditions: []v1.GitOpsDeploymentCondition{{Type: v1.GitOpsDeploymentConditionComparisonError,
				Status: v1.GitOpsConditionStatusTrue, Message: "repository not found"}}},
			want: outcome.Failed(ReasonComparisonError, "repository not found"),
		},
		{
			// Both raised: the comparison is the earlier step and so the cause to fix first.
			name:  "a comparison error comes before a sync error",
			state: state,
			status: v1.GitOpsDeploymentStatus{Conditions: []v1.GitOpsDeploymentCondition{
				{Type: v1.GitOpsDeploymentConditionSyncError, Status: v1.GitOpsConditionStatusTrue, Message: "sync"},
				{Type: v1.GitOpsDeploymentConditionComparisonError, Status: v1.GitOpsConditionStatusTrue, Message: "compare"}}},
			want: outcome.Failed(ReasonComparisonError, "compare"),
		},
		{
			name:  "a resolved sync error is no failure",
			state: state,
			status: v1.GitOpsDeploymentStatus{Sync: synced, Health: v1.HealthStatus{Status: v1.HealthStatusCodeHealthy},
				Conditions: []v1.GitOpsDeploymentCondition{{Type: v1.GitOpsDeploymentConditionSyncError, Status: v1.GitOpsConditionStatusFalse}}},
			want: outcome.Done(ReasonDeployed, "Revision 0123456789ab is deployed and healthy"),
		},
		{
			// ErrorOccurred is the service's own condition; the reconcile's error, not
			// progress, reports it.
			name:  "ErrorOccurred is not progress's to report",
			state: state,
			status: v1.GitOpsDeploymentStatus{Sync: synced, Health: v1.HealthStatus{Status: v1.HealthStatusCodeHealthy},
				Conditions: []v1.GitOpsDeploymentCondition{{Type: v1.GitOpsDeploymentConditionErrorOccurred, Status: v1.GitOpsConditionStatusTrue}}},
			want: outcome.Done(ReasonDeployed, "Revision 0123456789ab is deployed and healthy"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			depl := &v1.GitOpsDeployment{Spec: v1.GitOpsDeploymentSpec{Type: v1.GitOpsDeploymentSpecTypeAutomated}, Status: tt.status}
			if tt.manual {
				depl.Spec.Type = v1.GitOpsDeploymentSpecTypeManual
			}
			g.Expect(progress(depl, want, tt.state)).To(Equal(tt.want))
		})
	}
}

// A spec that could not be resolved (invalid, environment missing) has nothing to compare:
// the generation stays pending, so observedGeneration does not claim it was processed.
func TestProgressWithoutDesiredSpecIsPending(t *testing.T) {
	g := NewWithT(t)
	depl := &v1.GitOpsDeployment{Status: v1.GitOpsDeploymentStatus{Sync: v1.SyncStatus{Status: v1.SyncStatusCodeSynced}, Health: v1.HealthStatus{Status: v1.HealthStatusCodeHealthy}}}
	p := progress(depl, nil, &db.ApplicationState{})
	g.Expect(p.Pending).To(BeTrue())
	g.Expect(p.Ready).To(Equal(metav1.ConditionFalse))
	g.Expect(p.Reason).To(Equal(ReasonProgressing))
}
