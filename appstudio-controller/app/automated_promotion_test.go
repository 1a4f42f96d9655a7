package app_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/appstudio-controller/app"
)

// automatedSetup creates dev (Manual) -> staging -> prod (AppStudioAutomated), snapshot s1,
// and an existing prod binding "appa-prod" at snapshot s0.
func (h *harness) automatedSetup() {
	h.create(&appstudio.Environment{ObjectMeta: metav1.ObjectMeta{Name: "dev"}, Spec: appstudio.EnvironmentSpec{DeploymentStrategy: appstudio.DeploymentStrategyManual}})
	h.create(&appstudio.Environment{ObjectMeta: metav1.ObjectMeta{Name: "staging"}, Spec: appstudio.EnvironmentSpec{
		DeploymentStrategy: appstudio.DeploymentStrategyAppStudioAutomated, ParentEnvironment: "dev"}})
	h.create(&appstudio.Environment{ObjectMeta: metav1.ObjectMeta{Name: "prod"}, Spec: appstudio.EnvironmentSpec{
		DeploymentStrategy: appstudio.DeploymentStrategyAppStudioAutomated, ParentEnvironment: "staging"}})
	h.create(&appstudio.Snapshot{ObjectMeta: metav1.ObjectMeta{Name: "s1"}, Spec: appstudio.SnapshotSpec{Application: "appa",
		Components: []appstudio.SnapshotComponent{{Name: "comp", ContainerImage: "quay.io/x/y:s1"}}}})
	h.create(&appstudio.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Name: "appa-prod"},
		Spec: appstudio.SnapshotEnvironmentBindingSpec{Application: "appa", Environment: "prod", Snapshot: "s0"}})
}

func automatedRun(name, initial string) *appstudio.PromotionRun {
	return &appstudio.PromotionRun{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appstudio.PromotionRunSpec{
		Snapshot: "s1", Application: "appa", AutomatedPromotion: &appstudio.AutomatedPromotionConfiguration{InitialEnvironment: initial}}}
}

// deployBinding plays the Application Service and the backend: the binding's resources are
// generated at commit and its one deployment becomes Synced and Healthy.
func (h *harness) deployBinding(binding, env, commit string) {
	h.t.Helper()
	h.generated(binding, commit)
	name := binding + "-appa-" + env + "-comp"
	h.g.Eventually(h.get(name, &v1.GitOpsDeployment{}), eventually, poll).Should(Succeed())
	h.deploy(name, v1.SyncStatusCodeSynced, v1.HealthStatusCodeHealthy, commit)
}

func step(n int, env string, status appstudio.PromotionRunEnvironmentStatusField) types.GomegaMatcher {
	return And(HaveField("Step", n), HaveField("EnvironmentName", env), HaveField("Status", status))
}

func (h *harness) envStatus(name string) func() []appstudio.PromotionRunEnvironmentStatus {
	return func() []appstudio.PromotionRunEnvironmentStatus { return h.run(name).Status.EnvironmentStatus }
}

func (h *harness) bindingMissing(name string) func() bool {
	return func() bool {
		return apierrors.IsNotFound(h.c.Get(h.ctx, h.key(name), &appstudio.SnapshotEnvironmentBinding{}))
	}
}

func TestAutomatedPromotionStepByStep(t *testing.T) {
	h := start(t)
	h.automatedSetup()
	h.create(automatedRun("auto", "dev"))
	const inProgress, success = appstudio.PromotionRunEnvironmentStatusInProgress, appstudio.PromotionRunEnvironmentStatusSuccess

	// Step 1: dev.
	h.g.Eventually(h.envStatus("auto"), eventually, poll).Should(ConsistOf(step(1, "dev", inProgress)))
	h.g.Expect(h.run("auto").Status.State).To(Equal(appstudio.PromotionRunStateActive))
	h.g.Expect(h.run("auto").Status.ActiveBindings).To(Equal([]string{"appa-dev-generated-binding"}))
	h.g.Expect(h.binding("appa-dev-generated-binding").Spec.Snapshot).To(Equal("s1"))
	h.g.Consistently(h.bindingMissing("appa-staging-generated-binding"), "1s", poll).Should(BeTrue())

	// Step 2: staging, once dev is deployed.
	h.deployBinding("appa-dev-generated-binding", "dev", "c1")
	h.g.Eventually(h.envStatus("auto"), eventually, poll).Should(ConsistOf(step(1, "dev", success), step(2, "staging", inProgress)))
	h.g.Expect(h.run("auto").Status.ActiveBindings).To(Equal([]string{"appa-staging-generated-binding"}))
	h.g.Expect(h.binding("appa-staging-generated-binding").Spec.Snapshot).To(Equal("s1"))
	h.g.Consistently(func() string { return h.binding("appa-prod").Spec.Snapshot }, "1s", poll).Should(Equal("s0"))

	// Step 3: prod; the existing binding is pointed at the snapshot.
	h.deployBinding("appa-staging-generated-binding", "staging", "c1")
	h.g.Eventually(h.envStatus("auto"), eventually, poll).Should(ConsistOf(step(1, "dev", success), step(2, "staging", success), step(3, "prod", inProgress)))
	h.g.Expect(h.run("auto").Status.ActiveBindings).To(Equal([]string{"appa-prod"}))
	h.g.Expect(h.binding("appa-prod").Spec.Snapshot).To(Equal("s1"))
	h.g.Expect(h.bindingMissing("appa-prod-generated-binding")()).To(BeTrue())
	h.g.Consistently(func() appstudio.PromotionRunState { return h.run("auto").Status.State }, "1s", poll).Should(Equal(appstudio.PromotionRunStateActive))

	h.deployBinding("appa-prod", "prod", "c1")
	h.g.Eventually(func() appstudio.PromotionRunCompleteResult { return h.run("auto").Status.CompletionResult }, eventually, poll).
		Should(Equal(appstudio.PromotionRunCompleteResultSuccess))
	r := h.run("auto")
	h.g.Expect(r.Status.State).To(Equal(appstudio.PromotionRunStateComplete))
	h.g.Expect(r.Status.EnvironmentStatus).To(ConsistOf(step(1, "dev", success), step(2, "staging", success), step(3, "prod", success)))
	h.g.Expect(r.Status.ObservedGeneration).To(Equal(r.Generation))
}

func TestAutomatedPromotionFailsAtStaging(t *testing.T) {
	h := start(t, func(o *app.Options) { o.PromotionTimeout = 5 * time.Second })
	h.automatedSetup()
	h.create(automatedRun("auto", "dev"))
	h.g.Eventually(h.get("appa-dev-generated-binding", &appstudio.SnapshotEnvironmentBinding{}), eventually, poll).Should(Succeed())
	h.deployBinding("appa-dev-generated-binding", "dev", "c1")
	h.g.Eventually(h.envStatus("auto"), eventually, poll).Should(ContainElement(step(2, "staging", appstudio.PromotionRunEnvironmentStatusInProgress)))

	// staging is never deployed: the run fails at step 2 and prod is untouched.
	h.g.Eventually(func() appstudio.PromotionRunCompleteResult { return h.run("auto").Status.CompletionResult }, eventually, poll).
		Should(Equal(appstudio.PromotionRunCompleteResultFailure))
	r := h.run("auto")
	h.g.Expect(r.Status.State).To(Equal(appstudio.PromotionRunStateComplete))
	h.g.Expect(r.Status.EnvironmentStatus).To(ConsistOf(step(1, "dev", appstudio.PromotionRunEnvironmentStatusSuccess),
		step(2, "staging", appstudio.PromotionRunEnvironmentStatusFailed)))
	h.g.Expect(r.Status.EnvironmentStatus).To(ContainElement(And(step(2, "staging", appstudio.PromotionRunEnvironmentStatusFailed),
		HaveField("DisplayStatus", ContainSubstring("Not all components were synced and healthy within 5s")))))
	h.g.Expect(r.Status.Conditions).To(ContainElement(And(HaveField("Type", appstudio.PromotionRunConditionType("Ready")),
		HaveField("Status", appstudio.PromotionRunConditionStatus("False")), HaveField("Message", ContainSubstring("within 5s")))))
	h.g.Expect(r.Status.ActiveBindings).To(Equal([]string{"appa-staging-generated-binding"}))
	h.g.Expect(h.binding("appa-prod").Spec.Snapshot).To(Equal("s0"))
	h.g.Expect(h.bindingMissing("appa-prod-generated-binding")()).To(BeTrue())

	// A missing initial Environment fails the run at step 1.
	h.create(automatedRun("missing", "nope"))
	h.g.Eventually(func() appstudio.PromotionRunCompleteResult { return h.run("missing").Status.CompletionResult }, eventually, poll).
		Should(Equal(appstudio.PromotionRunCompleteResultFailure))
	h.g.Expect(h.run("missing").Status.EnvironmentStatus).To(ConsistOf(And(step(1, "nope", appstudio.PromotionRunEnvironmentStatusFailed),
		HaveField("DisplayStatus", ContainSubstring(`Environment "nope" does not exist`)))))
	h.g.Expect(h.bindingMissing("appa-nope-generated-binding")()).To(BeTrue())
}

// TestSnapshotPromotedToAutomatedRoots: a new Snapshot is promoted to the AppStudioAutomated
// Environments without a parent, and on to their AppStudioAutomated children; Manual ones and
// older Snapshots are left alone, and a root Environment created later gets the newest Snapshot.
func TestSnapshotPromotedToAutomatedRoots(t *testing.T) {
	h := start(t)
	const inProgress, success = appstudio.PromotionRunEnvironmentStatusInProgress, appstudio.PromotionRunEnvironmentStatusSuccess
	automated := func(name, parent string) *appstudio.Environment {
		return &appstudio.Environment{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appstudio.EnvironmentSpec{
			DeploymentStrategy: appstudio.DeploymentStrategyAppStudioAutomated, ParentEnvironment: parent}}
	}
	snapshot := func(name string) *appstudio.Snapshot {
		return &appstudio.Snapshot{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appstudio.SnapshotSpec{Application: "appa",
			Components: []appstudio.SnapshotComponent{{Name: "comp", ContainerImage: "quay.io/x/y:" + name}}}}
	}
	h.create(automated("dev", ""))
	h.create(automated("staging", "dev"))
	h.create(&appstudio.Environment{ObjectMeta: metav1.ObjectMeta{Name: "qa"}, Spec: appstudio.EnvironmentSpec{DeploymentStrategy: appstudio.DeploymentStrategyManual}})
	h.create(snapshot("s1"))

	// One automated run from dev, owned by the Snapshot; none from qa (Manual).
	h.g.Eventually(h.envStatus("s1-dev-automated"), eventually, poll).Should(ConsistOf(step(1, "dev", inProgress)))
	r := h.run("s1-dev-automated")
	h.g.Expect(r.Spec).To(Equal(appstudio.PromotionRunSpec{Snapshot: "s1", Application: "appa",
		AutomatedPromotion: &appstudio.AutomatedPromotionConfiguration{InitialEnvironment: "dev"}}))
	h.g.Expect(r.OwnerReferences).To(ConsistOf(And(HaveField("Kind", "Snapshot"), HaveField("Name", "s1"))))
	h.g.Expect(h.binding("appa-dev-generated-binding").Spec.Snapshot).To(Equal("s1"))
	h.g.Consistently(h.bindingMissing("appa-qa-generated-binding"), "1s", poll).Should(BeTrue())
	h.g.Expect(h.c.Get(h.ctx, h.key("s1-qa-automated"), &appstudio.PromotionRun{})).To(MatchError(apierrors.IsNotFound, "IsNotFound"))

	// Deployed to dev, it goes on to staging.
	h.deployBinding("appa-dev-generated-binding", "dev", "c1")
	h.g.Eventually(h.envStatus("s1-dev-automated"), eventually, poll).Should(ConsistOf(step(1, "dev", success), step(2, "staging", inProgress)))
	h.deployBinding("appa-staging-generated-binding", "staging", "c1")
	h.g.Eventually(func() appstudio.PromotionRunCompleteResult { return h.run("s1-dev-automated").Status.CompletionResult }, eventually, poll).
		Should(Equal(appstudio.PromotionRunCompleteResultSuccess))

	// The next Snapshot is promoted in turn.
	h.create(snapshot("s2"))
	h.g.Eventually(func() string { return h.binding("appa-dev-generated-binding").Spec.Snapshot }, eventually, poll).Should(Equal("s2"))
	h.g.Expect(h.run("s2-dev-automated").Spec.AutomatedPromotion.InitialEnvironment).To(Equal("dev"))

	// A root Environment created later gets the newest Snapshot only, once the run of s2 from
	// dev (still active) completes: one run of an Application at a time.
	h.create(automated("demo", ""))
	h.g.Eventually(func() appstudio.PromotionRunState { return h.run("s2-demo-automated").Status.State }, eventually, poll).
		Should(Equal(appstudio.PromotionRunStateWaiting))
	h.g.Expect(h.run("s2-demo-automated").Spec.AutomatedPromotion.InitialEnvironment).To(Equal("demo"))
	h.g.Consistently(h.bindingMissing("appa-demo-generated-binding"), "1s", poll).Should(BeTrue())
	h.deployBinding("appa-dev-generated-binding", "dev", "c2")
	h.g.Eventually(h.envStatus("s2-dev-automated"), eventually, poll).Should(ContainElement(step(2, "staging", inProgress)))
	h.deployBinding("appa-staging-generated-binding", "staging", "c2")
	h.g.Eventually(h.get("appa-demo-generated-binding", &appstudio.SnapshotEnvironmentBinding{}), eventually, poll).Should(Succeed())
	h.g.Expect(h.binding("appa-demo-generated-binding").Spec.Snapshot).To(Equal("s2"))
	h.g.Expect(h.c.Get(h.ctx, h.key("s1-demo-automated"), &appstudio.PromotionRun{})).To(MatchError(apierrors.IsNotFound, "IsNotFound"))
}

// TestManualPromotionCarriesOnToAutomatedChildren: a successful manual promotion to dev
// starts an automated promotion from each AppStudioAutomated child of dev.
func TestManualPromotionCarriesOnToAutomatedChildren(t *testing.T) {
	h := start(t)
	h.automatedSetup() // dev (Manual) -> staging -> prod (AppStudioAutomated)
	h.create(&appstudio.Environment{ObjectMeta: metav1.ObjectMeta{Name: "hotfix"}, Spec: appstudio.EnvironmentSpec{
		DeploymentStrategy: appstudio.DeploymentStrategyManual, ParentEnvironment: "dev"}})
	const inProgress, success = appstudio.PromotionRunEnvironmentStatusInProgress, appstudio.PromotionRunEnvironmentStatusSuccess
	h.create(&appstudio.PromotionRun{ObjectMeta: metav1.ObjectMeta{Name: "to-dev"}, Spec: appstudio.PromotionRunSpec{
		Snapshot: "s1", Application: "appa", ManualPromotion: &appstudio.ManualPromotionConfiguration{TargetEnvironment: "dev"}}})

	// Nothing follows before the manual promotion succeeds.
	h.g.Eventually(h.get("appa-dev-generated-binding", &appstudio.SnapshotEnvironmentBinding{}), eventually, poll).Should(Succeed())
	h.g.Consistently(func() bool {
		return apierrors.IsNotFound(h.c.Get(h.ctx, h.key("to-dev-staging-automated"), &appstudio.PromotionRun{}))
	}, "1s", poll).Should(BeTrue())

	h.deployBinding("appa-dev-generated-binding", "dev", "c1")
	h.g.Eventually(func() appstudio.PromotionRunCompleteResult { return h.run("to-dev").Status.CompletionResult }, eventually, poll).
		Should(Equal(appstudio.PromotionRunCompleteResultSuccess))
	h.g.Eventually(h.envStatus("to-dev-staging-automated"), eventually, poll).Should(ConsistOf(step(1, "staging", inProgress)))
	r := h.run("to-dev-staging-automated")
	h.g.Expect(r.Spec).To(Equal(appstudio.PromotionRunSpec{Snapshot: "s1", Application: "appa",
		AutomatedPromotion: &appstudio.AutomatedPromotionConfiguration{InitialEnvironment: "staging"}}))
	h.g.Expect(r.OwnerReferences).To(ConsistOf(And(HaveField("Kind", "PromotionRun"), HaveField("Name", "to-dev"))))
	h.g.Expect(h.binding("appa-staging-generated-binding").Spec.Snapshot).To(Equal("s1"))
	h.g.Expect(h.c.Get(h.ctx, h.key("to-dev-hotfix-automated"), &appstudio.PromotionRun{})).To(MatchError(apierrors.IsNotFound, "IsNotFound"))

	// And on to prod, through the automated walk.
	h.deployBinding("appa-staging-generated-binding", "staging", "c1")
	h.g.Eventually(h.envStatus("to-dev-staging-automated"), eventually, poll).Should(ConsistOf(step(1, "staging", success), step(2, "prod", inProgress)))
	h.g.Expect(h.binding("appa-prod").Spec.Snapshot).To(Equal("s1"))
	h.g.Expect(h.bindingMissing("appa-hotfix-generated-binding")()).To(BeTrue())
}
