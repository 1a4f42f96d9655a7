package deployment

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
)

func TestProgress(t *testing.T) {
	want := &desired{input: argocd.ApplicationInput{RepoURL: "https://git.example/r", Path: "dev", Destination: argocd.Destination{Namespace: "t"}}}
	comparedNow := &argov1alpha1.ComparedTo{
		Source:      argov1alpha1.ApplicationSource{RepoURL: "https://git.example/r", Path: "dev", TargetRevision: "HEAD"},
		Destination: argov1alpha1.ApplicationDestination{Server: argocd.InClusterServer, Namespace: "t"},
	}
	comparedBefore := comparedNow.DeepCopy()
	comparedBefore.Source.Path = "old"
	state := func(cmp *argov1alpha1.ComparedTo) *db.ApplicationState {
		return &db.ApplicationState{ReconciledState: cmp}
	}
	type status = v1.GitOpsDeploymentStatus
	synced := v1.SyncStatus{Status: v1.SyncStatusCodeSynced, Revision: "0123456789abcdef"}
	outOfSync := v1.SyncStatus{Status: v1.SyncStatusCodeOutOfSync, Revision: "0123456789abcdef"}
	healthy := v1.HealthStatus{Status: v1.HealthStatusCodeHealthy}
	for name, tc := range map[string]struct {
		manual  bool
		want    *desired
		state   *db.ApplicationState
		status  status
		ready   metav1.ConditionStatus
		reason  string
		pending bool
		working bool
		stalled bool
	}{
		"not reported":             {want: want, ready: "False", reason: ReasonProgressing, pending: true, working: true},
		"an older spec compared":   {want: want, state: state(comparedBefore), status: status{Sync: synced, Health: healthy}, ready: "False", reason: ReasonProgressing, pending: true, working: true},
		"synced and healthy":       {want: want, state: state(comparedNow), status: status{Sync: synced, Health: healthy}, ready: "True", reason: ReasonDeployed},
		"health progressing":       {want: want, state: state(comparedNow), status: status{Sync: synced, Health: v1.HealthStatus{Status: v1.HealthStatusCodeProgressing}}, ready: "False", reason: ReasonProgressing, working: true},
		"degraded":                 {want: want, state: state(comparedNow), status: status{Sync: synced, Health: v1.HealthStatus{Status: v1.HealthStatusCodeDegraded}}, ready: "False", reason: ReasonDegraded, stalled: true},
		"suspended waits":          {want: want, state: state(comparedNow), status: status{Sync: synced, Health: v1.HealthStatus{Status: v1.HealthStatusCodeSuspended}}, ready: "False", reason: ReasonSuspended},
		"automated out of sync":    {want: want, state: state(comparedNow), status: status{Sync: outOfSync}, ready: "False", reason: ReasonOutOfSync, working: true},
		"manual out of sync waits": {manual: true, want: want, state: state(comparedNow), status: status{Sync: outOfSync}, ready: "False", reason: ReasonOutOfSync},
		"sync status unknown":      {want: want, state: state(comparedNow), status: status{Sync: v1.SyncStatus{Status: v1.SyncStatusCodeUnknown}}, ready: "False", reason: ReasonProgressing, working: true},
		"comparison error (bad path)": {want: want, state: state(comparedNow), status: status{Sync: v1.SyncStatus{Status: v1.SyncStatusCodeUnknown}, Conditions: []v1.GitOpsDeploymentCondition{{Type: v1.GitOpsDeploymentConditionComparisonError, Status: v1.GitOpsConditionStatusTrue, Message: "app path does not exist"}}},
			ready: "False", reason: ReasonComparisonError, stalled: true},
		"comparison error of a spec not compared yet": {want: want, state: state(comparedBefore), status: status{Conditions: []v1.GitOpsDeploymentCondition{{Type: v1.GitOpsDeploymentConditionComparisonError, Status: v1.GitOpsConditionStatusTrue}}},
			ready: "False", reason: ReasonComparisonError, stalled: true},
		"resolved comparison error": {want: want, state: state(comparedNow), status: status{Sync: synced, Health: healthy, Conditions: []v1.GitOpsDeploymentCondition{{Type: v1.GitOpsDeploymentConditionComparisonError, Status: v1.GitOpsConditionStatusFalse}}},
			ready: "True", reason: ReasonDeployed},
		"sync error":  {want: want, state: state(comparedNow), status: status{Sync: outOfSync, Conditions: []v1.GitOpsDeploymentCondition{{Type: v1.GitOpsDeploymentConditionSyncError, Status: v1.GitOpsConditionStatusTrue}}}, ready: "False", reason: ReasonSyncError, stalled: true},
		"sync failed": {want: want, state: state(comparedNow), status: status{Sync: outOfSync, OperationState: &v1.OperationState{Phase: "Failed", Message: "apply failed"}}, ready: "False", reason: ReasonSyncFailed, stalled: true},
	} {
		t.Run(name, func(t *testing.T) {
			depl := &v1.GitOpsDeployment{Spec: v1.GitOpsDeploymentSpec{Type: v1.GitOpsDeploymentSpecTypeAutomated}, Status: tc.status}
			if tc.manual {
				depl.Spec.Type = v1.GitOpsDeploymentSpecTypeManual
			}
			p := progress(depl, tc.want, tc.state)
			if p.Ready != tc.ready || p.Reason != tc.reason || p.Pending != tc.pending || p.Reconciling != tc.working || p.Stalled != tc.stalled {
				t.Errorf("got %+v, want ready %s reason %s pending %v reconciling %v stalled %v", p, tc.ready, tc.reason, tc.pending, tc.working, tc.stalled)
			}
		})
	}
}

func TestComparedNamesTheManagedEnvironmentCluster(t *testing.T) {
	want := &desired{input: argocd.ApplicationInput{RepoURL: "r", Path: "p", TargetRevision: "main",
		Destination: argocd.Destination{Namespace: "n", ManagedEnvironmentID: "env-1"}}}
	cmp := &argov1alpha1.ComparedTo{
		Source:      argov1alpha1.ApplicationSource{RepoURL: "r", Path: "p", TargetRevision: "main"},
		Destination: argov1alpha1.ApplicationDestination{Name: argocd.ClusterSecretName("env-1"), Namespace: "n"},
	}
	if !compared(cmp, want) {
		t.Error("the environment's cluster was compared, but compared says no")
	}
	cmp.Destination.Name = argocd.ClusterSecretName("env-2")
	if compared(cmp, want) {
		t.Error("another environment's cluster was compared, but compared says yes")
	}
}
