package app_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
)

// setRepoStatus writes, in one update as the Application Service does, the binding's
// GitOpsResourcesGenerated repository condition and its components.
func (h *harness) setRepoStatus(name string, generated metav1.ConditionStatus, reason, message string, comps ...appstudio.BindingComponentStatus) {
	h.t.Helper()
	h.g.Eventually(func() error {
		b := h.binding(name)
		meta.SetStatusCondition(&b.Status.GitOpsRepoConditions, metav1.Condition{
			Type: appstudio.GitOpsRepoConditionGitOpsResourcesGenerated, Status: generated, Reason: reason, Message: message})
		b.Status.Components = comps
		return h.c.Status().Update(h.ctx, b)
	}, eventually, poll).Should(Succeed())
}

// deployments returns name@resourceVersion path of the binding's GitOpsDeployments.
func (h *harness) deployments(binding string) func() []string {
	return func() []string {
		b := h.binding(binding)
		list := &v1.GitOpsDeploymentList{}
		h.g.Expect(h.c.List(h.ctx, list, client.InNamespace(h.ns))).To(Succeed())
		var out []string
		for _, d := range list.Items {
			if metav1.IsControlledBy(&d, b) {
				out = append(out, d.Name+"@"+d.ResourceVersion+" "+d.Spec.Source.Path)
			}
		}
		return out
	}
}

func (h *harness) updateEnv(name string, change func(*appstudio.Environment)) {
	h.t.Helper()
	h.g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		env := &appstudio.Environment{}
		if err := h.c.Get(h.ctx, h.key(name), env); err != nil {
			return err
		}
		change(env)
		return h.c.Update(h.ctx, env)
	})).To(Succeed())
}

func TestBindingGitOpsRepositoryNotReady(t *testing.T) {
	h := start(t)
	h.create(&appstudio.Environment{ObjectMeta: metav1.ObjectMeta{Name: "staging"}})
	h.create(&appstudio.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"},
		Spec: appstudio.SnapshotEnvironmentBindingSpec{Application: "appa", Environment: "staging", Snapshot: "snap1"}})
	h.setRepoStatus("b", metav1.ConditionTrue, "GenerationSucceeded", "", component("comp-a"), component("comp-b"))
	h.g.Eventually(h.ownedDeployments("b"), eventually, poll).Should(ConsistOf("b-appa-staging-comp-a", "b-appa-staging-comp-b"))
	h.g.Eventually(h.bindingCondition("b"), eventually, poll).Should(Or(BeNil(), withReason(metav1.ConditionFalse, "ErrorOccurredResolved")))
	before := h.deployments("b")()

	// The Application Service failed to regenerate the repository; the components it wrote
	// with that (comp-a moved, comp-b gone, comp-c new) may be stale: nothing is generated,
	// changed or deleted.
	moved := component("comp-a")
	moved.GitOpsRepository.Path = "components/comp-a/overlays/moved"
	h.setRepoStatus("b", metav1.ConditionFalse, "GenerationFailed", "failed to push to https://github.com/example/gitops", moved, component("comp-c"))
	h.g.Eventually(h.bindingCondition("b"), eventually, poll).Should(And(
		withReason(metav1.ConditionTrue, "GitOpsRepositoryNotReady"),
		message(`GitOpsResourcesGenerated is False, reason "GenerationFailed": failed to push to https://github.com/example/gitops`)))
	h.g.Consistently(h.deployments("b"), 2*time.Second, poll).Should(Equal(before))
	h.g.Eventually(h.events("b", "Warning"), eventually, poll).Should(ContainElement("GitOpsRepositoryNotReady"))

	// Generated again: the binding follows the components.
	h.setRepoStatus("b", metav1.ConditionTrue, "GenerationSucceeded", "", moved, component("comp-c"))
	h.g.Eventually(h.ownedDeployments("b"), eventually, poll).Should(ConsistOf("b-appa-staging-comp-a", "b-appa-staging-comp-c"))
	d := &v1.GitOpsDeployment{}
	h.g.Eventually(func() string {
		_ = h.c.Get(h.ctx, h.key("b-appa-staging-comp-a"), d)
		return d.Spec.Source.Path
	}, eventually, poll).Should(Equal("components/comp-a/overlays/moved"))
	h.g.Eventually(h.bindingCondition("b"), eventually, poll).Should(withReason(metav1.ConditionFalse, "ErrorOccurredResolved"))
}

// createBeforeTargetNamespaceRule creates env as it could be stored before the Environment
// CRD required targetNamespace: the rule is taken off the CRD while env is created.
func (h *harness) createBeforeTargetNamespaceRule(env *appstudio.Environment) {
	h.t.Helper()
	crd := &unstructured.Unstructured{}
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	key := client.ObjectKey{Name: "environments.appstudio.redhat.com"}
	var rules any
	setRules := func(remove bool) error {
		if err := h.c.Get(h.ctx, key, crd); err != nil {
			return err
		}
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		h.g.Expect(versions).To(HaveLen(1))
		creds, _, _ := unstructured.NestedMap(versions[0].(map[string]any), "schema", "openAPIV3Schema", "properties", "spec",
			"properties", "unstableConfigurationFields", "properties", "kubernetesCredentials")
		h.g.Expect(creds).NotTo(BeNil())
		if remove {
			rules = creds["x-kubernetes-validations"]
			h.g.Expect(rules).NotTo(BeNil(), "the CRD has no rule on kubernetesCredentials")
			delete(creds, "x-kubernetes-validations")
		} else {
			creds["x-kubernetes-validations"] = rules
		}
		h.g.Expect(unstructured.SetNestedMap(versions[0].(map[string]any), creds, "schema", "openAPIV3Schema", "properties", "spec",
			"properties", "unstableConfigurationFields", "properties", "kubernetesCredentials")).To(Succeed())
		h.g.Expect(unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions")).To(Succeed())
		return h.c.Update(h.ctx, crd)
	}
	h.g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error { return setRules(true) })).To(Succeed())
	restore := func() {
		h.g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error { return setRules(false) })).To(Succeed())
	}
	defer restore()
	env.SetNamespace(h.ns)
	h.g.Eventually(func() error { return h.c.Create(h.ctx, env) }, eventually, poll).Should(Succeed())
}

func TestBindingMissingTargetNamespace(t *testing.T) {
	h := start(t)
	h.secret("creds", v1.ManagedEnvironmentSecretType)
	env := credsEnv("remote", "creds")
	env.Spec.UnstableConfigurationFields.KubernetesClusterCredentials.TargetNamespace = ""
	h.rejected(env.DeepCopy(), "targetNamespace is required with kubernetesCredentials")

	// One stored before the CRD required it: the binding says so and generates nothing.
	h.createBeforeTargetNamespaceRule(env)
	h.g.Eventually(func() error { // the rule is back
		probe := credsEnv("", "creds")
		probe.GenerateName = "probe-"
		probe.Spec.UnstableConfigurationFields.KubernetesClusterCredentials.TargetNamespace = ""
		probe.Namespace = h.ns
		return h.c.Create(h.ctx, probe)
	}, eventually, poll).Should(MatchError(ContainSubstring("targetNamespace is required with kubernetesCredentials")))
	h.create(&appstudio.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"},
		Spec: appstudio.SnapshotEnvironmentBindingSpec{Application: "app", Environment: "remote", Snapshot: "s"}})
	h.setComponents("b", component("c1"))
	h.g.Eventually(h.bindingCondition("b"), eventually, poll).Should(And(
		withReason(metav1.ConditionTrue, "MissingTargetNamespace"),
		message(`Environment "remote" deploys to a remote cluster`),
		message("set spec.unstableConfigurationFields.kubernetesCredentials.targetNamespace")))
	h.g.Consistently(h.ownedDeployments("b"), 2*time.Second, poll).Should(BeEmpty())
	h.g.Eventually(h.events("b", "Warning"), eventually, poll).Should(ContainElement("MissingTargetNamespace"))

	// Fixing the Environment resumes generation.
	h.updateEnv("remote", func(e *appstudio.Environment) {
		e.Spec.UnstableConfigurationFields.KubernetesClusterCredentials.TargetNamespace = "my-ns"
	})
	d := &v1.GitOpsDeployment{}
	h.g.Eventually(h.get("b-app-remote-c1", d), eventually, poll).Should(Succeed())
	h.g.Expect(d.Spec.Destination).To(Equal(v1.ApplicationDestination{Environment: "managed-environment-remote", Namespace: "my-ns"}))
	h.g.Eventually(h.bindingCondition("b"), eventually, poll).Should(withReason(metav1.ConditionFalse, "ErrorOccurredResolved"))
}

func TestBindingEnvironmentNotReady(t *testing.T) {
	h := start(t)
	h.secret("creds", v1.ManagedEnvironmentSecretType)
	env := credsEnv("dev", "creds")
	env.Spec.Configuration.Target = &appstudio.EnvironmentTarget{DeploymentTargetClaim: appstudio.DeploymentTargetClaimConfig{ClaimName: "dev-dtc"}}
	h.create(env)
	h.create(&appstudio.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"},
		Spec: appstudio.SnapshotEnvironmentBindingSpec{Application: "app", Environment: "dev", Snapshot: "s"}})
	h.setComponents("b", component("c1"))

	// Both a claim and credentials.
	h.g.Eventually(h.bindingCondition("b"), eventually, poll).Should(And(
		withReason(metav1.ConditionTrue, "EnvironmentNotReady"), message(`Environment "dev" is invalid: it sets both`)))
	h.g.Consistently(h.ownedDeployments("b"), time.Second, poll).Should(BeEmpty())

	// A claim that does not exist.
	h.updateEnv("dev", func(e *appstudio.Environment) { e.Spec.UnstableConfigurationFields = nil })
	h.g.Eventually(h.bindingCondition("b"), eventually, poll).Should(And(
		withReason(metav1.ConditionTrue, "EnvironmentNotReady"),
		message(`Environment "dev" cannot be deployed to yet: DeploymentTargetClaim "dev-dtc" does not exist`)))
	h.g.Consistently(h.ownedDeployments("b"), time.Second, poll).Should(BeEmpty())
	h.g.Eventually(h.events("b", "Warning"), eventually, poll).Should(ContainElement("EnvironmentNotReady"))

	// Neither: deploys into the binding's own namespace.
	h.updateEnv("dev", func(e *appstudio.Environment) { e.Spec.Configuration.Target = nil })
	d := &v1.GitOpsDeployment{}
	h.g.Eventually(h.get("b-app-dev-c1", d), eventually, poll).Should(Succeed())
	h.g.Expect(d.Spec.Destination).To(Equal(v1.ApplicationDestination{Namespace: h.ns}))
	h.g.Eventually(h.bindingCondition("b"), eventually, poll).Should(withReason(metav1.ConditionFalse, "ErrorOccurredResolved"))
}

func TestBindingInvalidComponentStatus(t *testing.T) {
	h := start(t)
	h.create(&appstudio.Environment{ObjectMeta: metav1.ObjectMeta{Name: "staging"}})
	h.create(&appstudio.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"},
		Spec: appstudio.SnapshotEnvironmentBindingSpec{Application: "app", Environment: "staging", Snapshot: "s"}})
	noPath := component("comp-b")
	noPath.GitOpsRepository.Path = ""
	h.setComponents("b", component("comp-a"), noPath)

	// No deployment at all, not even of the complete component.
	h.g.Eventually(h.bindingCondition("b"), eventually, poll).Should(And(
		withReason(metav1.ConditionTrue, "InvalidComponentStatus"),
		message(`component "comp-b" has no GitOps repository URL or path in status.components`)))
	h.g.Consistently(h.ownedDeployments("b"), 2*time.Second, poll).Should(BeEmpty())
	h.g.Eventually(h.events("b", "Warning"), eventually, poll).Should(ContainElement("InvalidComponentStatus"))

	h.setComponents("b", component("comp-a"), component("comp-b"))
	h.g.Eventually(h.ownedDeployments("b"), eventually, poll).Should(ConsistOf("b-app-staging-comp-a", "b-app-staging-comp-b"))
	h.g.Eventually(h.bindingCondition("b"), eventually, poll).Should(withReason(metav1.ConditionFalse, "ErrorOccurredResolved"))
}

func TestBindingDeploysToClaimedTarget(t *testing.T) {
	h := start(t)
	cls := h.class(appstudio.ReclaimPolicyRetain, "example.com/none")
	h.secret("dt-secret", v1.ManagedEnvironmentSecretType)
	h.create(&appstudio.Environment{ObjectMeta: metav1.ObjectMeta{Name: "dev"}, Spec: appstudio.EnvironmentSpec{
		Configuration: appstudio.EnvironmentConfiguration{Target: &appstudio.EnvironmentTarget{
			DeploymentTargetClaim: appstudio.DeploymentTargetClaimConfig{ClaimName: "dev-dtc"}}}}})
	h.create(&appstudio.DeploymentTargetClaim{ObjectMeta: metav1.ObjectMeta{Name: "dev-dtc"}, Spec: appstudio.DeploymentTargetClaimSpec{DeploymentTargetClassName: cls}})
	h.create(&appstudio.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"},
		Spec: appstudio.SnapshotEnvironmentBindingSpec{Application: "app", Environment: "dev", Snapshot: "s"}})
	h.setComponents("b", component("c1"))

	// Not bound yet: nothing is deployed.
	h.g.Eventually(h.bindingCondition("b"), eventually, poll).Should(withReason(metav1.ConditionTrue, "EnvironmentNotReady"))
	h.g.Consistently(h.ownedDeployments("b"), time.Second, poll).Should(BeEmpty())

	// Once the claim is bound, the deployments target the bound DeploymentTarget's namespace
	// through the Environment's GitOpsDeploymentManagedEnvironment.
	h.create(&appstudio.DeploymentTarget{ObjectMeta: metav1.ObjectMeta{Name: "dev-dt"}, Spec: appstudio.DeploymentTargetSpec{
		DeploymentTargetClassName: cls,
		KubernetesClusterCredentials: appstudio.DeploymentTargetKubernetesClusterCredentials{
			DefaultNamespace: "team-dev", APIURL: "https://api.dev.example.com:6443", ClusterCredentialsSecret: "dt-secret"},
	}})
	h.g.Eventually(h.dtcPhase("dev-dtc"), eventually, poll).Should(Equal(appstudio.DeploymentTargetClaimPhaseBound))
	d := &v1.GitOpsDeployment{}
	h.g.Eventually(h.get("b-app-dev-c1", d), eventually, poll).Should(Succeed())
	h.g.Expect(d.Spec.Destination).To(Equal(v1.ApplicationDestination{Environment: "managed-environment-dev", Namespace: "team-dev"}))
	h.g.Eventually(h.bindingCondition("b"), eventually, poll).Should(withReason(metav1.ConditionFalse, "ErrorOccurredResolved"))
}
