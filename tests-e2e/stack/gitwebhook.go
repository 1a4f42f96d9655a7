package stack

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/gitops-service/gitops-service/backend-shared/testenv"
)

// GitWebhook is the backend's Git webhook receiver on loopback, with the certificate
// authority a Git host needs to call it.
type GitWebhook struct {
	Addr    string
	CertDir string
	// CAPEM is the authority of the receiver's certificate.
	CAPEM  []byte
	client *http.Client
}

func newGitWebhook(dir string) (*GitWebhook, error) {
	caPEM, certPEM, keyPEM, err := testenv.ServerCertificate("127.0.0.1")
	if err != nil {
		return nil, err
	}
	w := &GitWebhook{Addr: freeAddr(), CertDir: filepath.Join(dir, "git-webhook-certs"), CAPEM: caPEM}
	if err := os.MkdirAll(w.CertDir, 0o700); err != nil {
		return nil, err
	}
	for name, data := range map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM} {
		if err := os.WriteFile(filepath.Join(w.CertDir, name), data, 0o600); err != nil {
			return nil, err
		}
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	w.client = &http.Client{Timeout: 10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	return w, nil
}

func (w *GitWebhook) args() []string {
	return []string{"--git-webhook-bind-address=" + w.Addr, "--git-webhook-cert-dir=" + w.CertDir}
}

// PushGitHub sends what GitHub sends for a push of branch to the repository at cloneURL
// (its default branch main), signed with secret, to the receiver of namespace, and returns
// the HTTP status and body of the answer.
func (w *GitWebhook) PushGitHub(ctx context.Context, namespace, secret, cloneURL, branch, commit string) (int, string, error) {
	payload, err := json.Marshal(map[string]any{
		"ref": "refs/heads/" + branch, "after": commit,
		"repository": map[string]any{"clone_url": cloneURL, "default_branch": "main"},
	})
	if err != nil {
		return 0, "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf("https://%s/hooks/%s", w.Addr, namespace), bytes.NewReader(payload))
	if err != nil {
		return 0, "", err
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(payload)
	req.Header.Set("X-GitHub-Event", "push")
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := w.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}
