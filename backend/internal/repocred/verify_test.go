package repocred

import (
	"bytes"
	"context"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/outcome"
	"github.com/gitops-service/gitops-service/backend-shared/testenv"
)

const (
	gitUser     = "jane"
	gitPassword = "pat-0123456789"
)

// httpsGitServer serves root to gitUser with gitPassword, as a Git host serves a private
// repository.
func httpsGitServer(t *testing.T, root string, env []string) *httptest.Server {
	t.Helper()
	return testenv.GitHTTPSServer(t, root, env, gitUser, func() string { return gitPassword })
}

// Verify against a real Git server over https: each answer of the server becomes the
// condition the user guide names.
func TestVerifyHTTPS(t *testing.T) {
	root, env := testenv.GitRepositories(t)
	srv := httpsGitServer(t, root, env)
	caBundle := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	good := &Credentials{Username: []byte(gitUser), Password: []byte(gitPassword)}

	// A port nobody listens on: listen, note the address, close.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := ln.Addr().String()
	_ = ln.Close()

	tests := []struct {
		name       string
		repository string
		creds      *Credentials
		caBundle   []byte
		// reason is "" for a valid credential.
		reason  string
		message string
	}{
		{name: "valid", repository: srv.URL + "/repo.git", creds: good, caBundle: caBundle},
		// An empty repository is still a repository the credentials give access to.
		{name: "an empty repository", repository: srv.URL + "/empty.git", creds: good, caBundle: caBundle},
		{name: "a wrong password", repository: srv.URL + "/repo.git", creds: &Credentials{Username: []byte(gitUser), Password: []byte("wrong-pw")},
			caBundle: caBundle, reason: v1.RepositoryCredentialReasonInvalidCredentials,
			message: "the repository " + srv.URL + "/repo.git refused the credentials in the Secret"},
		{name: "no such repository", repository: srv.URL + "/missing.git", creds: good, caBundle: caBundle,
			reason: v1.RepositoryCredentialReasonInvalidRepositoryUrl, message: "repository " + srv.URL + "/missing.git was not found"},
		// Without the server's CA the TLS handshake fails: the URL's condition, with the cause.
		{name: "an untrusted certificate", repository: srv.URL + "/repo.git", creds: good,
			reason: v1.RepositoryCredentialReasonInvalidRepositoryUrl, message: "repository " + srv.URL + "/repo.git could not be reached: "},
		// Refused and filtered read alike (see TestVerifyStalledServerTimesOut).
		{name: "nobody listening", repository: "https://" + closedAddr + "/repo.git", creds: good, caBundle: caBundle,
			reason:  v1.RepositoryCredentialReasonInvalidRepositoryUrl,
			message: "the Git server of repository https://" + closedAddr + "/repo.git could not be reached: check spec.repository and that the server is reachable from the service"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := Verify(context.Background(), tt.repository, tt.creds, tt.caBundle, 10*time.Second)
			if tt.reason == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			e := outcome.As(err)
			g.Expect(e).NotTo(BeNil())
			g.Expect(e.Kind).To(Equal(outcome.User))
			g.Expect(e.Reason).To(Equal(tt.reason))
			g.Expect(e.Message).To(HavePrefix(tt.message))
			g.Expect(e.Message).NotTo(ContainSubstring(gitPassword))
			g.Expect(e.Message).NotTo(ContainSubstring("wrong-pw"))
		})
	}
}

// Verify against a real Git server over SSH: the authorised key is valid; another key is
// refused as a credential problem, not a URL problem.
func TestVerifySSH(t *testing.T) {
	root, env := testenv.GitRepositories(t)
	goodKey, goodPub, err := testenv.NewSSHKey()
	if err != nil {
		t.Fatal(err)
	}
	otherKey, _, err := testenv.NewSSHKey()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := testenv.StartSSHGitServer(root, env, goodPub)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })

	tests := []struct {
		name, repository string
		key              []byte
		reason           string
		message          string
	}{
		{name: "the authorised key", repository: srv.URL("repo"), key: goodKey},
		{name: "another key", repository: srv.URL("repo"), key: otherKey, reason: v1.RepositoryCredentialReasonInvalidCredentials,
			message: "the repository " + srv.URL("repo") + " refused the credentials in the Secret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := Verify(context.Background(), tt.repository, &Credentials{SSHPrivateKey: tt.key}, nil, 10*time.Second)
			if tt.reason == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			e := outcome.As(err)
			g.Expect(e).NotTo(BeNil())
			g.Expect(e.Reason).To(Equal(tt.reason))
			g.Expect(e.Message).To(Equal(tt.message))
			g.Expect(e.Message).NotTo(ContainSubstring("PRIVATE KEY"))
		})
	}
}

// A check cancelled from outside (the manager stopping) is not reported as a slow server.
func TestVerifyCancelledIsNotATimeout(t *testing.T) {
	g := NewWithT(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// Accept and never answer.
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = Verify(ctx, "https://"+ln.Addr().String()+"/repo.git", &Credentials{Username: []byte("u"), Password: []byte("p")}, nil, 5*time.Second)
	g.Expect(err).To(HaveOccurred())
	if e := outcome.As(err); e != nil {
		g.Expect(e.Message).NotTo(ContainSubstring("reachable from the service"), "a cancelled check is not the server's fault")
	}
}

// A server that accepts the connection and never answers is reported at the check's
// timeout as a URL problem that names the timeout, not left to TCP.
func TestVerifyStalledServerTimesOut(t *testing.T) {
	g := NewWithT(t)
	repository := "https://" + testenv.StallingListener(t) + "/repo.git"
	e := outcome.As(Verify(context.Background(), repository, &Credentials{Username: []byte("u"), Password: []byte("p")}, nil, time.Second))
	g.Expect(e).NotTo(BeNil())
	g.Expect(e.Reason).To(Equal(v1.RepositoryCredentialReasonInvalidRepositoryUrl))
	g.Expect(e.Message).To(Equal("the Git server of repository " + repository +
		" could not be reached: check spec.repository and that the server is reachable from the service"))
}

// A server that streams its reference advertisement without end is cut off once the check
// has read MaxAnswerBytes: the check fails as a URL problem that says so, long before its
// timeout, and the server gets to send little more than that.
func TestVerifyEndlessAnswerIsCutOff(t *testing.T) {
	g := NewWithT(t)
	var sent atomic.Int64
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-git-upload-pack-advertisement")
		pkt := func(s string) string { return fmt.Sprintf("%04x%s", len(s)+4, s) }
		hash := strings.Repeat("a", 40)
		_, _ = w.Write([]byte(pkt("# service=git-upload-pack\n") + "0000" + pkt(hash+" HEAD\x00multi_ack\n")))
		line := []byte(pkt(hash + " refs/heads/branch\n"))
		for r.Context().Err() == nil {
			n, err := w.Write(bytes.Repeat(line, 1024))
			sent.Add(int64(n))
			if err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	caBundle := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})

	start := time.Now()
	e := outcome.As(Verify(context.Background(), srv.URL+"/repo.git", &Credentials{}, caBundle, time.Minute))
	g.Expect(e).NotTo(BeNil())
	g.Expect(e.Reason).To(Equal(v1.RepositoryCredentialReasonInvalidRepositoryUrl))
	g.Expect(e.Message).To(ContainSubstring("answer exceeds 16 MiB"))
	g.Expect(time.Since(start)).To(BeNumerically("<", 30*time.Second))
	g.Eventually(sent.Load).Should(BeNumerically("<", 2*MaxAnswerBytes))
}
