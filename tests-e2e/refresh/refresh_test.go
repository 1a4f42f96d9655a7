// Package refresh_test runs the service with Argo CD's polling turned off (an hour), so
// that a new commit reaches a cluster only when something asks Argo CD to refresh: the
// refresh annotation, or a push the Git webhook receiver verifies. The Git server calls
// the receiver after each commit, as a Git host's webhook does after a push.
package refresh_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	. "github.com/gitops-service/gitops-service/tests-e2e/framework"
	"github.com/gitops-service/gitops-service/tests-e2e/gitserver"
	"github.com/gitops-service/gitops-service/tests-e2e/stack"
)

// hooks maps a repository to the namespace whose receiver its commits notify, and the
// secret they are signed with.
type hooks struct {
	ctx   context.Context
	mu    sync.Mutex
	s     *stack.Stack
	repos map[string][2]string
}

func (h *hooks) onCommit(name, branch, commit string) error {
	h.mu.Lock()
	target, ok := h.repos[name]
	s := h.s
	h.mu.Unlock()
	if !ok {
		return nil // a repository without a webhook
	}
	code, body, err := s.GitWebhook.PushGitHub(h.ctx, target[0], target[1], s.Git.URL(name), branch, commit)
	if err != nil {
		return err
	}
	if code != http.StatusAccepted {
		return fmt.Errorf("the receiver answered %d: %s", code, body)
	}
	return nil
}

func TestARefreshReachesArgoCDWithoutPolling(t *testing.T) {
	g, ctx := NewWithT(t), t.Context()
	h := &hooks{ctx: ctx, repos: map[string][2]string{}}
	dir, err := os.MkdirTemp("", "gitops-refresh-")
	g.Expect(err).NotTo(HaveOccurred())
	s, err := stack.Start(ctx, stack.Options{
		Dir: dir, ArgoCD: true, ArgoCDPolling: time.Hour, GitWebhook: true,
		Binaries:  []string{"backend", "cluster-agent"},
		GitServer: &gitserver.Options{Addr: "127.0.0.1:0", TLS: true, OnCommit: h.onCommit},
		Progress:  func(what string) { t.Logf("stack: %s", what) },
	})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		_ = s.Stop()
		if t.Failed() {
			stack.DumpLogs(os.Stderr, s.LogDir, 20_000)
			t.Logf("all logs: %s", s.LogDir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	h.s = s
	c := s.ControlPlane.Client
	tenant := func(prefix, secret string) string {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}
		g.Expect(c.Create(ctx, ns)).To(Succeed())
		g.Expect(c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "gitops-service-git-webhook", Namespace: ns.Name},
			StringData: map[string]string{"secret": secret}})).To(Succeed())
		return ns.Name
	}
	deploy := func(ns, name, repo string) *v1.GitOpsDeployment {
		depl := &v1.GitOpsDeployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: v1.GitOpsDeploymentSpec{Source: v1.ApplicationSource{RepoURL: s.Git.URL(repo), Path: "app"}, Type: v1.GitOpsDeploymentSpecTypeAutomated}}
		g.Expect(c.Create(ctx, depl)).To(Succeed())
		return depl
	}
	repository := func(name string) string {
		g.Expect(s.Git.Create(name, nil)).To(Succeed())
		sha, err := s.Git.Commit(name, map[string]string{"app/configmap.yaml": ConfigMap("hello", "greeting", "v1")}, "v1")
		g.Expect(err).NotTo(HaveOccurred())
		return sha
	}
	a, b := tenant("tenant-a-", "secret-a"), tenant("tenant-b-", "secret-b")

	first := repository("pushed")
	mine := deploy(a, "mine", "pushed")
	theirs := deploy(b, "theirs", "pushed") // the same repository, another tenant
	for _, d := range []*v1.GitOpsDeployment{mine, theirs} {
		g.Eventually(Object(ctx, c, d), Timeout, Poll).Should(And(BeSyncedAndHealthy(), HaveRevision(first)))
	}

	t.Log("a push, verified by tenant A's receiver, deploys at once; tenant B's deployment of the same repository is not refreshed")
	h.mu.Lock()
	h.repos["pushed"] = [2]string{a, "secret-a"}
	h.mu.Unlock()
	second, err := s.Git.Commit("pushed", map[string]string{"app/configmap.yaml": ConfigMap("hello", "greeting", "v2")}, "v2")
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(Object(ctx, c, mine), 20*time.Second, Poll).Should(And(BeSyncedAndHealthy(), HaveRevision(second)))
	g.Expect(ConfigMapData(ctx, c, a, "hello")()).To(HaveKeyWithValue("greeting", "v2"))
	g.Expect(ConfigMapData(ctx, c, b, "hello")()).To(HaveKeyWithValue("greeting", "v1"))
	g.Expect(Object(ctx, c, theirs)()).To(HaveRevision(first))

	t.Log("a push signed with another tenant's secret is refused and deploys nothing")
	h.mu.Lock()
	h.repos["pushed"] = [2]string{b, "secret-a"}
	h.mu.Unlock()
	_, err = s.Git.Commit("pushed", map[string]string{"app/configmap.yaml": ConfigMap("hello", "greeting", "v3")}, "v3")
	g.Expect(err).To(MatchError(ContainSubstring("401")))
	g.Consistently(ConfigMapData(ctx, c, b, "hello"), 5*time.Second, Poll).Should(HaveKeyWithValue("greeting", "v1"))

	t.Log("the refresh annotation deploys tenant B's new commit, and the status records it")
	patch := client.MergeFrom(theirs.DeepCopy())
	theirs.Annotations = map[string]string{v1.RefreshAnnotation: "now"}
	g.Expect(c.Patch(ctx, theirs, patch)).To(Succeed())
	g.Eventually(ConfigMapData(ctx, c, b, "hello"), 20*time.Second, Poll).Should(HaveKeyWithValue("greeting", "v3"))
	g.Eventually(Object(ctx, c, theirs), 20*time.Second, Poll).Should(And(BeSyncedAndHealthy(),
		HaveField("Status.LastHandledRefresh", "now"), HaveReady(v1.GitOpsConditionStatusTrue, "Deployed")))
}
