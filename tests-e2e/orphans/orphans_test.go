// Package orphans_test deletes a GitOpsDeployment while Argo CD's application controller is
// down, so that Argo CD cannot prune what it deployed, and checks that the service removes
// what was left behind after its grace period: with Argo CD's own identity, only what the
// deleted Application still tracks, never what a resource's annotation keeps.
package orphans_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/orphans"
	. "github.com/gitops-service/gitops-service/tests-e2e/framework"
	"github.com/gitops-service/gitops-service/tests-e2e/gitserver"
	"github.com/gitops-service/gitops-service/tests-e2e/stack"
)

// keptConfigMap opts out of the removal in Git, as a user would.
const keptConfigMap = `apiVersion: v1
kind: ConfigMap
metadata:
  name: kept
  annotations:
    ` + orphans.AnnotationKeep + `: "true"
data:
  greeting: "kept"
`

func TestWhatArgoCDLeftBehindIsRemovedAfterTheGracePeriod(t *testing.T) {
	ctrl.SetLogger(logr.Discard())
	g, ctx := NewWithT(t), t.Context()
	s := stack.StartForTest(t, stack.Options{
		ArgoCD: true, Binaries: []string{"backend", "cluster-agent"},
		GitServer: &gitserver.Options{Addr: "127.0.0.1:0"},
		Args:      map[string][]string{"cluster-agent": {"--application-deletion-timeout=5s", "--orphaned-resource-grace-period=5s"}},
	})
	c := s.ControlPlane.Client

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "tenant-"}}
	g.Expect(c.Create(ctx, ns)).To(Succeed())
	g.Expect(s.Git.Create("app", nil)).To(Succeed())
	_, err := s.Git.Commit("app", map[string]string{
		"app/left-behind.yaml": ConfigMap("left-behind", "greeting", "hello"),
		"app/kept.yaml":        keptConfigMap,
	}, "two ConfigMaps")
	g.Expect(err).NotTo(HaveOccurred())
	depl := &v1.GitOpsDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns.Name, Finalizers: []string{v1.FinalizerResourcesFinalizer}},
		Spec: v1.GitOpsDeploymentSpec{Source: v1.ApplicationSource{RepoURL: s.Git.URL("app"), Path: "app"},
			Type: v1.GitOpsDeploymentSpecTypeAutomated},
	}
	g.Expect(c.Create(ctx, depl)).To(Succeed())
	g.Eventually(Object(ctx, c, depl), Timeout, Poll).Should(BeSyncedAndHealthy())
	g.Expect(ConfigMapData(ctx, c, ns.Name, "left-behind")()).To(HaveKeyWithValue("greeting", "hello"))

	t.Log("Argo CD's application controller stops; the deployment is deleted and Argo CD cannot prune")
	g.Expect(s.ArgoCD.Controller.Stop(5 * time.Second)).To(Succeed())
	g.Expect(c.Delete(ctx, depl)).To(Succeed())
	g.Eventually(Gone(ctx, c, depl), Timeout, Poll).Should(BeTrue(), "the deployment goes once its Application was forced away")
	g.Expect(ConfigMapData(ctx, c, ns.Name, "left-behind")()).To(HaveKey("greeting"), "the resources are still there")
	g.Eventually(func() []string { return events(ctx, g, c, ns.Name, "ResourcesMayRemain") }, Timeout, Poll).Should(ConsistOf(
		And(ContainSubstring("ConfigMap "+ns.Name+"/left-behind"), ContainSubstring("are removed unless annotated"))))

	t.Log("after the grace period what the deleted Application alone tracked is removed; the annotated ConfigMap stays")
	g.Eventually(ConfigMapData(ctx, c, ns.Name, "left-behind"), Timeout, Poll).Should(BeAbsent())
	g.Expect(ConfigMapData(ctx, c, ns.Name, "kept")()).To(HaveKeyWithValue("greeting", "kept"))
	g.Eventually(func() []string { return events(ctx, g, c, ns.Name, "LeftoversRemoved") }, Timeout, Poll).Should(ConsistOf(
		And(ContainSubstring("ConfigMap "+ns.Name+"/left-behind"), Not(ContainSubstring(ns.Name+"/kept")))))
}

// events are the messages of the Events with reason in namespace.
func events(ctx context.Context, g Gomega, c client.Client, namespace, reason string) []string {
	list := &corev1.EventList{}
	g.Expect(c.List(ctx, list, client.InNamespace(namespace))).To(Succeed())
	var out []string
	for _, ev := range list.Items {
		if ev.Reason == reason {
			out = append(out, ev.Message)
		}
	}
	return out
}
