package app_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
)

func (h *harness) envCondition(name string) func() *metav1.Condition {
	return func() *metav1.Condition {
		env := &appstudio.Environment{}
		if err := h.c.Get(h.ctx, h.key(name), env); err != nil {
			return nil
		}
		return meta.FindStatusCondition(env.Status.Conditions, "ErrorOccurred")
	}
}

func withReason(status metav1.ConditionStatus, reason string) OmegaMatcher {
	return And(Not(BeNil()), WithTransform(func(c *metav1.Condition) string { return string(c.Status) + "/" + c.Reason }, Equal(string(status)+"/"+reason)))
}

// connected writes a managed environment's status as the backend does once it has connected
// the current spec to the cluster.
func (h *harness) connected(name string) {
	h.t.Helper()
	h.g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		me := &v1.GitOpsDeploymentManagedEnvironment{}
		if err := h.c.Get(h.ctx, h.key(name), me); err != nil {
			return err
		}
		me.Status.ObservedGeneration = me.Generation
		meta.SetStatusCondition(&me.Status.Conditions, metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue,
			Reason: "Succeeded", Message: "Connected to the cluster", ObservedGeneration: me.Generation})
		return h.c.Status().Update(h.ctx, me)
	})).To(Succeed())
}

func credsEnv(name, secret string) *appstudio.Environment {
	return &appstudio.Environment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appstudio.EnvironmentSpec{
			DeploymentStrategy: appstudio.DeploymentStrategyManual,
			UnstableConfigurationFields: &appstudio.UnstableEnvironmentConfiguration{
				KubernetesClusterCredentials: appstudio.KubernetesClusterCredentials{
					APIURL: "https://api.example.com:6443", TargetNamespace: "my-ns", ClusterCredentialsSecret: secret,
					AllowInsecureSkipTLSVerify: true, Namespaces: []string{"a", "b"}, ClusterResources: true,
				},
			},
		},
	}
}

func TestEnvironmentWithCredentials(t *testing.T) {
	h := start(t)
	env := credsEnv("staging", "creds")
	h.create(env)

	h.g.Eventually(h.envCondition("staging"), eventually, poll).Should(withReason(metav1.ConditionTrue, "MissingCredentialsSecret"))
	h.g.Eventually(h.ready("staging", &appstudio.Environment{}), eventually, poll).Should(Equal("False/MissingCredentialsSecret+Stalled"))
	h.g.Expect(h.c.Get(h.ctx, h.key("managed-environment-staging"), &v1.GitOpsDeploymentManagedEnvironment{})).NotTo(Succeed())

	h.secret("creds", v1.ManagedEnvironmentSecretType)
	me := &v1.GitOpsDeploymentManagedEnvironment{}
	h.g.Eventually(h.get("managed-environment-staging", me), eventually, poll).Should(Succeed())
	h.g.Expect(me.Spec).To(Equal(v1.GitOpsDeploymentManagedEnvironmentSpec{
		APIURL: "https://api.example.com:6443", ClusterCredentialsSecret: "creds", AllowInsecureSkipTLSVerify: true,
		Namespaces: []string{"a", "b"}, ClusterResources: true,
	}))
	h.g.Expect(metav1.IsControlledBy(me, env)).To(BeTrue())
	h.g.Eventually(h.envCondition("staging"), eventually, poll).Should(withReason(metav1.ConditionFalse, "ErrorOccurredResolved"))

	// Ready once the backend has connected the managed environment.
	h.g.Eventually(h.ready("staging", &appstudio.Environment{}), eventually, poll).Should(Equal("False/ConnectingToCluster+Reconciling"))
	h.connected(me.Name)
	h.g.Eventually(h.ready("staging", &appstudio.Environment{}), eventually, poll).Should(Equal("True/ClusterConnected"))
	h.g.Expect(h.c.Get(h.ctx, h.key("staging"), env)).To(Succeed())
	h.g.Expect(env.Status.ObservedGeneration).To(Equal(env.Generation))
	h.g.Expect(h.c.Get(h.ctx, h.key(me.Name), me)).To(Succeed())

	// Drift is reverted.
	me.Spec.APIURL = "https://other.example.com"
	h.g.Expect(h.c.Update(h.ctx, me)).To(Succeed())
	h.g.Eventually(func() string {
		_ = h.c.Get(h.ctx, h.key(me.Name), me)
		return me.Spec.APIURL
	}, eventually, poll).Should(Equal("https://api.example.com:6443"))

	// Both a claim and credentials: a clear condition, and what works is kept.
	// (Retried: the drift revert above moves the Environment's Ready, a status write.)
	h.updateEnv("staging", func(env *appstudio.Environment) {
		env.Spec.Configuration.Target = &appstudio.EnvironmentTarget{DeploymentTargetClaim: appstudio.DeploymentTargetClaimConfig{ClaimName: "x"}}
	})
	h.g.Eventually(h.envCondition("staging"), eventually, poll).Should(withReason(metav1.ConditionTrue, "InvalidEnvironment"))
	h.g.Eventually(h.ready("staging", &appstudio.Environment{}), eventually, poll).Should(Equal("False/InvalidEnvironment+Stalled"))
	h.g.Expect(h.c.Get(h.ctx, h.key(me.Name), me)).To(Succeed())

	// Neither: deploys into its own namespace, the managed environment goes.
	h.updateEnv("staging", func(env *appstudio.Environment) {
		env.Spec.Configuration.Target = nil
		env.Spec.UnstableConfigurationFields = nil
	})
	h.g.Eventually(h.gone(me), eventually, poll).Should(BeTrue())
	h.g.Eventually(h.envCondition("staging"), eventually, poll).Should(withReason(metav1.ConditionFalse, "ErrorOccurredResolved"))
	h.g.Eventually(h.ready("staging", &appstudio.Environment{}), eventually, poll).Should(Equal("True/DeploysToOwnNamespace"))

	// Deleting the Environment deletes what it created (garbage collection).
	env2 := credsEnv("prod", "creds")
	h.create(env2)
	me2 := &v1.GitOpsDeploymentManagedEnvironment{}
	h.g.Eventually(h.get("managed-environment-prod", me2), eventually, poll).Should(Succeed())
	h.g.Expect(h.c.Delete(h.ctx, env2)).To(Succeed())
	h.g.Eventually(h.gone(me2), eventually, poll).Should(BeTrue())
}

func TestEnvironmentWithClaim(t *testing.T) {
	h := start(t)
	h.g.Expect(h.c.Create(h.ctx, &appstudio.DeploymentTargetClass{
		ObjectMeta: metav1.ObjectMeta{Name: "cls-" + h.ns},
		Spec:       appstudio.DeploymentTargetClassSpec{Provisioner: "example.com/none", ReclaimPolicy: appstudio.ReclaimPolicyRetain},
	})).To(Succeed())
	cls := appstudio.DeploymentTargetClassName("cls-" + h.ns)

	env := &appstudio.Environment{ObjectMeta: metav1.ObjectMeta{Name: "dev"}, Spec: appstudio.EnvironmentSpec{
		Configuration: appstudio.EnvironmentConfiguration{Target: &appstudio.EnvironmentTarget{
			DeploymentTargetClaim: appstudio.DeploymentTargetClaimConfig{ClaimName: "dev-dtc"}}},
	}}
	h.create(env)
	h.g.Eventually(h.envCondition("dev"), eventually, poll).Should(withReason(metav1.ConditionTrue, "DeploymentTargetClaimNotFound"))

	h.create(&appstudio.DeploymentTargetClaim{ObjectMeta: metav1.ObjectMeta{Name: "dev-dtc"}, Spec: appstudio.DeploymentTargetClaimSpec{DeploymentTargetClassName: cls}})
	h.g.Eventually(h.envCondition("dev"), eventually, poll).Should(withReason(metav1.ConditionTrue, "DeploymentTargetClaimNotBound"))

	// A target whose Secret is not a managed-environment Secret: it is copied.
	h.secret("dt-secret", corev1.SecretTypeOpaque)
	h.create(&appstudio.DeploymentTarget{ObjectMeta: metav1.ObjectMeta{Name: "dev-dt"}, Spec: appstudio.DeploymentTargetSpec{
		DeploymentTargetClassName: cls,
		KubernetesClusterCredentials: appstudio.DeploymentTargetKubernetesClusterCredentials{
			DefaultNamespace: "team-dev", APIURL: "https://api.dev.example.com:6443", ClusterCredentialsSecret: "dt-secret"},
	}})
	me := &v1.GitOpsDeploymentManagedEnvironment{}
	h.g.Eventually(h.get("managed-environment-dev", me), eventually, poll).Should(Succeed())
	h.g.Expect(me.Spec).To(Equal(v1.GitOpsDeploymentManagedEnvironmentSpec{
		APIURL: "https://api.dev.example.com:6443", ClusterCredentialsSecret: "managed-environment-secret-dev", Namespaces: []string{"team-dev"},
	}))
	copied := &corev1.Secret{}
	h.g.Expect(h.c.Get(h.ctx, h.key("managed-environment-secret-dev"), copied)).To(Succeed())
	h.g.Expect(copied.Type).To(Equal(v1.ManagedEnvironmentSecretType))
	h.g.Expect(copied.Data).To(HaveKeyWithValue("kubeconfig", []byte("apiVersion: v1\nkind: Config\n")))
	h.g.Expect(metav1.IsControlledBy(copied, env)).To(BeTrue())
	h.g.Eventually(h.envCondition("dev"), eventually, poll).Should(withReason(metav1.ConditionFalse, "ErrorOccurredResolved"))

	h.g.Expect(h.c.Delete(h.ctx, env)).To(Succeed())
	h.g.Eventually(h.gone(me), eventually, poll).Should(BeTrue())
	h.g.Eventually(h.gone(copied), eventually, poll).Should(BeTrue())
}

func TestEnvironmentDeploymentTargetNotFound(t *testing.T) {
	h := start(t)
	// A claim still Bound to a target that is gone. The binder marks such a claim Lost at
	// once, unless the claim is being deleted (it then only finalizes): hold it in deletion
	// with a finalizer of our own, and write the phase the binder no longer touches.
	const hold = "test.gitops-service.example.com/hold"
	dtc := &appstudio.DeploymentTargetClaim{ObjectMeta: metav1.ObjectMeta{Name: "dev-dtc", Finalizers: []string{hold}},
		Spec: appstudio.DeploymentTargetClaimSpec{DeploymentTargetClassName: "none", TargetName: "ghost"}}
	h.create(dtc)
	t.Cleanup(func() {
		_ = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := h.c.Get(h.ctx, h.key("dev-dtc"), dtc); err != nil {
				return client.IgnoreNotFound(err)
			}
			controllerutil.RemoveFinalizer(dtc, hold)
			return h.c.Update(h.ctx, dtc)
		})
	})
	h.g.Eventually(h.dtcPhase("dev-dtc"), eventually, poll).Should(Equal(appstudio.DeploymentTargetClaimPhasePending))
	h.g.Expect(h.c.Delete(h.ctx, dtc)).To(Succeed())
	h.g.Eventually(func() []string {
		_ = h.c.Get(h.ctx, h.key("dev-dtc"), dtc)
		return dtc.Finalizers
	}, eventually, poll).Should(Equal([]string{hold}))
	h.g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := h.c.Get(h.ctx, h.key("dev-dtc"), dtc); err != nil {
			return err
		}
		dtc.Status.Phase = appstudio.DeploymentTargetClaimPhaseBound
		return h.c.Status().Update(h.ctx, dtc)
	})).To(Succeed())

	h.create(&appstudio.Environment{ObjectMeta: metav1.ObjectMeta{Name: "dev"}, Spec: appstudio.EnvironmentSpec{
		Configuration: appstudio.EnvironmentConfiguration{Target: &appstudio.EnvironmentTarget{
			DeploymentTargetClaim: appstudio.DeploymentTargetClaimConfig{ClaimName: "dev-dtc"}}},
	}})
	h.g.Eventually(h.envCondition("dev"), eventually, poll).Should(And(
		withReason(metav1.ConditionTrue, "DeploymentTargetNotFound"),
		message(`DeploymentTarget "ghost", bound to DeploymentTargetClaim "dev-dtc", does not exist`)))
	h.g.Consistently(func() error {
		return h.c.Get(h.ctx, h.key("managed-environment-dev"), &v1.GitOpsDeploymentManagedEnvironment{})
	}, time.Second, poll).Should(MatchError(ContainSubstring("not found")))
	h.g.Eventually(h.events("dev", "Warning"), eventually, poll).Should(ContainElement("DeploymentTargetNotFound"))

	// Re-creating the target resolves it.
	h.secret("dt-secret", v1.ManagedEnvironmentSecretType)
	h.create(&appstudio.DeploymentTarget{ObjectMeta: metav1.ObjectMeta{Name: "ghost"}, Spec: appstudio.DeploymentTargetSpec{
		DeploymentTargetClassName: "none",
		KubernetesClusterCredentials: appstudio.DeploymentTargetKubernetesClusterCredentials{
			DefaultNamespace: "team-dev", APIURL: "https://api.dev.example.com:6443", ClusterCredentialsSecret: "dt-secret"},
	}})
	me := &v1.GitOpsDeploymentManagedEnvironment{}
	h.g.Eventually(h.get("managed-environment-dev", me), eventually, poll).Should(Succeed())
	h.g.Expect(me.Spec.APIURL).To(Equal("https://api.dev.example.com:6443"))
	h.g.Eventually(h.envCondition("dev"), eventually, poll).Should(withReason(metav1.ConditionFalse, "ErrorOccurredResolved"))
}
