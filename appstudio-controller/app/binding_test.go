package app_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
)

func component(name string) appstudio.BindingComponentStatus {
	return appstudio.BindingComponentStatus{Name: name, GitOpsRepository: appstudio.BindingComponentGitOpsRepository{
		URL: "https://github.com/example/gitops", Branch: "main", Path: "components/" + name + "/overlays/staging"}}
}

func (h *harness) binding(name string) *appstudio.SnapshotEnvironmentBinding {
	b := &appstudio.SnapshotEnvironmentBinding{}
	h.g.Expect(h.c.Get(h.ctx, h.key(name), b)).To(Succeed())
	return b
}

func (h *harness) setComponents(name string, comps ...appstudio.BindingComponentStatus) {
	h.t.Helper()
	h.g.Eventually(func() error {
		b := h.binding(name)
		b.Status.Components = comps
		return h.c.Status().Update(h.ctx, b)
	}, eventually, poll).Should(Succeed())
}

func (h *harness) bindingCondition(name string) func() *metav1.Condition {
	return func() *metav1.Condition {
		return meta.FindStatusCondition(h.binding(name).Status.BindingConditions, "ErrorOccurred")
	}
}

// deploy sets a GitOpsDeployment's status as the backend would.
func (h *harness) deploy(name string, sync v1.SyncStatusCode, health v1.HealthStatusCode, rev string) {
	h.t.Helper()
	h.g.Eventually(func() error {
		d := &v1.GitOpsDeployment{}
		if err := h.c.Get(h.ctx, h.key(name), d); err != nil {
			return err
		}
		d.Status.Sync = v1.SyncStatus{Status: sync, Revision: rev}
		d.Status.Health = v1.HealthStatus{Status: health}
		return h.c.Status().Update(h.ctx, d)
	}, eventually, poll).Should(Succeed())
}

func TestBindingGeneratesDeployments(t *testing.T) {
	h := start(t)
	h.create(&appstudio.Environment{ObjectMeta: metav1.ObjectMeta{Name: "staging"}})
	b := &appstudio.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Name: "appa-staging"},
		Spec: appstudio.SnapshotEnvironmentBindingSpec{Application: "appa", Environment: "staging", Snapshot: "snap1"}}
	h.create(b)
	h.g.Eventually(h.bindingCondition("appa-staging"), eventually, poll).Should(withReason(metav1.ConditionTrue, "WaitingForComponentStatus"))
	h.g.Eventually(h.ready("appa-staging", b), eventually, poll).Should(Equal("False/WaitingForComponentStatus+Reconciling"))

	h.setComponents("appa-staging", component("comp-b"), component("comp-a"), component("comp-a"))
	h.g.Eventually(h.bindingCondition("appa-staging"), eventually, poll).Should(withReason(metav1.ConditionTrue, "DuplicateComponents"))
	h.g.Eventually(h.ready("appa-staging", b), eventually, poll).Should(Equal("False/DuplicateComponents+Stalled"))

	h.setComponents("appa-staging", component("comp-b"), component("comp-a"))
	nameA, nameB := "appa-staging-appa-staging-comp-a", "appa-staging-appa-staging-comp-b"
	d := &v1.GitOpsDeployment{}
	h.g.Eventually(h.get(nameA, d), eventually, poll).Should(Succeed())
	h.g.Expect(d.Labels).To(Equal(map[string]string{
		appstudio.LabelApplication: "appa", appstudio.LabelComponent: "comp-a", appstudio.LabelEnvironment: "staging"}))
	h.g.Expect(d.Spec).To(Equal(v1.GitOpsDeploymentSpec{
		Source:      v1.ApplicationSource{RepoURL: "https://github.com/example/gitops", Path: "components/comp-a/overlays/staging", TargetRevision: "main"},
		Destination: v1.ApplicationDestination{Namespace: h.ns},
		Type:        v1.GitOpsDeploymentSpecTypeAutomated,
	}))
	h.g.Expect(metav1.IsControlledBy(d, h.binding("appa-staging"))).To(BeTrue())
	h.g.Eventually(h.bindingCondition("appa-staging"), eventually, poll).Should(withReason(metav1.ConditionFalse, "ErrorOccurredResolved"))

	// Status follows the deployments.
	h.deploy(nameA, v1.SyncStatusCodeSynced, v1.HealthStatusCodeHealthy, "abc")
	h.g.Eventually(func() []metav1.Condition { return h.binding("appa-staging").Status.ComponentDeploymentConditions }, eventually, poll).
		Should(ConsistOf(And(
			HaveField("Type", "AllComponentsDeployed"), HaveField("Reason", "CommitsUnsynced"),
			HaveField("Status", metav1.ConditionFalse), HaveField("Message", "1 of 2 components deployed"))))
	h.g.Eventually(h.ready("appa-staging", b), eventually, poll).Should(Equal("False/CommitsUnsynced+Reconciling"))
	h.g.Expect(meta.FindStatusCondition(b.Status.Conditions, "Ready").Message).To(Equal("1 of 2 components deployed"))
	h.g.Expect(b.Status.ObservedGeneration).To(Equal(b.Generation))
	h.deploy(nameB, v1.SyncStatusCodeSynced, v1.HealthStatusCodeHealthy, "abc")
	h.g.Eventually(func() []metav1.Condition { return h.binding("appa-staging").Status.ComponentDeploymentConditions }, eventually, poll).
		Should(ConsistOf(And(HaveField("Reason", "CommitsSynced"), HaveField("Status", metav1.ConditionTrue), HaveField("Message", "2 of 2 components deployed"))))
	h.g.Eventually(h.ready("appa-staging", b), eventually, poll).Should(Equal("True/CommitsSynced"))
	h.g.Expect(h.binding("appa-staging").Status.GitOpsDeployments).To(Equal([]appstudio.BindingStatusGitOpsDeployment{
		{ComponentName: "comp-a", GitOpsDeployment: nameA, SyncStatus: "Synced", Health: "Healthy", CommitID: "abc"},
		{ComponentName: "comp-b", GitOpsDeployment: nameB, SyncStatus: "Synced", Health: "Healthy", CommitID: "abc"},
	}))

	// Drift is reverted, a deleted deployment is re-created.
	h.g.Expect(h.c.Get(h.ctx, h.key(nameA), d)).To(Succeed())
	d.Spec.Source.Path = "elsewhere"
	d.Spec.Type = v1.GitOpsDeploymentSpecTypeManual
	delete(d.Labels, appstudio.LabelComponent)
	h.g.Expect(h.c.Update(h.ctx, d)).To(Succeed())
	h.g.Eventually(func() string {
		_ = h.c.Get(h.ctx, h.key(nameA), d)
		return d.Spec.Source.Path + "/" + string(d.Spec.Type) + "/" + d.Labels[appstudio.LabelComponent]
	}, eventually, poll).Should(Equal("components/comp-a/overlays/staging/automated/comp-a"))
	db := &v1.GitOpsDeployment{}
	h.g.Expect(h.c.Get(h.ctx, h.key(nameB), db)).To(Succeed())
	uid := db.UID
	h.g.Expect(h.c.Delete(h.ctx, db)).To(Succeed())
	h.g.Eventually(func() bool {
		return h.c.Get(h.ctx, h.key(nameB), db) == nil && db.UID != uid
	}, eventually, poll).Should(BeTrue())

	// A removed component's deployment is deleted.
	h.setComponents("appa-staging", component("comp-a"))
	h.g.Eventually(h.gone(&v1.GitOpsDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: nameB}}), eventually, poll).Should(BeTrue())
	h.g.Eventually(func() int { return len(h.binding("appa-staging").Status.GitOpsDeployments) }, eventually, poll).Should(Equal(1))
}

func TestBindingDestinationAndErrors(t *testing.T) {
	h := start(t)
	// Environment missing.
	b := &appstudio.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"},
		Spec: appstudio.SnapshotEnvironmentBindingSpec{Application: "app", Environment: "remote", Snapshot: "s"}}
	h.create(b)
	h.setComponents("b", component("c1"))
	h.g.Eventually(h.bindingCondition("b"), eventually, poll).Should(withReason(metav1.ConditionTrue, "EnvironmentNotFound"))

	// An Environment with credentials: deploy through its managed environment.
	h.create(credsEnv("remote", "creds"))
	d := &v1.GitOpsDeployment{}
	h.g.Eventually(h.get("b-app-remote-c1", d), eventually, poll).Should(Succeed())
	h.g.Expect(d.Spec.Destination).To(Equal(v1.ApplicationDestination{Environment: "managed-environment-remote", Namespace: "my-ns"}))

	// Name shortening at the boundaries: <binding>-<component> of exactly 250 and of 251.
	comp := strings.Repeat("c", 63)
	for _, n := range []int{186, 187} {
		name := strings.Repeat("x", n)
		// One binding per (application, environment): each its own application.
		h.create(&appstudio.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: appstudio.SnapshotEnvironmentBindingSpec{Application: "app" + strconv.Itoa(n), Environment: "remote", Snapshot: "s"}})
		h.setComponents(name, component(comp))
	}
	list := &v1.GitOpsDeploymentList{}
	h.g.Eventually(func() []string {
		_ = h.c.List(h.ctx, list, client.InNamespace(h.ns), client.MatchingLabels{appstudio.LabelComponent: comp})
		var names []string
		for _, i := range list.Items {
			names = append(names, i.Name)
		}
		return names
	}, eventually, poll).Should(ConsistOf(
		strings.Repeat("x", 186)+"-"+comp,
		And(HavePrefix(strings.Repeat("x", 180)+"-"), HaveLen(245))))
}

// retries sums the reconciles of the binding controller (of every manager of this test
// binary) that ended in an error or a requeue.
func retries(g Gomega) float64 {
	families, err := metrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	var n float64
	found := false
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["controller"] == "snapshotenvironmentbinding" {
				found = true
				if labels["result"] != "success" {
					n += m.GetCounter().GetValue()
				}
			}
		}
	}
	g.Expect(found).To(BeTrue(), "no reconcile metrics of the binding controller")
	return n
}

func (h *harness) ownedDeployments(binding string) func() []string {
	return func() []string {
		b := h.binding(binding)
		list := &v1.GitOpsDeploymentList{}
		h.g.Expect(h.c.List(h.ctx, list, client.InNamespace(h.ns))).To(Succeed())
		var names []string
		for i := range list.Items {
			if metav1.IsControlledBy(&list.Items[i], b) {
				names = append(names, list.Items[i].Name)
			}
		}
		return names
	}
}

func TestBindingInvalidComponentName(t *testing.T) {
	h := start(t)
	h.create(&appstudio.Environment{ObjectMeta: metav1.ObjectMeta{Name: "staging"}})
	h.create(&appstudio.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Name: "appa-staging"},
		Spec: appstudio.SnapshotEnvironmentBindingSpec{Application: "appa", Environment: "staging", Snapshot: "snap1"}})
	h.setComponents("appa-staging", component("comp-a"), component("Comp_B"))

	// The valid component is deployed; the invalid one is reported, by name, and skipped.
	h.g.Eventually(h.bindingCondition("appa-staging"), eventually, poll).Should(And(
		withReason(metav1.ConditionTrue, "InvalidComponentName"),
		WithTransform(func(c *metav1.Condition) string { return c.Message }, And(
			ContainSubstring(`component "Comp_B"`), ContainSubstring(`"appa-staging-appa-staging-Comp_B"`),
			ContainSubstring("1 of 2 components cannot be deployed"), Not(ContainSubstring(`"comp-a"`))))))
	h.g.Eventually(h.ownedDeployments("appa-staging"), eventually, poll).Should(ConsistOf("appa-staging-appa-staging-comp-a"))
	h.g.Eventually(h.events("appa-staging", "Warning"), eventually, poll).Should(ContainElement("InvalidComponentName"))
	h.g.Eventually(func() []appstudio.BindingStatusGitOpsDeployment {
		return h.binding("appa-staging").Status.GitOpsDeployments
	}, eventually, poll).
		Should(ConsistOf(
			HaveField("GitOpsDeployment", "appa-staging-appa-staging-comp-a"),
			And(HaveField("ComponentName", "Comp_B"), HaveField("GitOpsDeployment", ""))))

	// Not retried: no reconcile of the binding controller errs or requeues while nothing changes.
	before := retries(h.g)
	h.g.Consistently(func() float64 { return retries(h.g) }, 3*time.Second, 200*time.Millisecond).Should(Equal(before))

	// Renaming the component resolves the condition and deploys it.
	h.setComponents("appa-staging", component("comp-a"), component("comp-b"))
	h.g.Eventually(h.ownedDeployments("appa-staging"), eventually, poll).Should(ConsistOf(
		"appa-staging-appa-staging-comp-a", "appa-staging-appa-staging-comp-b"))
	h.g.Eventually(h.bindingCondition("appa-staging"), eventually, poll).Should(withReason(metav1.ConditionFalse, "ErrorOccurredResolved"))
}

func TestBindingCopiesLabels(t *testing.T) {
	h := start(t)
	h.create(&appstudio.Environment{ObjectMeta: metav1.ObjectMeta{Name: "staging"}})
	h.create(&appstudio.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Name: "appa-staging", Labels: map[string]string{
		"appstudio.openshift.io/foo":         "bar",
		"appstudio.openshift.io/environment": "other",
		"example.com/team":                   "a",
	}}, Spec: appstudio.SnapshotEnvironmentBindingSpec{Application: "appa", Environment: "staging", Snapshot: "snap1"}})
	h.setComponents("appa-staging", component("comp-a"))

	// The appstudio.openshift.io labels are copied; the binding's own three are not overridden.
	name := "appa-staging-appa-staging-comp-a"
	labelsOf := func() map[string]string {
		d := &v1.GitOpsDeployment{}
		if err := h.c.Get(h.ctx, h.key(name), d); err != nil {
			return nil
		}
		return d.Labels
	}
	h.g.Eventually(labelsOf, eventually, poll).Should(Equal(map[string]string{
		appstudio.LabelApplication: "appa", appstudio.LabelComponent: "comp-a", appstudio.LabelEnvironment: "staging",
		"appstudio.openshift.io/foo": "bar"}))
	h.g.Eventually(h.bindingCondition("appa-staging"), eventually, poll).Should(Or(BeNil(), withReason(metav1.ConditionFalse, "ErrorOccurredResolved")))

	// A label added to the binding later is copied too.
	h.g.Eventually(func() error {
		b := h.binding("appa-staging")
		b.Labels["appstudio.openshift.io.example.com/tier"] = "gold"
		return h.c.Update(h.ctx, b)
	}, eventually, poll).Should(Succeed())
	h.g.Eventually(labelsOf, eventually, poll).Should(HaveKeyWithValue("appstudio.openshift.io.example.com/tier", "gold"))
}

func TestBindingDuplicate(t *testing.T) {
	h := start(t) // webhooks off, as while the webhook is unavailable
	h.create(&appstudio.Environment{ObjectMeta: metav1.ObjectMeta{Name: "staging"}})
	newBinding := func(name string) {
		h.create(&appstudio.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: appstudio.SnapshotEnvironmentBindingSpec{Application: "appa", Environment: "staging", Snapshot: "snap1"}})
		h.setComponents(name, component("comp-a"))
	}
	newBinding("second") // the older, despite its name
	h.g.Eventually(h.ownedDeployments("second"), eventually, poll).Should(ConsistOf("second-appa-staging-comp-a"))
	winner := &v1.GitOpsDeployment{}
	h.g.Expect(h.c.Get(h.ctx, h.key("second-appa-staging-comp-a"), winner)).To(Succeed())
	time.Sleep(1100 * time.Millisecond) // creation timestamps have a resolution of a second

	// A younger duplicate that already generated a deployment (before it saw the older one).
	newBinding("first")
	stale := &v1.GitOpsDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "first-appa-staging-comp-b"},
		Spec: v1.GitOpsDeploymentSpec{Source: v1.ApplicationSource{RepoURL: "https://github.com/example/gitops", Path: "p"},
			Destination: v1.ApplicationDestination{Namespace: h.ns}, Type: v1.GitOpsDeploymentSpecTypeAutomated}}
	h.g.Expect(controllerutil.SetControllerReference(h.binding("first"), stale, cp.Scheme)).To(Succeed())
	h.create(stale)

	h.g.Eventually(h.bindingCondition("first"), eventually, poll).Should(And(
		withReason(metav1.ConditionTrue, "DuplicateBinding"),
		WithTransform(func(c *metav1.Condition) string { return c.Message }, ContainSubstring(`SnapshotEnvironmentBinding "second"`))))
	h.g.Eventually(h.gone(stale), eventually, poll).Should(BeTrue())
	h.g.Consistently(h.ownedDeployments("first"), 2*time.Second, poll).Should(BeEmpty())
	h.g.Eventually(h.events("first", "Warning"), eventually, poll).Should(ContainElement("DuplicateBinding"))

	// The older binding is untouched.
	h.g.Expect(h.c.Get(h.ctx, h.key("second-appa-staging-comp-a"), winner)).To(Succeed())
	h.g.Expect(winner.DeletionTimestamp.IsZero()).To(BeTrue())
	h.g.Expect(h.ownedDeployments("second")()).To(ConsistOf("second-appa-staging-comp-a"))
	h.g.Expect(h.bindingCondition("second")()).To(Or(BeNil(), HaveField("Status", metav1.ConditionFalse)))

	// When the older binding goes, the duplicate takes over.
	h.g.Expect(h.c.Delete(h.ctx, h.binding("second"))).To(Succeed())
	h.g.Eventually(h.ownedDeployments("first"), eventually, poll).Should(ConsistOf("first-appa-staging-comp-a"))
	h.g.Eventually(h.bindingCondition("first"), eventually, poll).Should(withReason(metav1.ConditionFalse, "ErrorOccurredResolved"))
}
