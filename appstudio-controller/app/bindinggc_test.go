package app_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/appstudio-controller/app"
)

const (
	gcGrace          = 2 * time.Second
	missingSinceAnno = "appstudio.redhat.com/application-missing-since"
)

func startGC(t *testing.T) *harness {
	return start(t, func(o *app.Options) { o.BindingApplicationGrace = gcGrace })
}

func (h *harness) application(name string) *unstructured.Unstructured {
	a := &unstructured.Unstructured{}
	a.SetAPIVersion("appstudio.redhat.com/v1alpha1")
	a.SetKind("Application")
	a.SetNamespace(h.ns)
	a.SetName(name)
	return a
}

func (h *harness) createApplication(name string) {
	h.t.Helper()
	h.g.Expect(h.c.Create(h.ctx, h.application(name))).To(Succeed())
}

func (h *harness) deleteApplication(name string) {
	h.t.Helper()
	h.g.Expect(h.c.Delete(h.ctx, h.application(name))).To(Succeed())
	h.g.Eventually(h.gone(h.application(name)), eventually, poll).Should(BeTrue())
}

func (h *harness) gcBinding(name, application string) {
	h.create(&appstudio.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appstudio.SnapshotEnvironmentBindingSpec{Application: application, Environment: "staging", Snapshot: "snap1"}})
}

// missingSince returns a function for Eventually/Consistently: the binding's annotation, ""
// when it has none, "<gone>" when the binding is gone or being deleted.
func (h *harness) missingSince(name string) func() string {
	return func() string {
		b := &appstudio.SnapshotEnvironmentBinding{}
		if err := h.c.Get(h.ctx, h.key(name), b); err != nil || !b.DeletionTimestamp.IsZero() {
			return "<gone>"
		}
		return b.Annotations[missingSinceAnno]
	}
}

// goneEvents returns the ApplicationGone events recorded on the binding.
func (h *harness) goneEvents(name string) func() []corev1.Event {
	return func() []corev1.Event {
		list := &corev1.EventList{}
		h.g.Expect(h.c.List(h.ctx, list, client.InNamespace(h.ns))).To(Succeed())
		var out []corev1.Event
		for _, e := range list.Items {
			if e.InvolvedObject.Kind == "SnapshotEnvironmentBinding" && e.InvolvedObject.Name == name && e.Reason == "ApplicationGone" {
				out = append(out, e)
			}
		}
		return out
	}
}

func TestBindingApplicationExistsKeepsBinding(t *testing.T) {
	h := startGC(t)
	h.createApplication("appa")
	h.gcBinding("appa-staging", "appa")
	// The other controllers see the binding (it is reconciled), and the GC controller never
	// marks or deletes it.
	h.g.Eventually(h.bindingCondition("appa-staging"), eventually, poll).ShouldNot(BeNil())
	h.g.Consistently(h.missingSince("appa-staging"), 3*gcGrace, poll).Should(BeEmpty())
	h.g.Expect(h.goneEvents("appa-staging")()).To(BeEmpty())
}

func TestBindingApplicationNeverExistedDeletesBinding(t *testing.T) {
	h := startGC(t)
	h.gcBinding("nope-staging", "nope")
	var stamp string
	h.g.Eventually(func() string { stamp = h.missingSince("nope-staging")(); return stamp }, eventually, poll).
		ShouldNot(BeEmpty())
	h.g.Expect(stamp).NotTo(Equal("<gone>"), "the binding must be annotated before it is deleted")
	since, err := time.Parse(time.RFC3339, stamp)
	h.g.Expect(err).NotTo(HaveOccurred())

	b := &appstudio.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Name: "nope-staging", Namespace: h.ns}}
	h.g.Eventually(h.gone(b), eventually, poll).Should(BeTrue())
	h.g.Expect(time.Since(since)).To(BeNumerically(">=", gcGrace), "deleted before the grace period")
	h.g.Eventually(h.goneEvents("nope-staging"), eventually, poll).Should(ContainElement(And(
		HaveField("Type", corev1.EventTypeWarning),
		HaveField("Message", And(ContainSubstring(`Application "nope"`), ContainSubstring(gcGrace.String()))),
	)))
}

func TestBindingApplicationRecreatedKeepsBinding(t *testing.T) {
	h := startGC(t)
	h.create(&appstudio.Environment{ObjectMeta: metav1.ObjectMeta{Name: "staging"}})
	h.createApplication("appb")
	h.gcBinding("appb-staging", "appb")
	h.setComponents("appb-staging", component("comp-a"))
	deployment := &v1.GitOpsDeployment{ObjectMeta: metav1.ObjectMeta{Name: "appb-staging-appb-staging-comp-a", Namespace: h.ns}}
	h.g.Eventually(h.get(deployment.Name, &v1.GitOpsDeployment{}), eventually, poll).Should(Succeed())

	// Deleted, then re-created within the grace period: the mark goes, the binding stays.
	h.deleteApplication("appb")
	h.g.Eventually(h.missingSince("appb-staging"), eventually, poll).Should(MatchRegexp(`^\d{4}-\d\d-\d\dT`))
	h.createApplication("appb")
	h.g.Eventually(h.missingSince("appb-staging"), eventually, poll).Should(BeEmpty())
	h.g.Consistently(h.missingSince("appb-staging"), 2*gcGrace, poll).Should(BeEmpty())
	h.g.Expect(h.goneEvents("appb-staging")()).To(BeEmpty())

	// Deleted for good: the binding goes after the grace period, and its GitOpsDeployment
	// with it (the control plane's garbage collector follows the owner reference).
	h.deleteApplication("appb")
	b := &appstudio.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Name: "appb-staging", Namespace: h.ns}}
	h.g.Eventually(h.gone(b), eventually, poll).Should(BeTrue())
	h.g.Eventually(h.goneEvents("appb-staging"), eventually, poll).ShouldNot(BeEmpty())
	h.g.Eventually(h.gone(deployment), eventually, poll).Should(BeTrue())
}
