package app_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/appstudio-controller/app"
	"github.com/gitops-service/gitops-service/appstudio-controller/internal/provisioner"
)

// Attacks of one tenant on another through the namespace provisioner. Each ends at the
// victim's outcome: its provisioned namespace, and the namespaces a tenant can get.

// intact fails unless the namespace stays there, not being deleted, for a few seconds.
func (h *harness) intact(name string) {
	h.t.Helper()
	h.g.Consistently(func() error {
		ns := &corev1.Namespace{}
		if err := h.c.Get(h.ctx, client.ObjectKey{Name: name}, ns); err != nil {
			return err
		}
		if !ns.DeletionTimestamp.IsZero() {
			return fmt.Errorf("namespace %s is being deleted", name)
		}
		return nil
	}, 5*time.Second, poll).Should(Succeed(), "namespace %s is intact", name)
}

// A DeploymentTarget that a tenant writes itself, with the provisioner's annotation and
// finalizer and another tenant's provisioned namespace as its default namespace, deletes
// nothing when the tenant deletes it.
func TestAttackForgedTargetDeletesNoNamespace(t *testing.T) {
	h := start(t, withProvisioner)
	_, victim := h.provision(appstudio.ReclaimPolicyDelete)
	victimNS := victim.Spec.KubernetesClusterCredentials.DefaultNamespace

	forged := &appstudio.DeploymentTarget{
		ObjectMeta: metav1.ObjectMeta{Namespace: h.other, Name: "forged",
			Annotations: map[string]string{appstudio.AnnDynamicallyProvisioned: provisioner.Name},
			Finalizers:  []string{appstudio.FinalizerDT}},
		Spec: appstudio.DeploymentTargetSpec{DeploymentTargetClassName: "any", KubernetesClusterCredentials: appstudio.DeploymentTargetKubernetesClusterCredentials{
			DefaultNamespace: victimNS, APIURL: cp.Config.Host, ClusterCredentialsSecret: "s"}},
	}
	h.create(forged)
	h.g.Expect(h.c.Delete(h.ctx, forged)).To(Succeed())
	h.g.Eventually(h.gone(forged), eventually, poll).Should(BeTrue(), "the finalizer goes")
	h.intact(victimNS)
}

// A tenant's own provisioned DeploymentTarget, pointed at another tenant's provisioned
// namespace and then released, deletes its own namespace and not the other's.
func TestAttackRepointedTargetDeletesOnlyItsOwnNamespace(t *testing.T) {
	h := start(t, withProvisioner)
	_, victim := h.provision(appstudio.ReclaimPolicyDelete)
	victimNS := victim.Spec.KubernetesClusterCredentials.DefaultNamespace

	attacker := &harness{t: t, g: h.g, c: h.c, ctx: h.ctx, ns: h.other}
	claim, own := attacker.provisionNamed("mine", appstudio.ReclaimPolicyDelete)
	ownNS := own.Spec.KubernetesClusterCredentials.DefaultNamespace
	patch := client.MergeFrom(own.DeepCopy())
	own.Spec.KubernetesClusterCredentials.DefaultNamespace = victimNS
	if err := h.c.Patch(h.ctx, own, patch); err == nil {
		t.Log("the provisioned target was pointed at the other tenant's namespace")
	} else {
		t.Logf("pointing the provisioned target elsewhere was refused: %v", err)
	}
	h.g.Expect(h.c.Delete(h.ctx, claim)).To(Succeed())
	h.g.Eventually(h.gone(own), eventually, poll).Should(BeTrue())
	h.g.Eventually(func() bool {
		ns := &corev1.Namespace{}
		err := h.c.Get(h.ctx, client.ObjectKey{Name: ownNS}, ns)
		return apierrors.IsNotFound(err) || (err == nil && !ns.DeletionTimestamp.IsZero())
	}, eventually, poll).Should(BeTrue(), "the attacker's own namespace goes")
	h.intact(victimNS)
}

// A claim that its tenant annotates for the provisioner itself gets no namespace unless its
// class names the provisioner: not under a class that does not exist, nor under another
// provisioner's class.
func TestAttackSelfAnnotatedClaimProvisionsNothing(t *testing.T) {
	h := start(t, withProvisioner)
	for name, class := range map[string]appstudio.DeploymentTargetClassName{
		"missing-class": "does-not-exist",
		"other-class":   h.class(appstudio.ReclaimPolicyDelete, "example.com/another-provisioner"),
	} {
		h.create(&appstudio.DeploymentTargetClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{appstudio.AnnTargetProvisioner: provisioner.Name}},
			Spec:       appstudio.DeploymentTargetClaimSpec{DeploymentTargetClassName: class},
		})
	}
	h.g.Consistently(func() ([]string, error) {
		list := &corev1.NamespaceList{}
		err := h.c.List(h.ctx, list, client.HasLabels{provisioner.LabelClaimUID})
		var provisioned []string
		for _, ns := range list.Items {
			if strings.HasPrefix(ns.Name, h.ns+"-dt-") {
				provisioned = append(provisioned, ns.Name)
			}
		}
		return provisioned, err
	}, 5*time.Second, poll).Should(BeEmpty(), "no namespace provisioned for the tenant")
}

// A tenant gets at most the configured number of provisioned namespaces; a claim past it is
// told why, and is provisioned once the tenant releases one.
func TestProvisionedNamespacesPerTenantAreCapped(t *testing.T) {
	h := start(t, withProvisioner, func(o *app.Options) { o.ProvisionerMaxNamespaces = 1 })
	first, _ := h.provisionNamed("first", appstudio.ReclaimPolicyDelete)
	cls := first.Spec.DeploymentTargetClassName
	h.create(&appstudio.DeploymentTargetClaim{ObjectMeta: metav1.ObjectMeta{Name: "second"},
		Spec: appstudio.DeploymentTargetClaimSpec{DeploymentTargetClassName: cls}})
	h.g.Eventually(func() string {
		dtc := &appstudio.DeploymentTargetClaim{}
		if err := h.c.Get(h.ctx, h.key("second"), dtc); err != nil {
			return err.Error()
		}
		for _, c := range dtc.Status.Conditions {
			if c.Type == appstudio.DeploymentTargetClaimConditionProvisioned {
				return c.Reason + ": " + c.Message
			}
		}
		return ""
	}, eventually, poll).Should(And(HavePrefix(appstudio.DeploymentTargetClaimReasonProvisioningLimitReached),
		ContainSubstring("at most 1 provisioned namespace")))
	h.g.Consistently(h.dtcPhase("second"), 3*time.Second, poll).Should(Equal(appstudio.DeploymentTargetClaimPhasePending))

	h.g.Expect(h.c.Delete(h.ctx, first)).To(Succeed())
	h.g.Eventually(h.dtcPhase("second"), 2*eventually, poll).Should(Equal(appstudio.DeploymentTargetClaimPhaseBound))
}
