// Package framework is the fixture of the end-to-end suite: the whole service with a real
// Argo CD and a Git server, started once, plus helpers that create tenants, repositories
// and resources, and Gomega matchers for what users observe.
package framework

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/backend-shared/testenv"
	"github.com/gitops-service/gitops-service/tests-e2e/gitserver"
	"github.com/gitops-service/gitops-service/tests-e2e/stack"
)

// Timeouts of the suite's Eventually calls: Argo CD needs a few seconds to sync, and looks
// for new commits every ReconciliationTimeout.
const (
	Timeout = 90 * time.Second
	Poll    = 250 * time.Millisecond
)

// Framework is the running service the suite shares.
type Framework struct {
	Stack *stack.Stack
	// Client is an admin client of the control plane, with every type of the service.
	Client client.Client
	Git    *gitserver.Server
	// GitSSHKey is the private key the Git server's SSH side (Git.SSH) accepts, as a deploy key.
	GitSSHKey []byte
	dir       string
}

// Start starts the service with Argo CD and an https Git server, in a fresh directory.
func Start(ctx context.Context) (*Framework, error) {
	dir, err := os.MkdirTemp("", "gitops-e2e-")
	if err != nil {
		return nil, err
	}
	sshKey, sshPub, err := testenv.NewSSHKey()
	if err != nil {
		return nil, err
	}
	s, err := stack.Start(ctx, stack.Options{
		Dir:       dir,
		ArgoCD:    true,
		GitServer: &gitserver.Options{Addr: "127.0.0.1:0", TLS: true, SSHKey: sshPub},
		Progress:  func(step string) { fmt.Fprintf(os.Stderr, "e2e: %s\n", step) },
		// The binaries run with only the RBAC of their +kubebuilder:rbac markers, so that a
		// missing marker fails the suite.
		LeastPrivilege: true,
	})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return &Framework{Stack: s, Client: s.ControlPlane.Client, Git: s.Git, GitSSHKey: sshKey, dir: dir}, nil
}

// Stop stops everything and removes the directory (kept when keepLogs is set).
func (f *Framework) Stop(keepLogs bool) error {
	err := f.Stack.Stop()
	if !keepLogs {
		_ = os.RemoveAll(f.dir)
	}
	return err
}

// LogDir holds every process's log.
func (f *Framework) LogDir() string { return f.Stack.LogDir }

// DumpLogs writes the end of every process's log to w.
func (f *Framework) DumpLogs(w io.Writer, maxBytes int) { stack.DumpLogs(w, f.Stack.LogDir, maxBytes) }

// CreateNamespace creates a namespace (a tenant) named prefix-<random>.
func (f *Framework) CreateNamespace(ctx context.Context, prefix string) (string, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: strings.TrimSuffix(prefix, "-") + "-"}}
	if err := f.Client.Create(ctx, ns); err != nil {
		return "", err
	}
	return ns.Name, nil
}

// CreateRepository creates a Git repository holding files and returns its URL and commit.
func (f *Framework) CreateRepository(name string, files map[string]string, private *gitserver.Credentials) (url, commit string, err error) {
	if err := f.Git.Create(name, private); err != nil {
		return "", "", err
	}
	commit, err = f.Git.Commit(name, files, "initial commit")
	return f.Git.URL(name), commit, err
}

// ConfigMap is the YAML of a ConfigMap with one data item, for repositories.
func ConfigMap(name, key, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  %s: %q\n", name, key, value)
}
