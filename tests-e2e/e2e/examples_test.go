package e2e

import (
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/testenv"
	. "github.com/gitops-service/gitops-service/tests-e2e/framework"
)

// The examples point at the local stack's Git server; here the same repository is served
// by the suite's, so the examples are applied as they are but for the repository URL.
const examplesRepoURL = "http://127.0.0.1:8418/gitops-examples.git"

var _ = Describe("The examples", func() {
	It("deploy as documented", func(ctx SpecContext) {
		root, err := testenv.RepoRoot()
		Expect(err).NotTo(HaveOccurred())
		ns := tenant(ctx, "examples")
		Expect(f.Git.Create(ns, nil)).To(Succeed())
		sha, err := f.Git.CommitDir(ns, filepath.Join(root, "examples", "repository"), "examples")
		Expect(err).NotTo(HaveOccurred())

		data, err := os.ReadFile(filepath.Join(root, "examples", "gitopsdeployment.yaml"))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(data)).To(ContainSubstring(examplesRepoURL))
		depl := &v1.GitOpsDeployment{}
		Expect(yaml.UnmarshalStrict([]byte(strings.ReplaceAll(string(data), examplesRepoURL, f.Git.URL(ns))), depl)).To(Succeed())
		depl.Namespace = ns
		Expect(f.Client.Create(ctx, depl)).To(Succeed())

		Eventually(Object(ctx, f.Client, depl)).Should(And(BeSyncedAndHealthy(), HaveRevision(sha),
			HaveResource("ConfigMap", "hello"), HaveResource("Service", "hello")))
		Expect(configMap(ctx, f.Client, ns, "hello")()).To(HaveKey("greeting"))
	})
})
