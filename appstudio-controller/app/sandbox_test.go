package app_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	toolchain "github.com/gitops-service/gitops-service/api/toolchain/v1alpha1"
	"github.com/gitops-service/gitops-service/appstudio-controller/app"
	"github.com/gitops-service/gitops-service/appstudio-controller/internal/sandbox"
)

func withSandbox(o *app.Options) { o.SandboxProvisioner = true }

// sandboxFinalizer is what the test, playing the Developer Sandbox, puts on SpaceRequests to
// see that a DeploymentTarget waits for the release of its space.
const sandboxFinalizer = "test.toolchain.dev.openshift.com/space"

// spaceRequest waits for the SpaceRequest provisioned for claim and returns it.
func (h *harness) spaceRequest(claim string) *toolchain.SpaceRequest {
	h.t.Helper()
	dtc := &appstudio.DeploymentTargetClaim{}
	h.g.Expect(h.c.Get(h.ctx, h.key(claim), dtc)).To(Succeed())
	sr := &toolchain.SpaceRequest{}
	h.g.Eventually(func() int {
		list := &toolchain.SpaceRequestList{}
		h.g.Expect(h.c.List(h.ctx, list, client.InNamespace(h.ns), client.MatchingLabels{sandbox.LabelClaimUID: string(dtc.UID)})).To(Succeed())
		if len(list.Items) == 1 {
			*sr = list.Items[0]
		}
		return len(list.Items)
	}, eventually, poll).Should(Equal(1))
	h.g.Expect(sr.Labels).To(HaveKeyWithValue(sandbox.LabelClaimName, claim))
	h.g.Expect(metav1.IsControlledBy(sr, dtc)).To(BeTrue(), "SpaceRequest owned by the claim: %v", sr.OwnerReferences)
	h.g.Expect(sr.Spec.TierName).To(Equal(sandbox.DefaultTierName))
	return sr
}

// setSpaceStatus writes a SpaceRequest's status as the sandbox would.
func (h *harness) setSpaceStatus(name string, st toolchain.SpaceRequestStatus) {
	h.t.Helper()
	h.g.Eventually(func() error {
		sr := &toolchain.SpaceRequest{}
		if err := h.c.Get(h.ctx, h.key(name), sr); err != nil {
			return err
		}
		sr.Status = st
		return h.c.Status().Update(h.ctx, sr)
	}, eventually, poll).Should(Succeed())
}

// updateSpaceRequest applies change to the current sr and updates it, retrying on conflicts.
func (h *harness) updateSpaceRequest(sr *toolchain.SpaceRequest, change func()) {
	h.t.Helper()
	h.g.Eventually(func() error {
		if err := h.c.Get(h.ctx, client.ObjectKeyFromObject(sr), sr); err != nil {
			return err
		}
		change()
		return h.c.Update(h.ctx, sr)
	}, eventually, poll).Should(Succeed())
}

func ready(status toolchain.ConditionStatus, reason, msg string) []toolchain.Condition {
	return []toolchain.Condition{{Type: toolchain.ConditionReady, Status: status, Reason: reason, Message: msg, LastTransitionTime: metav1.Now()}}
}

// provisionedCondition returns the claim's Provisioned condition.
func (h *harness) provisionedCondition(claim string) func() *metav1.Condition {
	return func() *metav1.Condition {
		dtc := &appstudio.DeploymentTargetClaim{}
		_ = h.c.Get(h.ctx, h.key(claim), dtc)
		return meta.FindStatusCondition(dtc.Status.Conditions, appstudio.DeploymentTargetClaimConditionProvisioned)
	}
}

// events returns the reasons of the events of type typ about the object name.
func (h *harness) events(name, typ string) func() []string {
	return func() []string {
		list := &corev1.EventList{}
		h.g.Expect(h.c.List(h.ctx, list, client.InNamespace(h.ns))).To(Succeed())
		var out []string
		for _, e := range list.Items {
			if e.InvolvedObject.Name == name && e.Type == typ {
				out = append(out, e.Reason)
			}
		}
		return out
	}
}

// playSandbox provisions a space for a SpaceRequest as the sandbox would: a namespace, a
// kubeconfig Secret in the tenant namespace, and a Ready status pointing at them.
func (h *harness) playSandbox(sr *toolchain.SpaceRequest) (namespace, secret string) {
	h.t.Helper()
	namespace = cp.NewNamespace(h.t, "space-")
	secret = sr.Name + "-kubeconfig"
	h.secret(secret, v1.ManagedEnvironmentSecretType)
	h.setSpaceStatus(sr.Name, toolchain.SpaceRequestStatus{
		TargetClusterURL: cp.Config.Host,
		NamespaceAccess:  []toolchain.NamespaceAccess{{Name: namespace, SecretRef: secret}},
		Conditions:       ready(toolchain.ConditionTrue, toolchain.ReasonProvisioned, ""),
	})
	return namespace, secret
}

func TestSandboxProvisionerDelete(t *testing.T) {
	h := start(t, withSandbox)
	cls := h.class(appstudio.ReclaimPolicyDelete, sandbox.Name)
	dtc := &appstudio.DeploymentTargetClaim{ObjectMeta: metav1.ObjectMeta{Name: "claim"}, Spec: appstudio.DeploymentTargetClaimSpec{DeploymentTargetClassName: cls}}
	h.create(dtc)
	sr := h.spaceRequest("claim")
	h.g.Expect(h.dtcPhase("claim")()).NotTo(Equal(appstudio.DeploymentTargetClaimPhaseBound))

	// A failing SpaceRequest is reported on the claim (condition and Warning Event).
	h.setSpaceStatus(sr.Name, toolchain.SpaceRequestStatus{Conditions: ready(toolchain.ConditionFalse, "UnableToCreateSpace", "tier appstudio-env not found")})
	h.g.Eventually(h.provisionedCondition("claim"), eventually, poll).Should(And(
		withReason(metav1.ConditionFalse, appstudio.DeploymentTargetClaimReasonSpaceRequestFailed),
		WithTransform(func(c *metav1.Condition) string { return c.Message },
			And(ContainSubstring(sr.Name), ContainSubstring("UnableToCreateSpace"), ContainSubstring("tier appstudio-env not found")))))
	h.g.Eventually(h.events("claim", corev1.EventTypeWarning), eventually, poll).Should(ContainElement(appstudio.DeploymentTargetClaimReasonSpaceRequestFailed))
	list := &appstudio.DeploymentTargetList{}
	h.g.Expect(h.c.List(h.ctx, list, client.InNamespace(h.ns))).To(Succeed())
	h.g.Expect(list.Items).To(BeEmpty())

	// The sandbox recovers: the claim is bound to the provisioned target.
	h.updateSpaceRequest(sr, func() { controllerutil.AddFinalizer(sr, sandboxFinalizer) })
	ns, secret := h.playSandbox(sr)
	h.g.Eventually(h.dtcPhase("claim"), eventually, poll).Should(Equal(appstudio.DeploymentTargetClaimPhaseBound))
	h.g.Expect(h.c.Get(h.ctx, h.key("claim"), dtc)).To(Succeed())
	dt := &appstudio.DeploymentTarget{}
	h.g.Expect(h.c.Get(h.ctx, h.key(dtc.Spec.TargetName), dt)).To(Succeed())
	h.g.Expect(dt.Annotations).To(HaveKeyWithValue(appstudio.AnnDynamicallyProvisioned, sandbox.Name))
	h.g.Expect(dt.Spec.ClaimRef).To(Equal("claim"))
	h.g.Expect(dt.Spec.KubernetesClusterCredentials).To(Equal(appstudio.DeploymentTargetKubernetesClusterCredentials{
		APIURL: cp.Config.Host, DefaultNamespace: ns, ClusterCredentialsSecret: secret}))
	h.g.Eventually(h.provisionedCondition("claim"), eventually, poll).Should(withReason(metav1.ConditionTrue, appstudio.DeploymentTargetClaimReasonProvisioned))
	h.g.Eventually(func() bool {
		h.g.Expect(h.c.Get(h.ctx, client.ObjectKeyFromObject(sr), sr)).To(Succeed())
		return metav1.IsControlledBy(sr, dt)
	}, eventually, poll).Should(BeTrue())

	// An Environment on the claim deploys through the sandbox's credentials.
	h.create(&appstudio.Environment{ObjectMeta: metav1.ObjectMeta{Name: "ephemeral"}, Spec: appstudio.EnvironmentSpec{
		Configuration: appstudio.EnvironmentConfiguration{Target: &appstudio.EnvironmentTarget{
			DeploymentTargetClaim: appstudio.DeploymentTargetClaimConfig{ClaimName: "claim"}}}}})
	me := &v1.GitOpsDeploymentManagedEnvironment{}
	h.g.Eventually(h.get("managed-environment-ephemeral", me), eventually, poll).Should(Succeed())
	h.g.Expect(me.Spec).To(Equal(v1.GitOpsDeploymentManagedEnvironmentSpec{
		APIURL: cp.Config.Host, ClusterCredentialsSecret: secret, Namespaces: []string{ns}}))

	// Delete: deleting the claim deletes the target, which deletes the SpaceRequest and waits
	// until the sandbox has released the space.
	h.g.Expect(h.c.Delete(h.ctx, dtc)).To(Succeed())
	h.g.Eventually(func() bool {
		h.g.Expect(h.c.Get(h.ctx, client.ObjectKeyFromObject(sr), sr)).To(Succeed())
		return !sr.DeletionTimestamp.IsZero()
	}, eventually, poll).Should(BeTrue())
	h.g.Consistently(func() error { return h.c.Get(h.ctx, client.ObjectKeyFromObject(dt), dt) }, 2*time.Second, poll).Should(Succeed())
	h.g.Expect(dt.DeletionTimestamp.IsZero()).To(BeFalse())
	h.updateSpaceRequest(sr, func() { controllerutil.RemoveFinalizer(sr, sandboxFinalizer) })
	h.g.Eventually(h.gone(sr), eventually, poll).Should(BeTrue())
	h.g.Eventually(h.gone(dt), eventually, poll).Should(BeTrue())
}

func TestSandboxProvisionerRetain(t *testing.T) {
	h := start(t, withSandbox)
	cls := h.class(appstudio.ReclaimPolicyRetain, sandbox.Name)
	dtc := &appstudio.DeploymentTargetClaim{ObjectMeta: metav1.ObjectMeta{Name: "claim"}, Spec: appstudio.DeploymentTargetClaimSpec{DeploymentTargetClassName: cls}}
	h.create(dtc)
	sr := h.spaceRequest("claim")
	h.g.Eventually(h.provisionedCondition("claim"), eventually, poll).Should(withReason(metav1.ConditionFalse, appstudio.DeploymentTargetClaimReasonWaitingForSpaceRequest))

	// Still provisioning: nothing changes.
	h.setSpaceStatus(sr.Name, toolchain.SpaceRequestStatus{Conditions: ready(toolchain.ConditionFalse, toolchain.ReasonProvisioning, "")})
	h.g.Consistently(h.provisionedCondition("claim"), 2*time.Second, poll).Should(withReason(metav1.ConditionFalse, appstudio.DeploymentTargetClaimReasonWaitingForSpaceRequest))

	// Ready without credentials: reported, no target.
	h.setSpaceStatus(sr.Name, toolchain.SpaceRequestStatus{TargetClusterURL: cp.Config.Host, Conditions: ready(toolchain.ConditionTrue, toolchain.ReasonProvisioned, "")})
	h.g.Eventually(h.provisionedCondition("claim"), eventually, poll).Should(withReason(metav1.ConditionFalse, appstudio.DeploymentTargetClaimReasonInvalidSpaceRequestStatus))
	h.g.Eventually(h.events("claim", corev1.EventTypeWarning), eventually, poll).Should(ContainElement(appstudio.DeploymentTargetClaimReasonInvalidSpaceRequestStatus))
	h.g.Expect(h.dtcPhase("claim")()).To(Equal(appstudio.DeploymentTargetClaimPhasePending))

	h.playSandbox(sr)
	h.g.Eventually(h.dtcPhase("claim"), eventually, poll).Should(Equal(appstudio.DeploymentTargetClaimPhaseBound))
	h.g.Expect(h.c.Get(h.ctx, h.key("claim"), dtc)).To(Succeed())
	dt := &appstudio.DeploymentTarget{}
	h.g.Expect(h.c.Get(h.ctx, h.key(dtc.Spec.TargetName), dt)).To(Succeed())
	h.g.Eventually(h.dtPhase(dt.Name), eventually, poll).Should(Equal(appstudio.DeploymentTargetPhaseBound))
	h.g.Eventually(func() bool {
		h.g.Expect(h.c.Get(h.ctx, client.ObjectKeyFromObject(sr), sr)).To(Succeed())
		return metav1.IsControlledBy(sr, dt) && len(sr.OwnerReferences) == 1
	}, eventually, poll).Should(BeTrue())

	// Retain: the claim goes, the target is released and keeps its SpaceRequest.
	h.g.Expect(h.c.Delete(h.ctx, dtc)).To(Succeed())
	h.g.Eventually(h.gone(dtc), eventually, poll).Should(BeTrue())
	h.g.Eventually(h.dtPhase(dt.Name), eventually, poll).Should(Equal(appstudio.DeploymentTargetPhaseReleased))
	h.g.Consistently(func() bool {
		h.g.Expect(h.c.Get(h.ctx, client.ObjectKeyFromObject(sr), sr)).To(Succeed())
		return sr.DeletionTimestamp.IsZero()
	}, 3*time.Second, poll).Should(BeTrue())
	h.g.Expect(h.c.Get(h.ctx, client.ObjectKeyFromObject(dt), dt)).To(Succeed())
	h.g.Expect(dt.DeletionTimestamp.IsZero()).To(BeTrue())
}

// A claim deleted before its space is provisioned takes its SpaceRequest with it.
func TestSandboxProvisionerClaimDeletedEarly(t *testing.T) {
	h := start(t, withSandbox)
	cls := h.class(appstudio.ReclaimPolicyRetain, sandbox.Name)
	dtc := &appstudio.DeploymentTargetClaim{ObjectMeta: metav1.ObjectMeta{Name: "claim"}, Spec: appstudio.DeploymentTargetClaimSpec{DeploymentTargetClassName: cls}}
	h.create(dtc)
	sr := h.spaceRequest("claim")
	h.g.Expect(h.c.Delete(h.ctx, dtc)).To(Succeed())
	h.g.Eventually(h.gone(dtc), eventually, poll).Should(BeTrue())
	h.g.Eventually(h.gone(sr), eventually, poll).Should(BeTrue())
}
