package app_test

import (
	"io"
	"net"
	"net/url"
	"strconv"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/testenv"
)

// A cluster that cannot be reached is tried again without any change by the user: here the
// environment's API server address starts forwarding to the test API server only after
// the first attempt failed.
func TestUnreachableClusterIsRetried(t *testing.T) {
	t.Parallel()
	h := startBackend(t)
	port, err := testenv.FreePort()
	h.g.Expect(err).NotTo(HaveOccurred())
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	apiURL := "https://" + addr

	env := h.newEnvironment("flaky", v1.ManagedEnvironmentSecretType,
		map[string][]byte{"kubeconfig": kubeconfig(apiURL, h.serviceAccountToken("flaky-admin", true))},
		func(e *v1.GitOpsDeploymentManagedEnvironment) { e.Spec.APIURL = apiURL })
	h.g.Eventually(h.connection(env), eventually, poll).Should(And(
		HaveField("Status", metav1.ConditionFalse),
		HaveField("Reason", string(v1.ManagedEnvironmentReasonUnableToValidateClusterCredentials)),
		HaveField("Message", HaveSuffix("; retrying"))))

	// The cluster becomes reachable: a TCP forwarder to the test API server.
	target, err := url.Parse(cp.Config.Host)
	h.g.Expect(err).NotTo(HaveOccurred())
	ln, err := net.Listen("tcp", addr)
	h.g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = ln.Close() })
	go forward(ln, target.Host)

	h.g.Eventually(h.connection(env), eventually, poll).Should(HaveField("Status", metav1.ConditionTrue))
}

// forward copies every connection accepted on ln to target, until ln is closed.
func forward(ln net.Listener, target string) {
	for {
		in, err := ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", target)
		if err != nil {
			_ = in.Close()
			continue
		}
		go func() { _, _ = io.Copy(out, in); _ = out.Close() }()
		go func() { _, _ = io.Copy(in, out); _ = in.Close() }()
	}
}
