package app_test

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/appstudio-controller/app"
	"github.com/gitops-service/gitops-service/appstudio-controller/internal/provisioner"
)

func withProvisioner(o *app.Options) { o.ProvisionerAPIServerURL = cp.Config.Host }

// provision creates a claim called "claim" of a class of the namespace provisioner and
// waits until it is bound.
func (h *harness) provision(policy appstudio.ReclaimPolicy) (*appstudio.DeploymentTargetClaim, *appstudio.DeploymentTarget) {
	return h.provisionNamed("claim", policy)
}

func (h *harness) provisionNamed(name string, policy appstudio.ReclaimPolicy) (*appstudio.DeploymentTargetClaim, *appstudio.DeploymentTarget) {
	cls := h.class(policy, provisioner.Name)
	dtc := &appstudio.DeploymentTargetClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appstudio.DeploymentTargetClaimSpec{DeploymentTargetClassName: cls}}
	h.create(dtc)
	h.g.Eventually(h.dtcPhase(name), eventually, poll).Should(Equal(appstudio.DeploymentTargetClaimPhaseBound))
	h.g.Expect(h.c.Get(h.ctx, h.key(name), dtc)).To(Succeed())
	dt := &appstudio.DeploymentTarget{}
	h.g.Expect(h.c.Get(h.ctx, h.key(dtc.Spec.TargetName), dt)).To(Succeed())
	h.g.Eventually(h.dtPhase(dt.Name), eventually, poll).Should(Equal(appstudio.DeploymentTargetPhaseBound))
	return dtc, dt
}

func TestNamespaceProvisionerDelete(t *testing.T) {
	h := start(t, withProvisioner)
	dtc, dt := h.provision(appstudio.ReclaimPolicyDelete)
	h.g.Expect(dtc.Annotations).To(HaveKeyWithValue(appstudio.AnnTargetProvisioner, provisioner.Name))
	h.g.Expect(dt.Annotations).To(HaveKeyWithValue(appstudio.AnnDynamicallyProvisioned, provisioner.Name))
	h.g.Expect(dt.Spec.ClaimRef).To(Equal("claim"))
	target := dt.Spec.KubernetesClusterCredentials.DefaultNamespace
	h.g.Expect(dt.Spec.KubernetesClusterCredentials.APIURL).To(Equal(cp.Config.Host))

	secret := &corev1.Secret{}
	h.g.Expect(h.c.Get(h.ctx, h.key(dt.Spec.KubernetesClusterCredentials.ClusterCredentialsSecret), secret)).To(Succeed())
	h.g.Expect(secret.Type).To(Equal(v1.ManagedEnvironmentSecretType))

	// The token works in the provisioned namespace, and only there.
	restCfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data["kubeconfig"])
	h.g.Expect(err).NotTo(HaveOccurred())
	sa, err := client.New(restCfg, client.Options{Scheme: cp.Scheme})
	h.g.Expect(err).NotTo(HaveOccurred())
	h.g.Expect(sa.Create(h.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: target, Name: "cm"}})).To(Succeed())
	err = sa.Create(h.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "cm"}})
	h.g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "got %v", err)
	// Argo CD lists and watches every namespaced kind there, podtemplates included (which
	// the built-in admin role leaves out).
	h.g.Expect(sa.List(h.ctx, &corev1.PodTemplateList{}, client.InNamespace(target))).To(Succeed())

	// An Environment on the claim deploys through the provisioned credentials.
	h.create(&appstudio.Environment{ObjectMeta: metav1.ObjectMeta{Name: "ephemeral"}, Spec: appstudio.EnvironmentSpec{
		Configuration: appstudio.EnvironmentConfiguration{Target: &appstudio.EnvironmentTarget{
			DeploymentTargetClaim: appstudio.DeploymentTargetClaimConfig{ClaimName: "claim"}}}}})
	me := &v1.GitOpsDeploymentManagedEnvironment{}
	h.g.Eventually(h.get("managed-environment-ephemeral", me), eventually, poll).Should(Succeed())
	h.g.Expect(me.Spec).To(Equal(v1.GitOpsDeploymentManagedEnvironmentSpec{
		APIURL: cp.Config.Host, ClusterCredentialsSecret: secret.Name, Namespaces: []string{target}}))

	// Delete: the claim's deletion deletes the target, its namespace and its Secret.
	h.g.Expect(h.c.Delete(h.ctx, dtc)).To(Succeed())
	h.g.Eventually(h.gone(dt), eventually, poll).Should(BeTrue())
	h.g.Eventually(func() bool {
		ns := &corev1.Namespace{}
		err := h.c.Get(h.ctx, client.ObjectKey{Name: target}, ns)
		return apierrors.IsNotFound(err) || (err == nil && !ns.DeletionTimestamp.IsZero())
	}, eventually, poll).Should(BeTrue())
	h.g.Eventually(h.gone(secret), eventually, poll).Should(BeTrue())
}

// A claim whose name, cut to fit the names made from it, ends in a dot is provisioned too.
func TestNamespaceProvisionerLongClaimName(t *testing.T) {
	h := start(t, withProvisioner)
	name := strings.Repeat("c", 199) + ".d"
	_, dt := h.provisionNamed(name, appstudio.ReclaimPolicyDelete)
	h.g.Expect(dt.Spec.ClaimRef).To(Equal(name))
	ns := &corev1.Namespace{}
	h.g.Expect(h.c.Get(h.ctx, client.ObjectKey{Name: dt.Spec.KubernetesClusterCredentials.DefaultNamespace}, ns)).To(Succeed())
}

func TestNamespaceProvisionerRetain(t *testing.T) {
	h := start(t, withProvisioner)
	dtc, dt := h.provision(appstudio.ReclaimPolicyRetain)
	target := dt.Spec.KubernetesClusterCredentials.DefaultNamespace
	h.g.Expect(h.c.Delete(h.ctx, dtc)).To(Succeed())
	h.g.Eventually(h.gone(dtc), eventually, poll).Should(BeTrue())
	h.g.Eventually(h.dtPhase(dt.Name), eventually, poll).Should(Equal(appstudio.DeploymentTargetPhaseReleased))
	ns := &corev1.Namespace{}
	h.g.Expect(h.c.Get(h.ctx, client.ObjectKey{Name: target}, ns)).To(Succeed())
	h.g.Expect(ns.DeletionTimestamp.IsZero()).To(BeTrue())
	h.g.Expect(h.c.Get(h.ctx, h.key(dt.Spec.KubernetesClusterCredentials.ClusterCredentialsSecret), &corev1.Secret{})).To(Succeed())
}
