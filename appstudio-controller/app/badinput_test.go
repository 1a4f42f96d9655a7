package app_test

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
)

// generatedObjects lists, by kind/name@resourceVersion, what the controller generates in
// the namespace: a bad input must add, change or remove none of it.
func (h *harness) generatedObjects() []string {
	h.t.Helper()
	var out []string
	depls := &v1.GitOpsDeploymentList{}
	h.g.Expect(h.c.List(h.ctx, depls, client.InNamespace(h.ns))).To(Succeed())
	for _, d := range depls.Items {
		out = append(out, "GitOpsDeployment/"+d.Name+"@"+d.ResourceVersion)
	}
	envs := &v1.GitOpsDeploymentManagedEnvironmentList{}
	h.g.Expect(h.c.List(h.ctx, envs, client.InNamespace(h.ns))).To(Succeed())
	for _, e := range envs.Items {
		out = append(out, "ManagedEnvironment/"+e.Name+"@"+e.ResourceVersion)
	}
	secrets := &corev1.SecretList{}
	h.g.Expect(h.c.List(h.ctx, secrets, client.InNamespace(h.ns))).To(Succeed())
	for _, s := range secrets.Items {
		out = append(out, "Secret/"+s.Name+"@"+s.ResourceVersion)
	}
	bindings := &appstudio.SnapshotEnvironmentBindingList{}
	h.g.Expect(h.c.List(h.ctx, bindings, client.InNamespace(h.ns))).To(Succeed())
	for _, b := range bindings.Items {
		out = append(out, "Binding/"+b.Name+"@"+b.ResourceVersion)
	}
	return out
}

// rejected creates o and expects the API server to refuse it, naming every one of want.
func (h *harness) rejected(o client.Object, want ...string) {
	h.t.Helper()
	o.SetNamespace(h.ns)
	err := h.c.Create(h.ctx, o)
	h.g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "not a validation error: %v", err)
	for _, w := range want {
		h.g.Expect(err.Error()).To(ContainSubstring(w))
	}
}

// updateRejected applies change to the latest o and expects the update to be refused.
func (h *harness) updateRejected(o client.Object, change func(), want ...string) {
	h.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		h.g.Expect(h.c.Get(h.ctx, client.ObjectKeyFromObject(o), o)).To(Succeed())
		change()
		return h.c.Update(h.ctx, o)
	})
	h.g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "not a validation error: %v", err)
	for _, w := range want {
		h.g.Expect(err.Error()).To(ContainSubstring(w))
	}
}

func message(want string) OmegaMatcher {
	return WithTransform(func(c *metav1.Condition) string { return c.Message }, ContainSubstring(want))
}

func TestBadInput(t *testing.T) {
	h := start(t)
	const secret = "kubecfg-s3cr3t-77ab"

	// The canary: a working Environment and binding whose generated deployment no bad input
	// may touch.
	h.create(&appstudio.Environment{ObjectMeta: metav1.ObjectMeta{Name: "canary-env"}})
	h.create(&appstudio.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Name: "canary"},
		Spec: appstudio.SnapshotEnvironmentBindingSpec{Application: "canary-app", Environment: "canary-env", Snapshot: "s"}})
	h.setComponents("canary", component("comp"))
	h.g.Eventually(h.ownedDeployments("canary"), eventually, poll).Should(ConsistOf("canary-canary-app-canary-env-comp"))
	// No error condition, or a resolved one if the first reconcile ran before the components
	// were written (a condition is only ever added for an error).
	h.g.Eventually(h.bindingCondition("canary"), eventually, poll).Should(Or(BeNil(), withReason(metav1.ConditionFalse, "ErrorOccurredResolved")))
	// Objects the cases refer to.
	h.create(&appstudio.Environment{ObjectMeta: metav1.ObjectMeta{Name: "staging"}})
	h.create(&appstudio.Snapshot{ObjectMeta: metav1.ObjectMeta{Name: "snap-b"}, Spec: appstudio.SnapshotSpec{Application: "app-b",
		Components: []appstudio.SnapshotComponent{{Name: "comp", ContainerImage: "quay.io/x/y:1"}}}})
	h.create(&appstudio.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Name: "immutable"},
		Spec: appstudio.SnapshotEnvironmentBindingSpec{Application: "app-i", Environment: "nowhere", Snapshot: "s"}})
	h.g.Eventually(h.bindingCondition("immutable"), eventually, poll).Should(Not(BeNil()))

	long := func(n int) string { return strings.Repeat("a", n) }
	binding := func(name, app, env string) *appstudio.SnapshotEnvironmentBinding {
		return &appstudio.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: appstudio.SnapshotEnvironmentBindingSpec{Application: app, Environment: env, Snapshot: "s"}}
	}
	promotionFails := func(h *harness, name, want string) {
		h.g.Eventually(func() []appstudio.PromotionRunCondition { return h.run(name).Status.Conditions }, eventually, poll).
			Should(ContainElement(And(HaveField("Status", appstudio.PromotionRunConditionStatusTrue), HaveField("Message", ContainSubstring(want)))))
		h.g.Expect(h.run(name).Status.ActiveBindings).To(BeEmpty())
	}

	cases := []struct {
		name string
		run  func(h *harness)
	}{
		// Refused by the CRD schema.
		{"environment/name-254-chars", func(h *harness) {
			h.rejected(&appstudio.Environment{ObjectMeta: metav1.ObjectMeta{Name: long(254)}}, "metadata.name", "253")
		}},
		{"environment/strategy-invalid-enum", func(h *harness) {
			h.rejected(&appstudio.Environment{ObjectMeta: metav1.ObjectMeta{Name: "strategy"},
				Spec: appstudio.EnvironmentSpec{DeploymentStrategy: "Manual; rm -rf /"}}, "spec.deploymentStrategy", "Unsupported value")
		}},
		{"environment/displayName-257-chars", func(h *harness) {
			h.rejected(&appstudio.Environment{ObjectMeta: metav1.ObjectMeta{Name: "display"},
				Spec: appstudio.EnvironmentSpec{DisplayName: strings.Repeat("\u202e", 257)}}, "spec.displayName", "256")
		}},
		{"environment/apiURL-http", func(h *harness) {
			e := credsEnv("http", "creds")
			e.Spec.UnstableConfigurationFields.KubernetesClusterCredentials.APIURL = "http://api.example.com:6443"
			h.rejected(e, "apiURL must be an https:// URL")
		}},
		{"environment/apiURL-file", func(h *harness) {
			e := credsEnv("file", "creds")
			e.Spec.UnstableConfigurationFields.KubernetesClusterCredentials.APIURL = "file:///../../etc/passwd"
			h.rejected(e, "apiURL must be an https:// URL")
		}},
		{"environment/clusterType-invalid-enum", func(h *harness) {
			e := credsEnv("clustertype", "creds")
			e.Spec.UnstableConfigurationFields.ClusterType = "Kubernetes\nOpenShift"
			h.rejected(e, "spec.unstableConfigurationFields.clusterType", "Unsupported value")
		}},
		{"environment/targetNamespace-64-chars", func(h *harness) {
			e := credsEnv("targetns", "creds")
			e.Spec.UnstableConfigurationFields.KubernetesClusterCredentials.TargetNamespace = long(64)
			h.rejected(e, "targetNamespace", "63")
		}},
		{"environment/credentials-without-targetNamespace", func(h *harness) {
			e := credsEnv("notargetns", "creds")
			e.Spec.UnstableConfigurationFields.KubernetesClusterCredentials.TargetNamespace = ""
			h.rejected(e, "spec.unstableConfigurationFields.kubernetesCredentials", "targetNamespace is required with kubernetesCredentials")
		}},
		{"promotionrun/manual-and-automated", func(h *harness) {
			p := manualRun("both", "snap-b")
			p.Spec.AutomatedPromotion = &appstudio.AutomatedPromotionConfiguration{InitialEnvironment: "staging"}
			h.rejected(p, "exactly one of spec.manualPromotion and spec.automatedPromotion must be set")
		}},
		{"promotionrun/neither", func(h *harness) {
			p := manualRun("neither", "snap-b")
			p.Spec.ManualPromotion = nil
			h.rejected(p, "exactly one of spec.manualPromotion and spec.automatedPromotion must be set")
		}},
		{"promotionrun/snapshot-254-chars", func(h *harness) {
			h.rejected(manualRun("long-snap", long(254)), "spec.snapshot", "253")
		}},
		{"promotionrun/spec-immutable", func(h *harness) {
			p := manualRun("edit", "missing-snap")
			p.Spec.Application = "app-edit"
			h.create(p)
			promotionFails(h, "edit", `Snapshot "missing-snap" does not exist`)
			h.updateRejected(p, func() { p.Spec.ManualPromotion.TargetEnvironment = "canary-env" }, "spec is immutable")
		}},
		{"snapshot/components-immutable", func(h *harness) {
			s := &appstudio.Snapshot{ObjectMeta: metav1.ObjectMeta{Name: "snap-edit"}, Spec: appstudio.SnapshotSpec{Application: "app-b",
				Components: []appstudio.SnapshotComponent{{Name: "comp", ContainerImage: "quay.io/x/y:1"}}}}
			h.create(s)
			h.updateRejected(s, func() { s.Spec.Components[0].ContainerImage = "quay.io/evil/y:$(id)" }, "spec.components is immutable once set")
		}},
		{"snapshot/application-immutable", func(h *harness) {
			s := &appstudio.Snapshot{ObjectMeta: metav1.ObjectMeta{Name: "snap-app-edit"}, Spec: appstudio.SnapshotSpec{Application: "app-b"}}
			h.create(s)
			h.updateRejected(s, func() { s.Spec.Application = "canary-app" }, "spec.application is immutable")
		}},
		{"snapshot/257-components", func(h *harness) {
			s := &appstudio.Snapshot{ObjectMeta: metav1.ObjectMeta{Name: "snap-many"}, Spec: appstudio.SnapshotSpec{Application: "app-b"}}
			for i := 0; i < 257; i++ {
				s.Spec.Components = append(s.Spec.Components, appstudio.SnapshotComponent{Name: "c", ContainerImage: "quay.io/x/y"})
			}
			h.rejected(s, "spec.components", "256")
		}},
		{"snapshot/containerImage-1025-chars", func(h *harness) {
			h.rejected(&appstudio.Snapshot{ObjectMeta: metav1.ObjectMeta{Name: "snap-image"}, Spec: appstudio.SnapshotSpec{Application: "app-b",
				Components: []appstudio.SnapshotComponent{{Name: "comp", ContainerImage: "quay.io/" + long(1025)}}}}, "containerImage", "1024")
		}},
		{"binding/application-immutable", func(h *harness) {
			b := h.binding("immutable")
			h.updateRejected(b, func() { b.Spec.Application = "canary-app" }, "spec.application is immutable")
		}},
		{"binding/environment-immutable", func(h *harness) {
			b := h.binding("immutable")
			h.updateRejected(b, func() { b.Spec.Environment = "canary-env" }, "spec.environment is immutable")
		}},
		{"deploymenttargetclass/reclaimPolicy-invalid-enum", func(h *harness) {
			cls := &appstudio.DeploymentTargetClass{ObjectMeta: metav1.ObjectMeta{Name: "bad-cls-" + h.ns},
				Spec: appstudio.DeploymentTargetClassSpec{Provisioner: "example.com/none", ReclaimPolicy: "Recycle"}}
			err := h.c.Create(h.ctx, cls)
			h.g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "not a validation error: %v", err)
			h.g.Expect(err.Error()).To(And(ContainSubstring("spec.reclaimPolicy"), ContainSubstring("Unsupported value")))
		}},

		// Accepted, reported in a condition, nothing generated.
		{"environment/claim-and-credentials", func(h *harness) {
			h.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "both-creds"}, Type: v1.ManagedEnvironmentSecretType,
				Data: map[string][]byte{"kubeconfig": []byte("users:\n- user:\n    token: " + secret + "\n")}})
			e := credsEnv("both", "both-creds")
			e.Spec.Configuration.Target = &appstudio.EnvironmentTarget{DeploymentTargetClaim: appstudio.DeploymentTargetClaimConfig{ClaimName: "x"}}
			h.create(e)
			h.g.Eventually(h.envCondition("both"), eventually, poll).Should(And(
				withReason(metav1.ConditionTrue, "InvalidEnvironment"), message("cannot set both")))
			h.g.Expect(h.envCondition("both")().Message).NotTo(ContainSubstring(secret))
		}},
		{"environment/credentials-secret-missing", func(h *harness) {
			h.create(credsEnv("nosecret", "absent-\u202esecret"))
			h.g.Eventually(h.envCondition("nosecret"), eventually, poll).Should(And(
				withReason(metav1.ConditionTrue, "MissingCredentialsSecret"), message("does not exist")))
		}},
		{"environment/claim-sql-injection", func(h *harness) {
			h.create(&appstudio.Environment{ObjectMeta: metav1.ObjectMeta{Name: "claim-sql"}, Spec: appstudio.EnvironmentSpec{
				Configuration: appstudio.EnvironmentConfiguration{Target: &appstudio.EnvironmentTarget{
					DeploymentTargetClaim: appstudio.DeploymentTargetClaimConfig{ClaimName: "x'; DROP TABLE environments;--"}}}}})
			h.g.Eventually(h.envCondition("claim-sql"), eventually, poll).Should(And(
				withReason(metav1.ConditionTrue, "DeploymentTargetClaimNotFound"), message(`DeploymentTargetClaim "x'; DROP TABLE environments;--" does not exist`)))
		}},
		{"binding/environment-missing", func(h *harness) {
			h.create(binding("no-env", "app-ne", "no-such-env"))
			h.setComponents("no-env", component("comp"))
			h.g.Eventually(h.bindingCondition("no-env"), eventually, poll).Should(withReason(metav1.ConditionTrue, "EnvironmentNotFound"))
		}},
		{"binding/duplicate-components", func(h *harness) {
			h.create(binding("dups", "app-d", "staging"))
			h.setComponents("dups", component("comp"), component("other"), component("comp"))
			h.g.Eventually(h.bindingCondition("dups"), eventually, poll).Should(withReason(metav1.ConditionTrue, "DuplicateComponents"))
			h.g.Consistently(h.ownedDeployments("dups"), time.Second, poll).Should(BeEmpty())
		}},
		{"binding/component-name-injection", func(h *harness) {
			h.create(binding("inject", "app-inj", "staging"))
			h.setComponents("inject", component("../../etc/passwd"), component("$(rm -rf /)"))
			h.g.Eventually(h.bindingCondition("inject"), eventually, poll).Should(And(
				withReason(metav1.ConditionTrue, "InvalidComponentName"), message(`component "../../etc/passwd"`),
				message("2 of 2 components cannot be deployed")))
			h.g.Consistently(h.ownedDeployments("inject"), time.Second, poll).Should(BeEmpty())
		}},
		{"promotionrun/snapshot-of-other-application", func(h *harness) {
			p := manualRun("wrong-app", "snap-b")
			p.Spec.Application = "app-w"
			h.create(p)
			promotionFails(h, "wrong-app", `Snapshot "snap-b" belongs to application "app-b", not "app-w"`)
		}},
		{"promotionrun/environment-missing", func(h *harness) {
			p := manualRun("no-env", "snap-b")
			p.Spec.Application = "app-b"
			p.Spec.ManualPromotion.TargetEnvironment = "env\U0001F4A5"
			h.create(p)
			promotionFails(h, "no-env", `Environment "env`)
		}},
	}

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sub := *h
			sub.t, sub.g = t, NewWithT(t)
			before := sub.generatedObjects()
			tc.run(&sub)
			// No side effect: nothing generated, changed or removed; events name no secret.
			sub.g.Consistently(func() []string { return withoutOwn(sub.generatedObjects()) }, 500*time.Millisecond, poll).
				Should(Equal(withoutOwn(before)))
			events := &corev1.EventList{}
			sub.g.Expect(sub.c.List(sub.ctx, events, client.InNamespace(sub.ns))).To(Succeed())
			for _, e := range events.Items {
				sub.g.Expect(e.Message).NotTo(ContainSubstring(secret))
			}
		})
	}
	h.g.Expect(h.ownedDeployments("canary")()).To(ConsistOf("canary-canary-app-canary-env-comp"))
}

// withoutOwn drops from a generatedObjects list what the cases create themselves: the
// bindings (whose status the controller writes) and the Secret of one case.
func withoutOwn(list []string) []string {
	var out []string
	for _, o := range list {
		if !strings.HasPrefix(o, "Binding/") && !strings.HasPrefix(o, "Secret/both-creds@") {
			out = append(out, o)
		}
	}
	return out
}
