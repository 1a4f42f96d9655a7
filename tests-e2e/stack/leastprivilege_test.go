package stack

import (
	"context"
	"os/exec"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestLeastPrivilege checks the wiring of Options.LeastPrivilege (the end-to-end suite runs
// every spec under it): each binary runs as its ServiceAccount of manifests/base, holds its
// leader-election lease where the manifests grant it, is refused what its markers do not
// grant, and no refusal shows in its log after start-up.
func TestLeastPrivilege(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s, err := Start(ctx, Options{Dir: t.TempDir(), LeastPrivilege: true})
	t.Cleanup(func() {
		if s != nil {
			// Stop fails on any refusal to a binary's ServiceAccount.
			g.Expect(s.Stop()).To(Succeed())
		}
	})
	g.Expect(err).NotTo(HaveOccurred())

	want := map[string]client.ObjectKey{
		"backend":              {Namespace: "gitops-service", Name: "gitops-service-backend"},
		"cluster-agent":        {Namespace: "gitops-service", Name: "gitops-service-cluster-agent"},
		"appstudio-controller": {Namespace: "gitops-service", Name: "gitops-service-appstudio-controller"},
	}
	g.Expect(s.ServiceAccounts).To(Equal(want))
	clients := map[string]*kubernetes.Clientset{}
	for name, sa := range want {
		cfg, err := clientcmd.BuildConfigFromFlags("", s.launches[name].kubeconfig)
		g.Expect(err).NotTo(HaveOccurred())
		cs, err := kubernetes.NewForConfig(cfg)
		g.Expect(err).NotTo(HaveOccurred())
		clients[name] = cs
		review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(review.Status.UserInfo.Username).To(Equal("system:serviceaccount:" + sa.Namespace + ":" + sa.Name))
	}

	// Leader election works with the manifests' Roles: each binary holds its lease.
	leases := map[string]string{
		"backend":              "gitops-service",
		"appstudio-controller": "gitops-service",
		"cluster-agent":        EngineNamespace,
	}
	for name, ns := range leases {
		g.Eventually(func() string {
			lease := &coordinationv1.Lease{}
			key := client.ObjectKey{Namespace: ns, Name: name + ".managed-gitops.redhat.com"}
			if err := s.ControlPlane.Client.Get(ctx, key, lease); err != nil || lease.Spec.HolderIdentity == nil {
				return ""
			}
			return *lease.Spec.HolderIdentity
		}, 30*time.Second, 200*time.Millisecond).ShouldNot(BeEmpty(), "lease of %s in %s", name, ns)
	}

	// Not an admin: the backend only reads Secrets, and the agent reads nothing outside the
	// engine namespace. The refusal is the one Forbidden looks for in the logs.
	_, err = clients["backend"].CoreV1().Secrets("default").Create(ctx,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
	g.Expect(refusedTo(err.Error(), want["backend"])).To(BeTrue(), err.Error())
	g.Expect(refusedTo(err.Error(), want["cluster-agent"])).To(BeFalse())
	_, err = clients["cluster-agent"].CoreV1().Secrets("default").List(ctx, metav1.ListOptions{})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
	_, err = clients["cluster-agent"].CoreV1().Secrets(EngineNamespace).List(ctx, metav1.ListOptions{})
	g.Expect(err).NotTo(HaveOccurred())

	forbidden, err := s.Forbidden()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(forbidden).To(BeEmpty())

	// Each binary documents its flags, and SIGTERM stops it cleanly (exit code 0, well
	// before Stop's grace period would kill it).
	for name := range want {
		help, err := exec.CommandContext(ctx, s.launches[name].path, "--help").CombinedOutput()
		g.Expect(err).NotTo(HaveOccurred(), "%s --help: %s", name, help)
		g.Expect(string(help)).To(ContainSubstring("-metrics-bind-address"), "%s --help", name)
		p := s.Processes[name]
		start := time.Now()
		g.Expect(p.Stop(30 * time.Second)).To(Succeed())
		g.Expect(p.ExitCode()).To(BeZero(), "%s exits cleanly on SIGTERM", name)
		g.Expect(time.Since(start)).To(BeNumerically("<", 20*time.Second), "%s stops promptly", name)
	}
}
