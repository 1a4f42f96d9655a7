package app_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/appstudio-controller/app"
)

func (h *harness) run(name string) *appstudio.PromotionRun {
	r := &appstudio.PromotionRun{}
	_ = h.c.Get(h.ctx, h.key(name), r)
	return r
}

func (h *harness) promotionSetup() {
	h.create(&appstudio.Environment{ObjectMeta: metav1.ObjectMeta{Name: "staging"}})
	for _, s := range []string{"s1", "s2"} {
		h.create(&appstudio.Snapshot{ObjectMeta: metav1.ObjectMeta{Name: s}, Spec: appstudio.SnapshotSpec{Application: "appa",
			Components: []appstudio.SnapshotComponent{{Name: "comp", ContainerImage: "quay.io/x/y:" + s}}}})
	}
}

func manualRun(name, snapshot string) *appstudio.PromotionRun {
	return &appstudio.PromotionRun{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appstudio.PromotionRunSpec{
		Snapshot: snapshot, Application: "appa", ManualPromotion: &appstudio.ManualPromotionConfiguration{TargetEnvironment: "staging"}}}
}

func TestPromotionSuccessAndOneAtATime(t *testing.T) {
	h := start(t)
	h.promotionSetup()
	h.create(manualRun("p1", "s1"))
	h.g.Eventually(func() appstudio.PromotionRunState { return h.run("p1").Status.State }, eventually, poll).Should(Equal(appstudio.PromotionRunStateActive))
	p1 := h.run("p1")
	h.g.Expect(p1.Status.ActiveBindings).To(Equal([]string{"appa-staging-generated-binding"}))
	h.g.Expect(p1.Status.PromotionStartTime).NotTo(BeNil())
	h.g.Expect(p1.Status.EnvironmentStatus).To(ConsistOf(And(HaveField("Step", 1), HaveField("EnvironmentName", "staging"),
		HaveField("Status", appstudio.PromotionRunEnvironmentStatusInProgress))))
	h.g.Expect(h.binding("appa-staging-generated-binding").Spec.Snapshot).To(Equal("s1"))
	h.g.Eventually(h.ready("p1", &appstudio.PromotionRun{}), eventually, poll).Should(Equal("False/Promoting+Reconciling"))

	// A second run of the application waits for the first.
	h.create(manualRun("p2", "s2"))
	h.g.Eventually(func() []appstudio.PromotionRunCondition { return h.run("p2").Status.Conditions }, eventually, poll).
		Should(ContainElement(And(HaveField("Reason", appstudio.PromotionRunReasonErrorOccurred), HaveField("Message", ContainSubstring(`"p1"`)))))
	h.g.Expect(h.run("p2").Status.State).To(Equal(appstudio.PromotionRunStateWaiting))
	h.g.Eventually(h.ready("p2", &appstudio.PromotionRun{}), eventually, poll).Should(Equal("False/PromotionInProgress+Reconciling"))

	// The Application Service writes the component status; the backend deploys.
	h.generated("appa-staging-generated-binding", "c1")
	name := "appa-staging-generated-binding-appa-staging-comp"
	h.g.Eventually(h.get(name, &v1.GitOpsDeployment{}), eventually, poll).Should(Succeed())
	h.deploy(name, v1.SyncStatusCodeSynced, v1.HealthStatusCodeHealthy, "c1")
	h.g.Eventually(func() appstudio.PromotionRunCompleteResult { return h.run("p1").Status.CompletionResult }, eventually, poll).
		Should(Equal(appstudio.PromotionRunCompleteResultSuccess))
	h.g.Expect(h.run("p1").Status.State).To(Equal(appstudio.PromotionRunStateComplete))
	h.g.Expect(h.run("p1").Status.EnvironmentStatus[0].Status).To(Equal(appstudio.PromotionRunEnvironmentStatusSuccess))
	h.g.Expect(h.ready("p1", &appstudio.PromotionRun{})()).To(Equal("True/PromotionSucceeded"))

	// Then the second run starts, moves the binding to s2, and completes once it is deployed.
	h.g.Eventually(func() string { return h.binding("appa-staging-generated-binding").Spec.Snapshot }, eventually, poll).Should(Equal("s2"))
	h.g.Eventually(func() appstudio.PromotionRunState { return h.run("p2").Status.State }, eventually, poll).Should(Equal(appstudio.PromotionRunStateActive))
	// The binding's status still describes s1: not complete.
	h.g.Consistently(func() appstudio.PromotionRunState { return h.run("p2").Status.State }, "1s", poll).Should(Equal(appstudio.PromotionRunStateActive))
	h.generated("appa-staging-generated-binding", "c2")
	h.g.Consistently(func() appstudio.PromotionRunState { return h.run("p2").Status.State }, "1s", poll).Should(Equal(appstudio.PromotionRunStateActive))
	h.deploy(name, v1.SyncStatusCodeSynced, v1.HealthStatusCodeHealthy, "c2")
	h.g.Eventually(func() appstudio.PromotionRunCompleteResult { return h.run("p2").Status.CompletionResult }, eventually, poll).
		Should(Equal(appstudio.PromotionRunCompleteResultSuccess))
	h.g.Expect(h.run("p2").Status.Conditions).To(ContainElement(HaveField("Reason", appstudio.PromotionRunReasonErrorOccurredResolved)))
}

func TestPromotionTimeout(t *testing.T) {
	h := start(t, func(o *app.Options) { o.PromotionTimeout = 2 * time.Second })
	h.promotionSetup()
	h.create(manualRun("p1", "s1"))
	h.g.Eventually(func() appstudio.PromotionRunCompleteResult { return h.run("p1").Status.CompletionResult }, eventually, poll).
		Should(Equal(appstudio.PromotionRunCompleteResultFailure))
	h.g.Expect(h.run("p1").Status.State).To(Equal(appstudio.PromotionRunStateComplete))
	h.g.Expect(h.run("p1").Status.EnvironmentStatus[0].Status).To(Equal(appstudio.PromotionRunEnvironmentStatusFailed))
	h.g.Expect(h.ready("p1", &appstudio.PromotionRun{})()).To(Equal("False/PromotionFailed+Stalled"))

	// Invalid input: a clear condition.
	h.create(&appstudio.PromotionRun{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Spec: appstudio.PromotionRunSpec{
		Snapshot: "missing", Application: "appa", ManualPromotion: &appstudio.ManualPromotionConfiguration{TargetEnvironment: "staging"}}})
	h.g.Eventually(func() []appstudio.PromotionRunCondition { return h.run("bad").Status.Conditions }, eventually, poll).
		Should(ContainElement(HaveField("Message", ContainSubstring(`Snapshot "missing" does not exist`))))
	h.g.Eventually(h.ready("bad", &appstudio.PromotionRun{}), eventually, poll).Should(Equal("False/SnapshotNotFound+Stalled"))
}

// generated writes the binding status as the Application Service does after generating the
// GitOps repository resources of the binding's current generation at commit.
func (h *harness) generated(name, commit string) {
	h.t.Helper()
	h.g.Eventually(func() error {
		b := h.binding(name)
		c := component("comp")
		c.GitOpsRepository.CommitID = commit
		b.Status.Components = []appstudio.BindingComponentStatus{c}
		meta.SetStatusCondition(&b.Status.GitOpsRepoConditions, metav1.Condition{Type: appstudio.GitOpsRepoConditionGitOpsResourcesGenerated,
			Status: metav1.ConditionTrue, Reason: "Generated", ObservedGeneration: b.Generation})
		return h.c.Status().Update(h.ctx, b)
	}, eventually, poll).Should(Succeed())
}
