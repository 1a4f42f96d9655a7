// Package refresh_test runs the service with Argo CD's polling turned off (an hour), so
// that a new commit reaches a cluster only when something asks Argo CD to refresh: the
// refresh annotation, or a push the Git webhook receiver verifies. The Git server calls
// the receiver after each commit, as a Git host's webhook does after a push.
package refresh_test

import (
	"context"
	"fmt"
	"net/http"
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
	s := stack.StartForTest(t, stack.Options{
		ArgoCD: true, ArgoCDPolling: time.Hour, GitWebhook: true,
		Binaries:  []string{"backend", "cluster-agent"},
		GitServer: &gitserver.Options{Addr: "127.0.0.1:0", TLS: true, OnCommit: h.onCommit},
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
	deploy := func(ns, name, repo string, typ v1.GitOpsDeploymentSpecType) *v1.GitOpsDeployment {
		depl := &v1.GitOpsDeployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: v1.GitOpsDeploymentSpec{Source: v1.ApplicationSource{RepoURL: s.Git.URL(repo), Path: "app"}, Type: typ}}
		g.Expect(c.Create(ctx, depl)).To(Succeed())
		return depl
	}
	repository := func(name string) string {
		g.Expect(s.Git.Create(name, nil)).To(Succeed())
		sha, err := s.Git.Commit(name, map[string]string{"app/configmap.yaml": ConfigMap("hello", "greeting", "v1")}, "v1")
		g.Expect(err).NotTo(HaveOccurred())
		return sha
	}
	refreshOf := func(d *v1.GitOpsDeployment) string {
		got, err := Object(ctx, c, d)()
		g.Expect(err).NotTo(HaveOccurred())
		return got.Annotations[v1.RefreshAnnotation]
	}
	a, b := tenant("tenant-a-", "secret-a"), tenant("tenant-b-", "secret-b")

	// Tenant B's deployment of the same repository is manual: Argo CD compares it, and only
	// a refresh makes it compare a newer commit (there is no sync after which Argo CD would
	// compare it again by itself).
	first := repository("pushed")
	mine := deploy(a, "mine", "pushed", v1.GitOpsDeploymentSpecTypeAutomated)
	theirs := deploy(b, "theirs", "pushed", v1.GitOpsDeploymentSpecTypeManual)
	g.Eventually(Object(ctx, c, mine), Timeout, Poll).Should(And(BeSyncedAndHealthy(), HaveRevision(first)))
	g.Eventually(Object(ctx, c, theirs), Timeout, Poll).Should(HaveRevision(first))

	t.Log("a push, verified by tenant A's receiver, deploys at once; tenant B's deployment of the same repository is not refreshed")
	h.mu.Lock()
	h.repos["pushed"] = [2]string{a, "secret-a"}
	h.mu.Unlock()
	second, err := s.Git.Commit("pushed", map[string]string{"app/configmap.yaml": ConfigMap("hello", "greeting", "v2")}, "v2")
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(Object(ctx, c, mine), 20*time.Second, Poll).Should(And(BeSyncedAndHealthy(), HaveRevision(second)))
	g.Expect(ConfigMapData(ctx, c, a, "hello")()).To(HaveKeyWithValue("greeting", "v2"))
	stamp := refreshOf(mine)
	g.Expect(stamp).NotTo(BeEmpty())
	g.Expect(refreshOf(theirs)).To(BeEmpty())
	g.Consistently(Object(ctx, c, theirs), 3*time.Second, Poll).Should(HaveRevision(first))

	t.Log("a push signed with another tenant's secret is refused and refreshes nothing")
	h.mu.Lock()
	h.repos["pushed"] = [2]string{b, "secret-a"}
	h.mu.Unlock()
	third, err := s.Git.Commit("pushed", map[string]string{"app/configmap.yaml": ConfigMap("hello", "greeting", "v3")}, "v3")
	g.Expect(err).To(MatchError(ContainSubstring("401")))
	g.Expect(refreshOf(theirs)).To(BeEmpty())
	g.Expect(refreshOf(mine)).To(Equal(stamp))
	g.Consistently(Object(ctx, c, theirs), 3*time.Second, Poll).Should(HaveRevision(first))

	t.Log("the refresh annotation makes Argo CD compare tenant B's deployment with the new commit, and the status records it")
	patch := client.MergeFrom(theirs.DeepCopy())
	theirs.Annotations = map[string]string{v1.RefreshAnnotation: "now"}
	g.Expect(c.Patch(ctx, theirs, patch)).To(Succeed())
	g.Eventually(Object(ctx, c, theirs), 20*time.Second, Poll).Should(And(HaveRevision(third),
		HaveField("Status.LastHandledRefresh", "now"), HaveReady(v1.GitOpsConditionStatusFalse, "OutOfSync")))
}
