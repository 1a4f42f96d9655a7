package gitserver

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestCloneServedRepositories(t *testing.T) {
	s, err := Start(t.TempDir(), "127.0.0.1:0")
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

func lsRemote(t *testing.T, url string) string {
	t.Helper()
	cmd := exec.Command("git", "ls-remote", url)
	cmd.Env = append(cmd.Environ(), "GIT_TERMINAL_PROMPT=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("ls-remote %s: %v: %s", url, err, out)
	}
	return string(out)
}
