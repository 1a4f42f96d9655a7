package promotion

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/outcome"
)

// deployedBinding is a binding at generation 3 that deploys snapshot "s2" with components a
// and b, both Synced and Healthy at the commits they were generated in.
func deployedBinding() *appstudio.SnapshotEnvironmentBinding {
	b := &appstudio.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Name: "app-staging", Generation: 3},
		Spec: appstudio.SnapshotEnvironmentBindingSpec{Application: "app", Environment: "staging", Snapshot: "s2"}}
	b.Status.ObservedGeneration = 3
	b.Status.Components = []appstudio.BindingComponentStatus{
		{Name: "a", GitOpsRepository: appstudio.BindingComponentGitOpsRepository{URL: "https://example.com/r", Path: "a", CommitID: "ca"}},
		{Name: "b", GitOpsRepository: appstudio.BindingComponentGitOpsRepository{URL: "https://example.com/r", Path: "b", CommitID: "cb"}},
	}
	b.Status.GitOpsDeployments = []appstudio.BindingStatusGitOpsDeployment{
		{ComponentName: "a", GitOpsDeployment: "app-staging-app-staging-a", SyncStatus: "Synced", Health: "Healthy", CommitID: "ca"},
		{ComponentName: "b", GitOpsDeployment: "app-staging-app-staging-b", SyncStatus: "Synced", Health: "Healthy", CommitID: "cb"},
	}
	return b
}

func TestDeployedRequiresEveryComponentSyncedAndHealthyAtTheCurrentSpec(t *testing.T) {
	generated := func(status metav1.ConditionStatus, gen int64) func(*appstudio.SnapshotEnvironmentBinding) {
		return func(b *appstudio.SnapshotEnvironmentBinding) {
			b.Status.GitOpsRepoConditions = []metav1.Condition{{Type: appstudio.GitOpsRepoConditionGitOpsResourcesGenerated,
				Status: status, ObservedGeneration: gen, Reason: "R"}}
		}
	}
	tests := []struct {
		name   string
		change func(*appstudio.SnapshotEnvironmentBinding)
		want   bool
	}{
		{"every component deployed", func(*appstudio.SnapshotEnvironmentBinding) {}, true},
		// The binding may still describe what it deployed before (the previous Snapshot).
		{"another snapshot", func(b *appstudio.SnapshotEnvironmentBinding) { b.Spec.Snapshot = "s1" }, false},
		{"status of an older generation", func(b *appstudio.SnapshotEnvironmentBinding) { b.Generation = 4 }, false},
		// A binding without components deploys nothing; that is not a successful promotion.
		{"no components yet", func(b *appstudio.SnapshotEnvironmentBinding) {
			b.Status.Components, b.Status.GitOpsDeployments = nil, nil
		}, false},
		{"a component without a deployment yet", func(b *appstudio.SnapshotEnvironmentBinding) {
			b.Status.GitOpsDeployments = b.Status.GitOpsDeployments[:1]
		}, false},
		{"one component out of sync", func(b *appstudio.SnapshotEnvironmentBinding) { b.Status.GitOpsDeployments[1].SyncStatus = "OutOfSync" }, false},
		{"one component with unknown sync", func(b *appstudio.SnapshotEnvironmentBinding) { b.Status.GitOpsDeployments[0].SyncStatus = "" }, false},
		{"one component degraded", func(b *appstudio.SnapshotEnvironmentBinding) { b.Status.GitOpsDeployments[1].Health = "Degraded" }, false},
		{"one component missing", func(b *appstudio.SnapshotEnvironmentBinding) { b.Status.GitOpsDeployments[0].Health = "Missing" }, false},
		// Synced to the commit before the one the Application Service generated for this Snapshot.
		{"one component at an older commit", func(b *appstudio.SnapshotEnvironmentBinding) { b.Status.GitOpsDeployments[1].CommitID = "old" }, false},
		// Without a commit from the Application Service, Synced and Healthy is all there is to go by.
		{"no generated commit reported", func(b *appstudio.SnapshotEnvironmentBinding) {
			b.Status.Components[0].GitOpsRepository.CommitID = ""
			b.Status.GitOpsDeployments[0].CommitID = "anything"
		}, true},
		{"resources generated for this generation", generated(metav1.ConditionTrue, 3), true},
		{"resources generated for an older generation", generated(metav1.ConditionTrue, 2), false},
		{"resources not generated", generated(metav1.ConditionFalse, 3), false},
		{"resources generation unknown", generated(metav1.ConditionUnknown, 3), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := deployedBinding()
			tt.change(b)
			NewWithT(t).Expect(Deployed(b, "s2")).To(Equal(tt.want))
		})
	}
}

func TestProgressOfAnAutomatedRunWithSeveralFailures(t *testing.T) {
	// Every failed Environment is named, in status order; the successful ones are not.
	run := &appstudio.PromotionRun{Spec: appstudio.PromotionRunSpec{Snapshot: "s1"}, Status: appstudio.PromotionRunStatus{
		State: appstudio.PromotionRunStateComplete, CompletionResult: appstudio.PromotionRunCompleteResultFailure,
		EnvironmentStatus: []appstudio.PromotionRunEnvironmentStatus{
			envStep(1, "dev", stepSuccess, msgDeployed),
			envStep(2, "stage-a", stepFailed, "timed out"),
			envStep(2, "stage-b", stepFailed, `Environment "stage-b" does not exist`),
		}}}
	NewWithT(t).Expect(Progress(run)).To(Equal(outcome.Failed(appstudio.PromotionRunReasonFailed,
		`The promotion failed: stage-a: timed out; stage-b: Environment "stage-b" does not exist`)))
}

// A completed run keeps its result as the Ready condition; a result other than Success is a
// failure (never Ready).
func TestProgressOfACompletedRunWithoutResult(t *testing.T) {
	run := &appstudio.PromotionRun{Spec: appstudio.PromotionRunSpec{Snapshot: "s1"},
		Status: appstudio.PromotionRunStatus{State: appstudio.PromotionRunStateComplete}}
	p := Progress(run)
	g := NewWithT(t)
	g.Expect(p.Ready).To(Equal(metav1.ConditionFalse))
	g.Expect(p.Stalled).To(BeTrue())
}

func TestByDeadlineLeavesNilAlone(t *testing.T) {
	NewWithT(t).Expect(byDeadline(nil, time.Minute)).To(Succeed())
}
