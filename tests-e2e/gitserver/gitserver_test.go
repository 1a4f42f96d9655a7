package gitserver

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestCloneServedRepositories(t *testing.T) {
	s, err := Start(t.TempDir(), Options{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })

	if err := s.Create("public", nil); err != nil {
		t.Fatal(err)
	}
	sha, err := s.Commit("public", map[string]string{"app/cm.yaml": "kind: ConfigMap\n"}, "first")
	if err != nil {
		t.Fatal(err)
	}
	refs := lsRemote(t, s.URL("public"))
	if !strings.Contains(refs, sha+"\trefs/heads/main") {
		t.Fatalf("ls-remote does not show main at %s:\n%s", sha, refs)
	}
	dir := filepath.Join(t.TempDir(), "clone")
	if out, err := exec.Command("git", "clone", "--quiet", s.URL("public"), dir).CombinedOutput(); err != nil {
		t.Fatalf("clone: %v: %s", err, out)
	}

	creds := &Credentials{Username: "alice", Password: "s3cret"}
	if err := s.Create("private", creds); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Commit("private", map[string]string{"a.yaml": "x: 1\n"}, "first"); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("git", "-c", "credential.helper=", "ls-remote", s.URL("private")).CombinedOutput(); err == nil {
		t.Fatalf("anonymous ls-remote of a private repository succeeded: %s", out)
	}
	authed := strings.Replace(s.URL("private"), "http://", "http://alice:s3cret@", 1)
	if refs := lsRemote(t, authed); !strings.Contains(refs, "refs/heads/main") {
		t.Fatalf("authenticated ls-remote shows no main:\n%s", refs)
	}
}

func lsRemote(t *testing.T, url string, env ...string) string {
	t.Helper()
	cmd := exec.Command("git", "ls-remote", url)
	cmd.Env = append(append(cmd.Environ(), "GIT_TERMINAL_PROMPT=0"), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("ls-remote %s: %v: %s", url, err, out)
	}
	return string(out)
}

func TestServeOverTLS(t *testing.T) {
	s, err := Start(t.TempDir(), Options{Addr: "127.0.0.1:0", TLS: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	if err := s.Create("repo", nil); err != nil {
		t.Fatal(err)
	}
	sha, err := s.Commit("repo", map[string]string{"a.yaml": "x: 1\n"}, "first")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.URL("repo"), "https://127.0.0.1:") {
		t.Fatalf("URL %s is not https", s.URL("repo"))
	}
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, s.CAPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	// Without the authority git refuses the server; with it, it lists the commit.
	if out, err := exec.Command("git", "ls-remote", s.URL("repo")).CombinedOutput(); err == nil {
		t.Fatalf("ls-remote trusted an unknown authority: %s", out)
	}
	if refs := lsRemote(t, s.URL("repo"), "GIT_SSL_CAINFO="+ca); !strings.Contains(refs, sha) {
		t.Fatalf("ls-remote over TLS does not show %s:\n%s", sha, refs)
	}
}
