package testenv

import (
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// GitRepositories makes, under a new root, a bare repository repo.git with one commit on
// main and an empty one, empty.git; it returns the root and the environment to run git
// with (no system or user configuration).
func GitRepositories(t testing.TB) (root string, env []string) {
	t.Helper()
	root, work := t.TempDir(), t.TempDir()
	env = append(os.Environ(), "HOME="+t.TempDir(), "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=test", "GIT_COMMITTER_EMAIL=test@example.com")
	run := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	run(root, "init", "--bare", "repo.git")
	run(root, "init", "--bare", "empty.git")
	run(work, "init", "-b", "main")
	if err := os.WriteFile(filepath.Join(work, "README"), []byte("hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run(work, "add", "README")
	run(work, "commit", "-m", "initial")
	run(work, "push", filepath.Join(root, "repo.git"), "main")
	return root, env
}

// GitHTTPSServer serves the repositories under root with git's own http-backend over TLS
// on loopback, as a Git host serves private repositories: only to user with the password
// password returns at the time of each request (so that a test can change it on the
// server's side). env is the environment of GitRepositories.
func GitHTTPSServer(t testing.TB, root string, env []string, user string, password func() string) *httptest.Server {
	t.Helper()
	cmd := exec.Command("git", "--exec-path")
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git --exec-path: %v", err)
	}
	backend := &cgi.Handler{
		Path: filepath.Join(strings.TrimSpace(string(out)), "git-http-backend"),
		Env:  []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "REMOTE_USER=" + user},
	}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != user || p != password() {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// StallingListener accepts TCP connections on loopback and never answers on them, like a
// server that hangs, until the test ends; it returns its address.
func StallingListener(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr().String()
}
