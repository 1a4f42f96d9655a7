package clusterconfig

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/gitops-service/gitops-service/backend-shared/db"
)

// storedKubeconfig has two contexts on two clusters; "current" is the current one.
const storedKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: a
  cluster:
    server: https://a.example.com:6443
    certificate-authority-data: Y2EtYQ==
- name: b
  cluster:
    server: https://b.example.com:6443
    insecure-skip-tls-verify: true
contexts:
- name: current
  context:
    cluster: a
    user: ua
- name: secret-context-name
  context:
    cluster: b
    user: ub
- name: plugin
  context:
    cluster: a
    user: exec
current-context: current
users:
- name: ua
  user:
    token: token-a
- name: ub
  user:
    token: token-b
- name: exec
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: aws
`

func TestFromCredentials(t *testing.T) {
	tests := []struct {
		name         string
		creds        *db.ClusterCredentials
		wantHost     string
		wantToken    string
		wantInsecure bool
		wantCA       string
		wantErr      string
	}{
		{
			// An engine cluster registered with an address and a token only.
			name:     "no kubeconfig: the host and token",
			creds:    &db.ClusterCredentials{Host: "https://engine.example.com", BearerToken: "tok", AllowInsecureSkipTLSVerify: true},
			wantHost: "https://engine.example.com", wantToken: "tok", wantInsecure: true,
		},
		{
			name:     "the named context",
			creds:    &db.ClusterCredentials{Kubeconfig: storedKubeconfig, KubeconfigContext: "secret-context-name"},
			wantHost: "https://b.example.com:6443", wantToken: "token-b", wantInsecure: true,
		},
		{
			name:     "no context named: the current one",
			creds:    &db.ClusterCredentials{Kubeconfig: storedKubeconfig},
			wantHost: "https://a.example.com:6443", wantToken: "token-a", wantCA: "ca-a",
		},
		{
			// The kubeconfig is what was checked and stored; the row's Host is not mixed in.
			name:     "the kubeconfig wins over the row's host and token",
			creds:    &db.ClusterCredentials{Kubeconfig: storedKubeconfig, KubeconfigContext: "current", Host: "https://elsewhere", BearerToken: "other"},
			wantHost: "https://a.example.com:6443", wantToken: "token-a", wantCA: "ca-a",
		},
		{name: "not a kubeconfig", creds: &db.ClusterCredentials{Kubeconfig: "clusters: [", KubeconfigContext: "x"},
			wantErr: "the stored kubeconfig cannot be parsed"},
		{name: "a context that is not there", creds: &db.ClusterCredentials{Kubeconfig: storedKubeconfig, KubeconfigContext: "gone"},
			wantErr: "no client can be built from the stored kubeconfig"},
		{name: "a plugin", creds: &db.ClusterCredentials{Kubeconfig: storedKubeconfig, KubeconfigContext: "plugin"},
			wantErr: "no client can be built from the stored kubeconfig"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			cfg, err := FromCredentials(tt.creds)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(tt.wantErr))
				g.Expect(cfg).To(BeNil())
				// Errors never quote the kubeconfig, not even its context names.
				g.Expect(strings.Contains(err.Error(), "secret-context-name") || strings.Contains(err.Error(), "token")).To(BeFalse())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(cfg.Host).To(Equal(tt.wantHost))
			g.Expect(cfg.BearerToken).To(Equal(tt.wantToken))
			g.Expect(cfg.Insecure).To(Equal(tt.wantInsecure))
			g.Expect(string(cfg.CAData)).To(Equal(tt.wantCA))
		})
	}
}
