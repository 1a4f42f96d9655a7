// Package gitserver serves Git repositories over HTTP on loopback for the end-to-end tests
// and the local stack: Git's own smart-HTTP server (git http-backend) behind net/http/cgi,
// and, optionally, over SSH to one deploy key.
// Repositories are ordinary working repositories on disk that the caller fills and commits
// with Commit; repositories created private need HTTP basic authentication.
package gitserver

import (
	"crypto/subtle"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"

	"github.com/gitops-service/gitops-service/backend-shared/testenv"
)

// Server is a running Git server.
type Server struct {
	root string
	http *httptest.Server
	// CAPEM is the certificate authority of a TLS server's certificate (nil without TLS).
	CAPEM []byte

	mu      sync.Mutex
	private map[string]Credentials // repository name → credentials
	// onCommit is Options.OnCommit.
	onCommit func(name, branch, commit string) error
	// SSH serves the repositories over SSH, when Options.SSHKey was set.
	SSH *testenv.SSHGitServer
}

// Credentials of a private repository.
type Credentials struct {
	Username, Password string
}

// Options configure a Server.
type Options struct {
	// Addr is a loopback address ("127.0.0.1:0" picks a free port).
	Addr string
	// TLS serves https with httptest's self-signed certificate for 127.0.0.1 (Server.CAPEM).
	TLS bool
	// Listener, if set, is served instead of a new one on Addr (a listener inside the
	// one-node cluster's network namespace, say).
	Listener net.Listener
	// OnCommit, if set, runs after every commit, as a post-receive hook runs after a push
	// (a webhook to the service, say); its error fails the commit.
	OnCommit func(name, branch, commit string) error
	// SSHKey, if set, also serves every repository over SSH (Server.SSH) to the holder of
	// this key, as a deploy key.
	SSHKey ssh.PublicKey
}

// Start serves the repositories under root (created if missing).
func Start(root string, opts Options) (*Server, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		return nil, fmt.Errorf("git --exec-path (is git installed? make deps installs it): %w", err)
	}
	backend := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	l := opts.Listener
	if l == nil {
		if l, err = net.Listen("tcp", opts.Addr); err != nil {
			return nil, err
		}
	}
	s := &Server{root: root, private: map[string]Credentials{}, onCommit: opts.OnCommit}
	cgiHandler := &cgi.Handler{
		Path: backend,
		Dir:  root,
		Env: []string{
			"GIT_PROJECT_ROOT=" + root,
			"GIT_HTTP_EXPORT_ALL=1",
			// The repositories belong to whoever runs the tests; git must not refuse them.
			"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=safe.directory", "GIT_CONFIG_VALUE_0=*",
		},
	}
	s.http = httptest.NewUnstartedServer(s.authenticate(cgiHandler))
	_ = s.http.Listener.Close()
	s.http.Listener = l
	if opts.TLS {
		s.http.StartTLS()
		s.CAPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.http.Certificate().Raw})
	} else {
		s.http.Start()
	}
	if opts.SSHKey != nil {
		env := append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if s.SSH, err = testenv.StartSSHGitServer(root, env, opts.SSHKey); err != nil {
			s.http.Close()
			return nil, err
		}
	}
	return s, nil
}

// authenticate asks for the credentials of private repositories.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		name = strings.TrimSuffix(name, ".git")
		s.mu.Lock()
		want, private := s.private[name]
		s.mu.Unlock()
		if private {
			user, pass, ok := r.BasicAuth()
			if !ok || subtle.ConstantTimeCompare([]byte(user), []byte(want.Username)) != 1 ||
				subtle.ConstantTimeCompare([]byte(pass), []byte(want.Password)) != 1 {
				w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
				http.Error(w, "authentication required", http.StatusUnauthorized)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// Stop stops serving.
func (s *Server) Stop() error {
	s.http.Close()
	if s.SSH != nil {
		return s.SSH.Close()
	}
	return nil
}

// URL is the clone URL of the named repository.
func (s *Server) URL(name string) string {
	return fmt.Sprintf("%s/%s.git", s.http.URL, name)
}

// Create makes an empty repository with branch main; private ones need creds to read.
func (s *Server) Create(name string, private *Credentials) error {
	if name == "" || strings.ContainsAny(name, "/\\.") {
		return fmt.Errorf("invalid repository name %q", name)
	}
	dir := s.dir(name)
	if _, err := os.Stat(dir); err == nil {
		return fmt.Errorf("repository %s exists", name)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := git(dir, "init", "--quiet", "--initial-branch=main"); err != nil {
		return err
	}
	if private != nil {
		s.mu.Lock()
		s.private[name] = *private
		s.mu.Unlock()
	}
	return nil
}

// Commit writes files (path → content; empty content deletes the file) into the named
// repository's branch main and commits them, returning the commit id.
func (s *Server) Commit(name string, files map[string]string, message string) (string, error) {
	dir := s.dir(name)
	for path, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(path))
		if !strings.HasPrefix(full, dir+string(filepath.Separator)) {
			return "", fmt.Errorf("path %q leaves the repository", path)
		}
		if content == "" {
			if err := os.Remove(full); err != nil && !errors.Is(err, os.ErrNotExist) {
				return "", err
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			return "", err
		}
	}
	if err := git(dir, "add", "--all"); err != nil {
		return "", err
	}
	if err := git(dir, "commit", "--quiet", "--allow-empty", "-m", message); err != nil {
		return "", err
	}
	out, err := gitOutput(dir, "rev-parse", "HEAD")
	if err != nil {
		return "", err
	}
	commit := strings.TrimSpace(out)
	if s.onCommit != nil {
		if err := s.onCommit(name, "main", commit); err != nil {
			return commit, fmt.Errorf("the post-commit hook of %s: %w", name, err)
		}
	}
	return commit, nil
}

func git(dir string, args ...string) error {
	_, err := gitOutput(dir, args...)
	return err
}

func gitOutput(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GIT_AUTHOR_NAME=e2e", "GIT_AUTHOR_EMAIL=e2e@example.com",
		"GIT_COMMITTER_NAME=e2e", "GIT_COMMITTER_EMAIL=e2e@example.com",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// dir is the named repository's working tree; the `.git` suffix lets http-backend find it
// under the same name as in the URL.
func (s *Server) dir(name string) string { return filepath.Join(s.root, name+".git") }

// CommitDir copies the files under dir into the named repository (same relative paths) and
// commits them.
func (s *Server) CommitDir(name, dir, message string) (string, error) {
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		files[filepath.ToSlash(rel)] = string(data)
		return err
	})
	if err != nil {
		return "", err
	}
	return s.Commit(name, files, message)
}
