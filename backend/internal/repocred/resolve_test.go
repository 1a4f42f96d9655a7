package repocred

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/outcome"
)

func TestResolveReadsTheCredentialsTheURLNeeds(t *testing.T) {
	const https, ssh = "https://git.example.com/org/app.git", "ssh://git@git.example.com/org/app.git"
	all := map[string][]byte{"username": []byte("jane"), "password": []byte("pat"), "sshPrivateKey": []byte("KEY"), "url": []byte("ignored")}
	tests := []struct {
		name       string
		repository string
		secretType corev1.SecretType
		data       map[string][]byte
		want       *Credentials
		// wantMessage is the problem's message ("" when valid).
		wantMessage string
	}{
		{name: "https with username and password", repository: https, data: map[string][]byte{"username": []byte("jane"), "password": []byte("pat")},
			want: &Credentials{Username: []byte("jane"), Password: []byte("pat")}},
		// Only what the scheme uses is kept: a key is never offered to an https server.
		{name: "https, every key", repository: https, data: all, want: &Credentials{Username: []byte("jane"), Password: []byte("pat")}},
		{name: "ssh, every key", repository: ssh, data: all, want: &Credentials{SSHPrivateKey: []byte("KEY")}},
		{name: "ssh with a key only", repository: ssh, data: map[string][]byte{"sshPrivateKey": []byte("KEY")}, want: &Credentials{SSHPrivateKey: []byte("KEY")}},
		{name: "an Opaque Secret", repository: https, secretType: corev1.SecretTypeOpaque, data: all,
			wantMessage: `Secret "repo-secret" (spec.secret) must be of type "managed-gitops.redhat.com/repository-credential", not "Opaque"`},
		{name: "ssh without a key", repository: ssh, data: map[string][]byte{"username": []byte("jane"), "password": []byte("pat")},
			wantMessage: `Secret "repo-secret" (spec.secret) has no "sshPrivateKey" key, which an ssh:// repository needs`},
		{name: "ssh with an empty key", repository: ssh, data: map[string][]byte{"sshPrivateKey": {}},
			wantMessage: `Secret "repo-secret" (spec.secret) has no "sshPrivateKey" key, which an ssh:// repository needs`},
		{name: "https with a key only", repository: https, data: map[string][]byte{"sshPrivateKey": []byte("KEY")},
			wantMessage: `Secret "repo-secret" (spec.secret) must have non-empty "username" and "password" keys for an https:// repository`},
		{name: "https without a password", repository: https, data: map[string][]byte{"username": []byte("jane")},
			wantMessage: `Secret "repo-secret" (spec.secret) must have non-empty "username" and "password" keys for an https:// repository`},
		{name: "https with an empty username", repository: https, data: map[string][]byte{"username": {}, "password": []byte("pat")},
			wantMessage: `Secret "repo-secret" (spec.secret) must have non-empty "username" and "password" keys for an https:// repository`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			cred := &v1.GitOpsDeploymentRepositoryCredential{Spec: v1.GitOpsDeploymentRepositoryCredentialSpec{Repository: tt.repository, Secret: "repo-secret"}}
			secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "repo-secret"}, Type: v1.RepositoryCredentialSecretType, Data: tt.data}
			if tt.secretType != "" {
				secret.Type = tt.secretType
			}
			got, err := Resolve(cred, secret)
			if tt.wantMessage == "" {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(got).To(Equal(tt.want))
				return
			}
			g.Expect(got).To(BeNil())
			e := outcome.As(err)
			g.Expect(e).NotTo(BeNil())
			g.Expect(e.Kind).To(Equal(outcome.User))
			g.Expect(e.Reason).To(Equal(v1.RepositoryCredentialReasonSecretInvalidType))
			g.Expect(e.Message).To(Equal(tt.wantMessage))
			g.Expect(problemCondition(e.Reason)).To(Equal(v1.RepositoryCredentialConditionValidRepositoryCredential))
		})
	}
}

// Every problem makes exactly one of the two Valid... conditions False: the URL's for a bad
// URL, the credential's for everything else.
func TestProblemCondition(t *testing.T) {
	for reason, want := range map[string]string{
		v1.RepositoryCredentialReasonInvalidRepositoryUrl: v1.RepositoryCredentialConditionValidRepositoryUrl,
		v1.RepositoryCredentialReasonInvalidCredentials:   v1.RepositoryCredentialConditionValidRepositoryCredential,
		v1.RepositoryCredentialReasonSecretInvalidType:    v1.RepositoryCredentialConditionValidRepositoryCredential,
		v1.RepositoryCredentialReasonSecretNotFound:       v1.RepositoryCredentialConditionValidRepositoryCredential,
	} {
		if got := problemCondition(reason); got != want {
			t.Errorf("problemCondition(%q) = %q, want %q", reason, got, want)
		}
	}
}

// URLs that cannot be a repository, and keys that cannot be used, are refused before any
// connection.
func TestVerifyRefusesWithoutConnecting(t *testing.T) {
	tests := []struct {
		name, repository string
		creds            *Credentials
		reason, message  string
	}{
		{"http", "http://git.example.com/org/app.git", &Credentials{}, v1.RepositoryCredentialReasonInvalidRepositoryUrl,
			"spec.repository must be an https:// or ssh:// URL with a host"},
		{"scp-like", "git@git.example.com:org/app.git", &Credentials{}, v1.RepositoryCredentialReasonInvalidRepositoryUrl,
			"spec.repository must be an https:// or ssh:// URL with a host"},
		{"no host", "https:///org/app.git", &Credentials{}, v1.RepositoryCredentialReasonInvalidRepositoryUrl,
			"spec.repository must be an https:// or ssh:// URL with a host"},
		{"file", "file:///srv/git/app.git", &Credentials{}, v1.RepositoryCredentialReasonInvalidRepositoryUrl,
			"spec.repository must be an https:// or ssh:// URL with a host"},
		{"a password in the URL", "https://jane:hunter2@git.example.com/org/app.git", &Credentials{}, v1.RepositoryCredentialReasonInvalidRepositoryUrl,
			"spec.repository must not contain a password; put it in the Secret"},
		{"not a private key", "ssh://git@git.example.com/org/app.git", &Credentials{SSHPrivateKey: []byte("not a key")},
			v1.RepositoryCredentialReasonInvalidCredentials, `the "sshPrivateKey" key of the Secret is not a usable, unencrypted SSH private key`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			e := outcome.As(Verify(context.Background(), tt.repository, tt.creds, nil, time.Second))
			g.Expect(e).NotTo(BeNil())
			g.Expect(e.Kind).To(Equal(outcome.User))
			g.Expect(e.Reason).To(Equal(tt.reason))
			g.Expect(e.Message).To(Equal(tt.message))
			g.Expect(e.Message).NotTo(ContainSubstring("hunter2"))
		})
	}
}

func TestRedactRemovesTheCredentials(t *testing.T) {
	creds := &Credentials{Username: []byte("jane"), Password: []byte("pat-123"), SSHPrivateKey: []byte("-----KEY-----")}
	tests := []struct{ in, want string }{
		{"remote: invalid token pat-123 for jane", "remote: invalid token *** for jane"},
		{"pat-123pat-123", "******"},
		{"key -----KEY----- echoed", "key *** echoed"},
		{"nothing secret", "nothing secret"},
	}
	for _, tt := range tests {
		if got := redact(tt.in, creds); got != tt.want {
			t.Errorf("redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	// Empty credentials redact nothing (not every position of the message).
	if got := redact("message", &Credentials{}); got != "message" {
		t.Errorf("redact with no credentials = %q", got)
	}
}

func TestCauseDropsTheRepeatedURL(t *testing.T) {
	inner := errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"a URL error", &url.Error{Op: "Get", URL: "https://git.example.com/org/app.git/info/refs", Err: inner}, inner.Error()},
		{"a wrapped URL error", fmt.Errorf("listing: %w", &url.Error{Op: "Get", URL: "https://x", Err: inner}), inner.Error()},
		{"another error", inner, inner.Error()},
	}
	for _, tt := range tests {
		if got := cause(tt.err); got != tt.want {
			t.Errorf("%s: cause = %q, want %q", tt.name, got, tt.want)
		}
	}
}

type netTimeout struct{}

func (netTimeout) Error() string   { return "i/o timeout" }
func (netTimeout) Timeout() bool   { return true }
func (netTimeout) Temporary() bool { return true }

func TestErrorClassifiers(t *testing.T) {
	g := NewWithT(t)
	g.Expect(isNetTimeout(&net.OpError{Op: "read", Err: netTimeout{}})).To(BeTrue())
	g.Expect(isNetTimeout(fmt.Errorf("wrapped: %w", &net.OpError{Op: "read", Err: netTimeout{}}))).To(BeTrue())
	g.Expect(isNetTimeout(errors.New("i/o timeout"))).To(BeFalse(), "a message is not a timeout")
	g.Expect(isNetTimeout(&net.OpError{Op: "dial", Err: errors.New("connection refused")})).To(BeFalse())

	g.Expect(isSSHAuthFailure(errors.New("ssh: handshake failed: ssh: unable to authenticate, attempted methods [none publickey], no supported methods remain"))).To(BeTrue())
	g.Expect(isSSHAuthFailure(errors.New("ssh: handshake failed: EOF"))).To(BeFalse())
}

// The SSH connection's deadline comes after the check's own timeout, so that the check
// reports the timeout and the connection goes with it.
func TestDeadlineProxy(t *testing.T) {
	g := NewWithT(t)
	opts := deadlineProxy(20 * time.Second)
	u, err := url.Parse(opts.URL)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(u.Scheme).To(Equal(deadlineScheme))
	g.Expect(u.Query().Get("timeout")).To(Equal("21s"))
	g.Expect(strings.Contains(opts.URL, "@")).To(BeFalse(), "no credentials in the proxy URL")
}
