package e2e

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/testenv"
	. "github.com/gitops-service/gitops-service/tests-e2e/framework"
	"github.com/gitops-service/gitops-service/tests-e2e/gitserver"
)

// The examples point at the local stack's Git server; here the same repository is served
// by the suite's, so the examples are applied as they are but for the repository URL (and,
// where an example says "replace", what it says to replace).
const examplesRepoURL = "http://127.0.0.1:8418/gitops-examples.git"

var _ = Describe("The examples", func() {
	var ns string
	BeforeEach(func(ctx SpecContext) { ns = tenant(ctx, "examples") })

	It("gitopsdeployment.yaml deploys the hello directory", func(ctx SpecContext) {
		url, sha := examplesRepository(ns, nil)
		objs := applyExample(ctx, ns, "gitopsdeployment.yaml", examplesRepoURL, url)
		depl := &v1.GitOpsDeployment{ObjectMeta: metav1.ObjectMeta{Name: objs[0].GetName(), Namespace: ns}}
		Eventually(Object(ctx, f.Client, depl)).Should(And(BeSyncedAndHealthy(), HaveRevision(sha),
			HaveResource("ConfigMap", "hello"), HaveResource("Service", "hello")))
		Expect(ConfigMapData(ctx, f.Client, ns, "hello")()).To(HaveKey("greeting"))
	})

	It("manual-sync.yaml deploys a manual GitOpsDeployment through a SyncRun", func(ctx SpecContext) {
		url, sha := examplesRepository(ns, nil)
		applyExample(ctx, ns, "manual-sync.yaml", examplesRepoURL, url)
		depl := &v1.GitOpsDeployment{ObjectMeta: metav1.ObjectMeta{Name: "hello-manual", Namespace: ns}}
		Eventually(Object(ctx, f.Client, depl)).Should(And(BeSyncedAndHealthy(), HaveRevision(sha)))
		Expect(ConfigMapData(ctx, f.Client, ns, "hello-manual")()).To(HaveKey("greeting"))
	})

	It("repository-credential.yaml deploys from a private repository", func(ctx SpecContext) {
		const placeholder = "https://git.example.com/team/private-config.git"
		objs := readExample("repository-credential.yaml")
		secret := find(objs, "Secret", "private-repo-credentials")
		creds := &gitserver.Credentials{
			Username: nestedString(secret, "stringData", "username"),
			Password: nestedString(secret, "stringData", "password"),
		}
		url, sha := examplesRepository(ns, creds)
		Expect(url).To(HavePrefix("https://"), "repository credentials need an https:// Git server")
		applyExample(ctx, ns, "repository-credential.yaml", placeholder, url)

		cred := &v1.GitOpsDeploymentRepositoryCredential{ObjectMeta: metav1.ObjectMeta{Name: "private-repo", Namespace: ns}}
		Eventually(Object(ctx, f.Client, cred)).Should(HaveField("Status.Conditions", ContainElement(And(
			HaveField("Type", v1.RepositoryCredentialConditionValidRepositoryCredential),
			HaveField("Status", metav1.ConditionTrue)))))
		depl := &v1.GitOpsDeployment{ObjectMeta: metav1.ObjectMeta{Name: "hello-private", Namespace: ns}}
		Eventually(Object(ctx, f.Client, depl)).Should(And(BeSyncedAndHealthy(), HaveRevision(sha)))
		Expect(ConfigMapData(ctx, f.Client, ns, "hello")()).To(HaveKey("greeting"))
	})

	It("managed-environment.yaml deploys to another cluster, creating the namespace", func(ctx SpecContext) {
		const placeholder = "https://api.staging.example.com:6443"
		remote, kubeconfig, err := StartRemoteCluster(ctx)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(remote.Stop)
		url, sha := examplesRepository(ns, nil)

		objs := readExample("managed-environment.yaml", examplesRepoURL, url, placeholder, remote.Config.Host)
		Expect(unstructured.SetNestedField(find(objs, "Secret", "staging-cluster").Object, string(kubeconfig), "stringData", "kubeconfig")).To(Succeed())
		create(ctx, ns, objs)
		env := &v1.GitOpsDeploymentManagedEnvironment{ObjectMeta: metav1.ObjectMeta{Name: "staging", Namespace: ns}}
		// Runs before the remote cluster stops: Argo CD lets go of the cluster first.
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(f.Client.Delete(ctx, env))).To(Succeed()) })

		depl := &v1.GitOpsDeployment{ObjectMeta: metav1.ObjectMeta{Name: "hello-staging", Namespace: ns}}
		Eventually(Object(ctx, f.Client, depl)).Should(And(BeSyncedAndHealthy(), HaveRevision(sha)))
		Expect(ConfigMapData(ctx, remote.Client, "hello-staging", "hello")()).To(HaveKey("greeting"))
	})

	It("appstudio/ deploys a Snapshot's components to an Environment and promotes the next Snapshot", func(ctx SpecContext) {
		url, _ := examplesRepository(ns, nil)
		for _, file := range []string{"environment.yaml", "snapshot.yaml", "binding.yaml"} {
			applyExample(ctx, ns, filepath.Join("appstudio", file))
		}
		binding := deployBindingExample(ctx, ns, url, ns)

		applyExample(ctx, ns, filepath.Join("appstudio", "promotionrun.yaml"))
		promotion := &appstudio.PromotionRun{ObjectMeta: metav1.ObjectMeta{Name: "hello-promote-snapshot-2", Namespace: ns}}
		Eventually(Object(ctx, f.Client, promotion)).Should(And(
			HaveField("Status.State", appstudio.PromotionRunStateComplete),
			HaveField("Status.CompletionResult", appstudio.PromotionRunCompleteResultSuccess)))
		Expect(f.Client.Get(ctx, client.ObjectKeyFromObject(binding), binding)).To(Succeed())
		Expect(binding.Spec.Snapshot).To(Equal("hello-snapshot-2"))
	})

	It("appstudio/deployment-target-claim.yaml provisions a namespace a binding deploys to, removed with the claim", func(ctx SpecContext) {
		// The class is cluster-scoped: each run gets its own.
		class := "namespace-on-this-cluster-" + ns
		objs := applyExample(ctx, ns, filepath.Join("appstudio", "deployment-target-claim.yaml"), "namespace-on-this-cluster", class)
		DeferCleanup(func(ctx SpecContext) {
			Expect(client.IgnoreNotFound(f.Client.Delete(ctx, find(objs, "DeploymentTargetClaim", "preview")))).To(Succeed())
			Expect(client.IgnoreNotFound(f.Client.Delete(ctx, find(objs, "DeploymentTargetClass", class)))).To(Succeed())
		})
		claim := &appstudio.DeploymentTargetClaim{ObjectMeta: metav1.ObjectMeta{Name: "preview", Namespace: ns}}
		Eventually(Object(ctx, f.Client, claim)).Should(HaveField("Status.Phase", appstudio.DeploymentTargetClaimPhaseBound))
		env := &v1.GitOpsDeploymentManagedEnvironment{ObjectMeta: metav1.ObjectMeta{Name: "managed-environment-preview", Namespace: ns}}
		Eventually(Object(ctx, f.Client, env)).Should(HaveField("Status.Conditions", ContainElement(And(
			HaveField("Type", v1.ManagedEnvironmentConditionConnectionInitializationSucceeded),
			HaveField("Status", metav1.ConditionTrue)))))
		Expect(f.Client.Get(ctx, client.ObjectKeyFromObject(claim), claim)).To(Succeed())
		target := &appstudio.DeploymentTarget{}
		Expect(f.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: claim.Spec.TargetName}, target)).To(Succeed())
		provisioned := target.Spec.KubernetesClusterCredentials.DefaultNamespace

		// A Snapshot's component, bound to the Environment, deploys into the provisioned
		// namespace through the provisioned ServiceAccount (Argo CD lists every kind there).
		url, _ := examplesRepository(ns, nil)
		applyExample(ctx, ns, filepath.Join("appstudio", "snapshot.yaml"))
		applyExample(ctx, ns, filepath.Join("appstudio", "binding.yaml"), "environment: development", "environment: preview")
		deployBindingExample(ctx, ns, url, provisioned)

		// Deleting the claim (reclaim policy Delete) removes the namespace and what was
		// deployed into it.
		Expect(f.Client.Delete(ctx, claim)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(f.Client.Get(ctx, client.ObjectKey{Name: provisioned}, &corev1.Namespace{}))
		}).Should(BeTrue(), "namespace %s is removed", provisioned)
		Expect(apierrors.IsNotFound(f.Client.Get(ctx, client.ObjectKey{Namespace: provisioned, Name: "hello-component"}, &corev1.ConfigMap{}))).To(BeTrue())
	})
})

// deployBindingExample writes the component status of binding-status.yaml (the repository
// at url) onto the example binding in ns, as the Application Service would, and waits until
// the component is deployed into target and the binding says so.
func deployBindingExample(ctx SpecContext, ns, url, target string) *appstudio.SnapshotEnvironmentBinding {
	GinkgoHelper()
	binding := &appstudio.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Name: "hello-development", Namespace: ns}}
	patch, err := yaml.YAMLToJSON([]byte(strings.ReplaceAll(string(exampleFile(filepath.Join("appstudio", "binding-status.yaml"))), examplesRepoURL, url)))
	Expect(err).NotTo(HaveOccurred())
	Expect(f.Client.Status().Patch(ctx, binding, client.RawPatch("application/merge-patch+json", patch))).To(Succeed())
	Eventually(ConfigMapData(ctx, f.Client, target, "hello-component")).Should(HaveKey("greeting"))
	Eventually(Object(ctx, f.Client, binding)).Should(HaveField("Status.ComponentDeploymentConditions", ContainElement(And(
		HaveField("Type", appstudio.ComponentDeploymentConditionAllComponentsDeployed),
		HaveField("Status", metav1.ConditionTrue)))))
	return binding
}

// examplesRepository serves examples/repository as the spec's repository.
func examplesRepository(name string, creds *gitserver.Credentials) (url, commit string) {
	GinkgoHelper()
	root, err := testenv.RepoRoot()
	Expect(err).NotTo(HaveOccurred())
	Expect(f.Git.Create(name, creds)).To(Succeed())
	sha, err := f.Git.CommitDir(name, filepath.Join(root, "examples", "repository"), "examples")
	Expect(err).NotTo(HaveOccurred())
	return f.Git.URL(name), sha
}

func exampleFile(name string) []byte {
	GinkgoHelper()
	root, err := testenv.RepoRoot()
	Expect(err).NotTo(HaveOccurred())
	data, err := os.ReadFile(filepath.Join(root, "examples", name))
	Expect(err).NotTo(HaveOccurred())
	return data
}

// readExample decodes the objects of an example file after replacing each old string with
// its new one (replacements alternate old, new). Every old string must occur, so that an
// example that drifts from its test fails it.
func readExample(name string, replacements ...string) []*unstructured.Unstructured {
	GinkgoHelper()
	text := string(exampleFile(name))
	for i := 0; i+1 < len(replacements); i += 2 {
		Expect(text).To(ContainSubstring(replacements[i]), "examples/%s", name)
		text = strings.ReplaceAll(text, replacements[i], replacements[i+1])
	}
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader([]byte(text)), 4096)
	for {
		var raw runtime.RawExtension
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			break
		}
		Expect(err).NotTo(HaveOccurred(), "examples/%s", name)
		if len(bytes.TrimSpace(raw.Raw)) == 0 || string(raw.Raw) == "null" {
			continue
		}
		obj := &unstructured.Unstructured{}
		Expect(obj.UnmarshalJSON(raw.Raw)).To(Succeed(), "examples/%s", name)
		objs = append(objs, obj)
	}
	Expect(objs).NotTo(BeEmpty(), "examples/%s", name)
	return objs
}

// applyExample creates the objects of an example file in namespace ns, as
// `kubectl apply -n ns -f` would.
func applyExample(ctx SpecContext, ns, name string, replacements ...string) []*unstructured.Unstructured {
	GinkgoHelper()
	objs := readExample(name, replacements...)
	create(ctx, ns, objs)
	return objs
}

func create(ctx SpecContext, ns string, objs []*unstructured.Unstructured) {
	GinkgoHelper()
	for _, obj := range objs {
		namespaced, err := f.Client.IsObjectNamespaced(obj)
		Expect(err).NotTo(HaveOccurred())
		if namespaced {
			obj.SetNamespace(ns)
		}
		Expect(f.Client.Create(ctx, obj)).To(Succeed(), "%s %s", obj.GetKind(), obj.GetName())
	}
}

func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	GinkgoHelper()
	for _, obj := range objs {
		if obj.GetKind() == kind && obj.GetName() == name {
			return obj
		}
	}
	Fail("no " + kind + " " + name + " in the example")
	return nil
}

func nestedString(obj *unstructured.Unstructured, fields ...string) string {
	GinkgoHelper()
	s, found, err := unstructured.NestedString(obj.Object, fields...)
	Expect(err).NotTo(HaveOccurred())
	Expect(found).To(BeTrue(), "%s in %s %s", strings.Join(fields, "."), obj.GetKind(), obj.GetName())
	return s
}
