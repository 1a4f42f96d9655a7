// Package e2e is the end-to-end suite: the service's binaries, a real Argo CD and a Git
// server on this machine, driven only through the Kubernetes API, as users drive it.
package e2e

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/tests-e2e/framework"
	"github.com/gitops-service/gitops-service/tests-e2e/gitserver"
)

func TestEndToEnd(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "GitOps Service end to end")
}

var (
	f         *framework.Framework
	anyFailed bool
)

var _ = BeforeSuite(func(ctx SpecContext) {
	var err error
	f, err = framework.Start(ctx)
	Expect(err).NotTo(HaveOccurred())
	SetDefaultEventuallyTimeout(framework.Timeout)
	SetDefaultEventuallyPollingInterval(framework.Poll)
	SetDefaultConsistentlyDuration(5 * time.Second)
}, NodeTimeout(10*time.Minute))

var _ = AfterEach(func() {
	if CurrentSpecReport().Failed() {
		anyFailed = true
		f.DumpLogs(GinkgoWriter, 30_000)
		GinkgoWriter.Printf("all logs: %s\n", f.LogDir())
	}
})

var _ = AfterSuite(func() {
	if f != nil {
		Expect(f.Stop(anyFailed)).To(Succeed())
	}
})

// tenant creates a namespace for the running spec.
func tenant(ctx SpecContext, prefix string) string {
	ns, err := f.CreateNamespace(ctx, prefix)
	Expect(err).NotTo(HaveOccurred())
	return ns
}

// repository creates a Git repository named after the spec's namespace.
func repository(name string, files map[string]string, private *gitserver.Credentials) (url, commit string) {
	url, commit, err := f.CreateRepository(name, files, private)
	Expect(err).NotTo(HaveOccurred())
	return url, commit
}

// commit adds a commit to a repository.
func commit(name string, files map[string]string) string {
	sha, err := f.Git.Commit(name, files, "update")
	Expect(err).NotTo(HaveOccurred())
	return sha
}

// gitopsDeployment is a GitOpsDeployment of path of repoURL into its own namespace.
func gitopsDeployment(namespace, name, repoURL, path string, specType v1.GitOpsDeploymentSpecType) *v1.GitOpsDeployment {
	return &v1.GitOpsDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: v1.GitOpsDeploymentSpec{
			Source: v1.ApplicationSource{RepoURL: repoURL, Path: path},
			Type:   specType,
		},
	}
}

// update applies mutate to the latest obj and writes it (or its status), retrying when
// a controller wrote in between.
func update[T client.Object](ctx SpecContext, obj T, status bool, mutate func(T)) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := f.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		mutate(obj)
		if status {
			return f.Client.Status().Update(ctx, obj)
		}
		return f.Client.Update(ctx, obj)
	})).To(Succeed())
}
