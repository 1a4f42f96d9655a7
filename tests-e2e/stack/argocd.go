package stack

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/testenv"
)

// ArgoCDOptions configure an Argo CD instance run as local processes.
type ArgoCDOptions struct {
	// Kubeconfig of the cluster Argo CD runs against (and deploys to as in-cluster).
	Kubeconfig string
	// Namespace Argo CD watches for Applications, AppProjects and Secrets.
	Namespace string
	// Dir holds logs and the repo server's working files.
	Dir string
	// ReconciliationTimeout is how often Argo CD looks for new commits (default 10s).
	ReconciliationTimeout time.Duration
	// TrustedCAs are PEM authorities the repo server trusts, by Git server host name (what
	// Argo CD's argocd-tls-certs-cm holds in a cluster).
	TrustedCAs map[string][]byte
	// KnownHosts are the lines of the SSH known hosts file the repo server checks Git
	// servers' host keys against (what Argo CD's argocd-ssh-known-hosts-cm holds in a cluster).
	KnownHosts []string
}

// ArgoCD is a running Argo CD: Redis, the repo server and the application controller.
type ArgoCD struct {
	Redis, RepoServer, Controller *testenv.Process
	// ControllerMetricsAddr serves the controller's /metrics and /healthz.
	ControllerMetricsAddr string
	// sockDir holds the repo server's askpass socket (short path), removed by Stop.
	sockDir string
}

// InstallArgoCD writes the configuration Argo CD reads from its namespace: argocd-cm,
// argocd-rbac-cm, argocd-secret and the default AppProject.
func InstallArgoCD(ctx context.Context, c client.Client, namespace string) error {
	partOf := map[string]string{"app.kubernetes.io/part-of": "argocd"}
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	objects := []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "argocd-cm", Namespace: namespace, Labels: partOf},
			Data: map[string]string{
				// Track deployed resources by annotation, as the service's Applications expect.
				"application.resourceTrackingMethod": "annotation",
				"admin.enabled":                      "false",
				// A tenant's own cluster entry may not list every kind in its namespace.
				"resource.respectRBAC": "normal",
			}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "argocd-rbac-cm", Namespace: namespace, Labels: partOf}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "argocd-secret", Namespace: namespace, Labels: partOf},
			StringData: map[string]string{"server.secretkey": hex.EncodeToString(key)}},
		// The application controller's ServiceAccount, bound as Argo CD's install binds it: the
		// cluster-agent removes what a deleted Application left behind with its token.
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "argocd-application-controller", Namespace: namespace, Labels: partOf}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "argocd-application-controller-" + namespace, Labels: partOf},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "argocd-application-controller", Namespace: namespace}}},
		&argov1alpha1.AppProject{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: namespace},
			Spec: argov1alpha1.AppProjectSpec{
				SourceRepos:              []string{"*"},
				Destinations:             []argov1alpha1.ApplicationDestination{{Server: "*", Namespace: "*"}},
				ClusterResourceWhitelist: []metav1.GroupKind{{Group: "*", Kind: "*"}},
			}},
	}
	for _, obj := range objects {
		if err := c.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
		}
	}
	return nil
}

// StartArgoCD starts Redis, the repo server and the application controller, and waits until
// they serve. Stop them with Stop.
func StartArgoCD(ctx context.Context, opts ArgoCDOptions) (a *ArgoCD, err error) {
	bin, err := testenv.ArgoCDBinDir()
	if err != nil {
		return nil, err
	}
	if opts.ReconciliationTimeout == 0 {
		opts.ReconciliationTimeout = 10 * time.Second
	}
	work := filepath.Join(opts.Dir, "argocd")
	tmp := filepath.Join(work, "tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return nil, err
	}
	tlsData := filepath.Join(work, "tls")
	if err := os.MkdirAll(tlsData, 0o755); err != nil {
		return nil, err
	}
	for host, pem := range opts.TrustedCAs {
		if err := os.WriteFile(filepath.Join(tlsData, host), pem, 0o644); err != nil {
			return nil, err
		}
	}
	sshData := filepath.Join(work, "ssh")
	if err := os.MkdirAll(sshData, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(sshData, "ssh_known_hosts"), []byte(strings.Join(opts.KnownHosts, "\n")+"\n"), 0o644); err != nil {
		return nil, err
	}
	// A unix socket path must stay short; the log directory may be deep.
	sockDir, err := os.MkdirTemp("", "argocd-askpass-")
	if err != nil {
		return nil, err
	}
	a = &ArgoCD{sockDir: sockDir}
	defer func() {
		if err != nil {
			err = errors.Join(err, a.Stop())
		}
	}()

	redisAddr, repoAddr := freeAddr(), freeAddr()
	a.ControllerMetricsAddr = freeAddr()
	redisPort := port(redisAddr)
	redisServer, err := exec.LookPath("redis-server")
	if err != nil {
		return a, fmt.Errorf("redis-server not found (make deps installs it): %w", err)
	}
	if a.Redis, err = testenv.StartProcess(redisServer, []string{
		"--bind", "127.0.0.1", "--port", redisPort, "--save", "", "--appendonly", "no", "--protected-mode", "yes",
	}, filepath.Join(opts.Dir, "redis.log")); err != nil {
		return a, err
	}
	if err := waitListening(ctx, a.Redis, redisAddr); err != nil {
		return a, fmt.Errorf("redis: %w", err)
	}

	env := []string{
		"KUBECONFIG=" + opts.Kubeconfig,
		"ARGOCD_FAKE_IN_CLUSTER=true",
		"ARGOCD_GPG_ENABLED=false",
		"ARGOCD_TLS_DATA_PATH=" + tlsData,
		"ARGOCD_SSH_DATA_PATH=" + sshData,
		"ARGOCD_RECONCILIATION_TIMEOUT=" + opts.ReconciliationTimeout.String(),
		"ARGOCD_ASK_PASS_SOCK=" + filepath.Join(sockDir, "askpass.sock"),
		// Git runs `argocd` as its credential helper (GIT_ASKPASS=argocd).
		"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"),
		"TMPDIR=" + tmp,
		"HOME=" + work,
	}
	if a.RepoServer, err = testenv.StartProcessWithEnv(filepath.Join(bin, "argocd-repo-server"), []string{
		"--address", "127.0.0.1", "--port", port(repoAddr), "--metrics-address", "127.0.0.1", "--metrics-port", port(freeAddr()),
		"--disable-tls", "--redis", redisAddr, "--logformat", "text",
	}, filepath.Join(opts.Dir, "argocd-repo-server.log"), env); err != nil {
		return a, err
	}
	if err := waitListening(ctx, a.RepoServer, repoAddr); err != nil {
		return a, fmt.Errorf("argo CD repo server: %w", err)
	}
	if a.Controller, err = testenv.StartProcessWithEnv(filepath.Join(bin, "argocd-application-controller"), []string{
		"--namespace", opts.Namespace, "--repo-server", repoAddr, "--repo-server-plaintext", "--redis", redisAddr,
		"--metrics-port", port(a.ControllerMetricsAddr), "--status-processors", "4", "--operation-processors", "4",
		"--logformat", "text",
	}, filepath.Join(opts.Dir, "argocd-application-controller.log"), env); err != nil {
		return a, err
	}
	healthz := "http://" + a.ControllerMetricsAddr + "/healthz"
	if err := waitFor(ctx, a.Controller, func(ctx context.Context) bool { return ready(ctx, healthz) }); err != nil {
		return a, fmt.Errorf("argo CD application controller: %w", err)
	}
	return a, nil
}

// Stop stops the controller, then the repo server (which may not exit on SIGTERM while
// the controller is connected, hence the bounded wait), then Redis.
func (a *ArgoCD) Stop() error {
	for _, p := range []*testenv.Process{a.Controller, a.RepoServer, a.Redis} {
		if p != nil {
			_ = p.Stop(5 * time.Second)
		}
	}
	if a.sockDir != "" {
		_ = os.RemoveAll(a.sockDir)
	}
	return nil
}

// waitListening waits until addr accepts TCP connections.
func waitListening(ctx context.Context, p *testenv.Process, addr string) error {
	return waitFor(ctx, p, func(ctx context.Context) bool {
		conn, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return false
		}
		_ = conn.Close()
		return true
	})
}

func port(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	if _, err := strconv.Atoi(p); err != nil {
		return "0"
	}
	return p
}
