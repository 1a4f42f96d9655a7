package engineinstances_test

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gitops-service/gitops-service/backend/internal/engineinstances"
)

// writeFile writes content to name in dir and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestEngineClusterCredentialsKeepOneContextWithItsFilesInlined(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	writeFile(t, dir, "ca.crt", "east-ca")
	path := writeFile(t, dir, "kubeconfig", `apiVersion: v1
kind: Config
current-context: west
clusters:
- name: east
  cluster: {server: "https://east.example.com:6443", certificate-authority: ca.crt}
- name: west
  cluster: {server: "https://west.example.com:6443"}
users:
- name: east-admin
  user: {token: east-secret-token}
- name: west-admin
  user: {token: west-secret-token}
contexts:
- name: east
  context: {cluster: east, user: east-admin}
- name: west
  context: {cluster: west, user: west-admin}
`)
	creds, _, err := engineinstances.EngineClusterCredentials(path, "east")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(creds.Host).To(Equal("https://east.example.com:6443"))
	stored, err := clientcmd.Load([]byte(creds.Kubeconfig))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(stored.CurrentContext).To(Equal("east"))
	g.Expect(stored.Clusters).To(HaveLen(1))
	g.Expect(stored.AuthInfos).To(HaveLen(1), "the other context's token is not stored")
	g.Expect(stored.Clusters["east"].CertificateAuthority).To(BeEmpty())
	g.Expect(string(stored.Clusters["east"].CertificateAuthorityData)).To(Equal("east-ca"), "the CA file is inlined: the backend runs elsewhere")

	current, _, err := engineinstances.EngineClusterCredentials(path, "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(current.Host).To(Equal("https://west.example.com:6443"))

	// A token file is read and stored inline, as the CA file is.
	writeFile(t, dir, "token", "file-token\n")
	fromFile, _, err := engineinstances.EngineClusterCredentials(writeFile(t, dir, "with-token-file", `apiVersion: v1
kind: Config
current-context: c
clusters: [{name: c, cluster: {server: "https://east.example.com"}}]
users: [{name: u, user: {tokenFile: token}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
`), "")
	g.Expect(err).NotTo(HaveOccurred())
	stored, err = clientcmd.Load([]byte(fromFile.Kubeconfig))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(stored.AuthInfos["c"].Token).To(Equal("file-token"))
	g.Expect(stored.AuthInfos["c"].TokenFile).To(BeEmpty())
}

func TestEngineClusterCredentialsRefuseWhatTheBackendCannotUse(t *testing.T) {
	dir := t.TempDir()
	for name, tc := range map[string]struct{ kubeconfig, want string }{
		"credential plugin": {`apiVersion: v1
kind: Config
current-context: c
clusters: [{name: c, cluster: {server: "https://east.example.com"}}]
users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: get-token, args: [plugin-secret]}}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
`, "exec or auth-provider plugin"},
		"unreadable token file": {`apiVersion: v1
kind: Config
current-context: c
clusters: [{name: c, cluster: {server: "https://east.example.com"}}]
users: [{name: u, user: {tokenFile: /nonexistent/token}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
`, "reading the token file"},
		"no credentials": {`apiVersion: v1
kind: Config
current-context: c
clusters: [{name: c, cluster: {server: "https://east.example.com"}}]
users: [{name: u, user: {username: plugin-secret}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
`, "has no credentials"},
		"not a kubeconfig": {"plugin-secret: [", "not a readable kubeconfig file"},
		"unknown context":  {"apiVersion: v1\nkind: Config\n", "context"},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			_, _, err := engineinstances.EngineClusterCredentials(writeFile(t, dir, name, tc.kubeconfig), "")
			g.Expect(err).To(MatchError(ContainSubstring(tc.want)))
			g.Expect(err.Error()).NotTo(ContainSubstring("plugin-secret"))
		})
	}
}
