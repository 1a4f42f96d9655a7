package promotion

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

func TestDeployed(t *testing.T) {
	base := func() *appstudio.SnapshotEnvironmentBinding {
		b := &appstudio.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Spec: appstudio.SnapshotEnvironmentBindingSpec{Snapshot: "s"}}
		b.Status.ObservedGeneration = 2
		b.Status.Components = []appstudio.BindingComponentStatus{{Name: "a", GitOpsRepository: appstudio.BindingComponentGitOpsRepository{CommitID: "c2"}}}
		b.Status.GitOpsDeployments = []appstudio.BindingStatusGitOpsDeployment{{ComponentName: "a", SyncStatus: "Synced", Health: "Healthy", CommitID: "c2"}}
		return b
	}
	g := NewWithT(t)
	g.Expect(Deployed(base(), "s")).To(BeTrue())
	g.Expect(Deployed(base(), "other")).To(BeFalse())
	b := base()
	b.Status.ObservedGeneration = 1
	g.Expect(Deployed(b, "s")).To(BeFalse())
	b = base()
	b.Status.GitOpsDeployments[0].CommitID = "c1"
	g.Expect(Deployed(b, "s")).To(BeFalse())
	b = base()
	b.Status.GitOpsDeployments[0].Health = "Progressing"
	g.Expect(Deployed(b, "s")).To(BeFalse())
	b = base()
	b.Status.GitOpsRepoConditions = []metav1.Condition{{Type: appstudio.GitOpsRepoConditionGitOpsResourcesGenerated, Status: metav1.ConditionTrue, ObservedGeneration: 1}}
	g.Expect(Deployed(b, "s")).To(BeFalse())
	b.Status.GitOpsRepoConditions[0].ObservedGeneration = 2
	g.Expect(Deployed(b, "s")).To(BeTrue())
}
