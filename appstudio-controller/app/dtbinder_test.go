package app_test

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/appstudio-controller/app"
)

func (h *harness) class(policy appstudio.ReclaimPolicy, provisioner string) appstudio.DeploymentTargetClassName {
	name := "cls-" + strings.ToLower(string(policy)) + "-" + h.ns
	h.g.Expect(h.c.Create(h.ctx, &appstudio.DeploymentTargetClass{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       appstudio.DeploymentTargetClassSpec{Provisioner: appstudio.Provisioner(provisioner), ReclaimPolicy: policy},
	})).To(Succeed())
	return appstudio.DeploymentTargetClassName(name)
}

func (h *harness) target(name string, cls appstudio.DeploymentTargetClassName) *appstudio.DeploymentTarget {
	dt := &appstudio.DeploymentTarget{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appstudio.DeploymentTargetSpec{
		DeploymentTargetClassName: cls,
		KubernetesClusterCredentials: appstudio.DeploymentTargetKubernetesClusterCredentials{
			DefaultNamespace: "ns", APIURL: "https://api.example.com:6443", ClusterCredentialsSecret: "s"},
	}}
	h.create(dt)
	return dt
}

func (h *harness) dtPhase(name string) func() appstudio.DeploymentTargetPhase {
	return func() appstudio.DeploymentTargetPhase {
		dt := &appstudio.DeploymentTarget{}
		_ = h.c.Get(h.ctx, h.key(name), dt)
		return dt.Status.Phase
	}
}

func (h *harness) dtcPhase(name string) func() appstudio.DeploymentTargetClaimPhase {
	return func() appstudio.DeploymentTargetClaimPhase {
		dtc := &appstudio.DeploymentTargetClaim{}
		_ = h.c.Get(h.ctx, h.key(name), dtc)
		return dtc.Status.Phase
	}
}

func TestBinderRetain(t *testing.T) {
	h := start(t)
	cls := h.class(appstudio.ReclaimPolicyRetain, "example.com/external")

	// No target: Pending, and the class's provisioner is asked for one.
	dtc := &appstudio.DeploymentTargetClaim{ObjectMeta: metav1.ObjectMeta{Name: "claim"}, Spec: appstudio.DeploymentTargetClaimSpec{DeploymentTargetClassName: cls}}
	h.create(dtc)
	h.g.Eventually(h.dtcPhase("claim"), eventually, poll).Should(Equal(appstudio.DeploymentTargetClaimPhasePending))
	h.g.Eventually(func() map[string]string {
		_ = h.c.Get(h.ctx, h.key("claim"), dtc)
		return dtc.Annotations
	}, eventually, poll).Should(HaveKeyWithValue(appstudio.AnnTargetProvisioner, "example.com/external"))
	h.g.Expect(dtc.Finalizers).To(ContainElement(appstudio.FinalizerBinder))
	h.g.Eventually(h.ready("claim", &appstudio.DeploymentTargetClaim{}), eventually, poll).Should(Equal("False/Pending+Reconciling"))

	// An Available target of another class is not taken; one of the class is.
	h.target("other", h.class(appstudio.ReclaimPolicyDelete, "example.com/x"))
	h.target("dt", cls)
	h.g.Eventually(h.dtcPhase("claim"), eventually, poll).Should(Equal(appstudio.DeploymentTargetClaimPhaseBound))
	h.g.Expect(h.c.Get(h.ctx, h.key("claim"), dtc)).To(Succeed())
	h.g.Expect(dtc.Spec.TargetName).To(Equal("dt"))
	h.g.Expect(dtc.Annotations).To(HaveKeyWithValue(appstudio.AnnBindCompleted, "true"))
	h.g.Expect(dtc.Annotations).To(HaveKeyWithValue(appstudio.AnnBoundByController, "true"))
	h.g.Eventually(h.dtPhase("dt"), eventually, poll).Should(Equal(appstudio.DeploymentTargetPhaseBound))
	h.g.Eventually(h.dtPhase("other"), eventually, poll).Should(Equal(appstudio.DeploymentTargetPhaseAvailable))
	h.g.Eventually(h.ready("claim", &appstudio.DeploymentTargetClaim{}), eventually, poll).Should(Equal("True/Bound"))
	h.g.Eventually(h.ready("dt", &appstudio.DeploymentTarget{}), eventually, poll).Should(Equal("True/Bound"))
	h.g.Eventually(h.ready("other", &appstudio.DeploymentTarget{}), eventually, poll).Should(Equal("True/Available"))
	dt := &appstudio.DeploymentTarget{}
	h.g.Expect(h.c.Get(h.ctx, h.key("dt"), dt)).To(Succeed())
	h.g.Expect(dt.Spec.ClaimRef).To(Equal("claim"))

	// Retain: deleting the claim releases the target, which keeps its claimRef.
	h.g.Expect(h.c.Delete(h.ctx, dtc)).To(Succeed())
	h.g.Eventually(h.gone(dtc), eventually, poll).Should(BeTrue())
	h.g.Eventually(h.dtPhase("dt"), eventually, poll).Should(Equal(appstudio.DeploymentTargetPhaseReleased))
	h.g.Eventually(h.ready("dt", &appstudio.DeploymentTarget{}), eventually, poll).Should(Equal("False/Released"))
	h.g.Expect(h.c.Get(h.ctx, h.key("dt"), dt)).To(Succeed())
	h.g.Expect(dt.Spec.ClaimRef).To(Equal("claim"))

	// A new claim of the same name does not take the released target.
	h.create(&appstudio.DeploymentTargetClaim{ObjectMeta: metav1.ObjectMeta{Name: "claim"}, Spec: appstudio.DeploymentTargetClaimSpec{DeploymentTargetClassName: cls}})
	h.g.Eventually(h.dtcPhase("claim"), eventually, poll).Should(Equal(appstudio.DeploymentTargetClaimPhasePending))
	h.g.Consistently(h.dtcPhase("claim"), "1s", poll).Should(Equal(appstudio.DeploymentTargetClaimPhasePending))
	// Once an administrator clears claimRef, the target is Available and gets bound again.
	h.g.Expect(h.c.Get(h.ctx, h.key("dt"), dt)).To(Succeed())
	dt.Spec.ClaimRef = ""
	h.g.Expect(h.c.Update(h.ctx, dt)).To(Succeed())
	h.g.Eventually(h.dtcPhase("claim"), eventually, poll).Should(Equal(appstudio.DeploymentTargetClaimPhaseBound))
	h.g.Eventually(h.dtPhase("dt"), eventually, poll).Should(Equal(appstudio.DeploymentTargetPhaseBound))
}

func TestBinderDeleteAndUserChosenTarget(t *testing.T) {
	h := start(t)
	cls := h.class(appstudio.ReclaimPolicyDelete, "example.com/external")
	h.target("first", cls)
	h.target("chosen", cls)
	dtc := &appstudio.DeploymentTargetClaim{ObjectMeta: metav1.ObjectMeta{Name: "claim"},
		Spec: appstudio.DeploymentTargetClaimSpec{DeploymentTargetClassName: cls, TargetName: "chosen"}}
	h.create(dtc)
	h.g.Eventually(h.dtcPhase("claim"), eventually, poll).Should(Equal(appstudio.DeploymentTargetClaimPhaseBound))
	h.g.Eventually(h.dtPhase("chosen"), eventually, poll).Should(Equal(appstudio.DeploymentTargetPhaseBound))
	h.g.Expect(h.dtPhase("first")()).To(Equal(appstudio.DeploymentTargetPhaseAvailable))

	// Delete: deleting the claim deletes its target only.
	h.g.Expect(h.c.Delete(h.ctx, dtc)).To(Succeed())
	h.g.Eventually(h.gone(&appstudio.DeploymentTarget{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "chosen"}}), eventually, poll).Should(BeTrue())
	h.g.Eventually(h.gone(dtc), eventually, poll).Should(BeTrue())
	h.g.Expect(h.dtPhase("first")()).To(Equal(appstudio.DeploymentTargetPhaseAvailable))

	// A bound target that disappears leaves its claim Lost.
	dtc2 := &appstudio.DeploymentTargetClaim{ObjectMeta: metav1.ObjectMeta{Name: "claim2"}, Spec: appstudio.DeploymentTargetClaimSpec{DeploymentTargetClassName: cls}}
	h.create(dtc2)
	h.g.Eventually(h.dtcPhase("claim2"), eventually, poll).Should(Equal(appstudio.DeploymentTargetClaimPhaseBound))
	h.g.Expect(h.c.Delete(h.ctx, &appstudio.DeploymentTarget{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "first"}})).To(Succeed())
	h.g.Eventually(h.dtcPhase("claim2"), eventually, poll).Should(Equal(appstudio.DeploymentTargetClaimPhaseLost))
	h.g.Eventually(h.ready("claim2", &appstudio.DeploymentTargetClaim{}), eventually, poll).Should(Equal("False/TargetLost+Stalled"))
}

func TestTargetStuckTerminationFails(t *testing.T) {
	h := start(t, func(o *app.Options) { o.DeploymentTargetStuckTermination = 3 * time.Second })
	dt := &appstudio.DeploymentTarget{ObjectMeta: metav1.ObjectMeta{Name: "stuck", Finalizers: []string{appstudio.FinalizerDT}},
		Spec: appstudio.DeploymentTargetSpec{DeploymentTargetClassName: "cls", KubernetesClusterCredentials: appstudio.DeploymentTargetKubernetesClusterCredentials{
			DefaultNamespace: "ns", APIURL: "https://api.example.com:6443", ClusterCredentialsSecret: "s"}}}
	h.create(dt)
	h.g.Eventually(h.dtPhase("stuck"), eventually, poll).Should(Equal(appstudio.DeploymentTargetPhaseAvailable))

	// No provisioner removes the finalizer: after the (shortened) limit the target is Failed.
	h.g.Expect(h.c.Delete(h.ctx, dt)).To(Succeed())
	h.g.Consistently(h.dtPhase("stuck"), 2*time.Second, poll).Should(Equal(appstudio.DeploymentTargetPhaseAvailable))
	h.g.Eventually(h.dtPhase("stuck"), eventually, poll).Should(Equal(appstudio.DeploymentTargetPhaseFailed))
	h.g.Eventually(h.events("stuck", "Warning"), eventually, poll).Should(ContainElement("Failed"))
	got := &appstudio.DeploymentTarget{}
	h.g.Expect(h.c.Get(h.ctx, h.key("stuck"), got)).To(Succeed())
	ready := meta.FindStatusCondition(got.Status.Conditions, "Ready")
	h.g.Expect(ready).NotTo(BeNil())
	h.g.Expect(ready.Message).To(ContainSubstring("termination is stuck"))

	// Removing the finalizer lets it go.
	h.g.Eventually(func() error {
		if err := h.c.Get(h.ctx, h.key("stuck"), got); err != nil {
			return err
		}
		controllerutil.RemoveFinalizer(got, appstudio.FinalizerDT)
		return h.c.Update(h.ctx, got)
	}, eventually, poll).Should(Succeed())
	h.g.Eventually(h.gone(got), eventually, poll).Should(BeTrue())
}
