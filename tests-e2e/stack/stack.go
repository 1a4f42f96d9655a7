// Package stack runs the whole service on this machine: a control plane (kube-apiserver,
// etcd, kube-controller-manager) with every CRD, PostgreSQL, and the service's binaries as
// processes built from this checkout. The local stack (`make run`), the benchmarks and the
// end-to-end tests share it.
package stack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/backend-shared/db/secretbox"
	"github.com/gitops-service/gitops-service/backend-shared/testenv"
	"github.com/gitops-service/gitops-service/tests-e2e/gitserver"
)

// Binaries of the service, in start order.
var Binaries = []string{"backend", "cluster-agent", "appstudio-controller"}

// EngineNamespace is the namespace of the stack's GitOps engine instance.
const EngineNamespace = "gitops-service-argocd"

// Options configure a stack.
type Options struct {
	// Dir holds binaries, logs and the kubeconfig.
	Dir string
	// Binaries to start (default all). Each is built first.
	Binaries []string
	// Deferred names binaries of Binaries that Start builds and prepares but does not start:
	// the test starts them, in its own order, with StartBinary or Launch.
	Deferred []string
	// Args adds flags per binary.
	Args map[string][]string
	// Progress, if set, is called before each step.
	Progress func(step string)
	// ArgoCD starts a real Argo CD (Redis, repo server, application controller) for the
	// engine instance; without it nothing acts on the Argo CD Applications.
	ArgoCD bool
	// GitServer, if set, starts a Git server; Argo CD and the backend trust its authority.
	GitServer *gitserver.Options
	// LeastPrivilege runs each binary as its ServiceAccount of manifests/base, bound only to
	// the roles generated from its +kubebuilder:rbac markers (manifests/rbac) as
	// manifests/base binds them, with leader election on (see leastprivilege.go), instead of
	// as the admin. Stop then also fails if the API server refused a binary's request (see
	// Stack.Forbidden). Argo CD keeps the admin kubeconfig.
	LeastPrivilege bool
	// ArgoCDPolling is how often Argo CD looks for new commits (default 10s; Argo CD's own
	// default is 3m).
	ArgoCDPolling time.Duration
	// GitWebhook makes the backend serve its Git webhook receiver (Stack.GitWebhook).
	GitWebhook bool
}

// Stack is a running service.
type Stack struct {
	ControlPlane *testenv.ControlPlane
	Postgres     *testenv.Postgres
	// Processes by binary name.
	Processes map[string]*testenv.Process
	// Kubeconfig is an admin kubeconfig file for the control plane.
	Kubeconfig  string
	DatabaseURL string
	LogDir      string
	// MetricsAddr of each binary (127.0.0.1:port).
	MetricsAddr map[string]string
	// PprofAddr of each binary (127.0.0.1:port): its net/http/pprof handlers.
	PprofAddr map[string]string
	// GitWebhook is the backend's Git webhook receiver, when Options.GitWebhook was set.
	GitWebhook *GitWebhook
	// ArgoCD is the running Argo CD, when Options.ArgoCD was set.
	ArgoCD *ArgoCD
	// Git is the running Git server, when Options.GitServerAddr was set.
	Git *gitserver.Server
	// ServiceAccounts each binary runs as, by binary name, under Options.LeastPrivilege.
	ServiceAccounts map[string]client.ObjectKey
	// BinDir holds the built binaries; KeysFile is the credentials keyring they share.
	BinDir, KeysFile string

	launches map[string]launch
}

// launch is how a binary is started, so that it can be started again after a crash.
type launch struct {
	path   string
	args   []string
	probes string
	// kubeconfig of the binary (default: the admin's, Stack.Kubeconfig).
	kubeconfig string
}

// StartBinary starts a binary of the stack (again, after CrashBinary) and waits until it
// is ready.
func (s *Stack) StartBinary(ctx context.Context, name string) error {
	return s.StartBinaryWithEnv(ctx, name)
}

// StartBinaryWithEnv is StartBinary with extra environment variables (NAME=value) for this
// run of the binary only.
func (s *Stack) StartBinaryWithEnv(ctx context.Context, name string, env ...string) error {
	if err := s.Launch(name, env...); err != nil {
		return err
	}
	return s.WaitReady(ctx, name)
}

// Launch starts a binary of the stack without waiting for it to be ready, with extra
// environment variables (NAME=value) for this run only.
func (s *Stack) Launch(name string, env ...string) error {
	l, ok := s.launches[name]
	if !ok {
		return fmt.Errorf("%s is not a binary of this stack", name)
	}
	if p := s.Processes[name]; p != nil && p.Running() {
		return fmt.Errorf("%s is running", name)
	}
	kubeconfig := l.kubeconfig
	if kubeconfig == "" {
		kubeconfig = s.Kubeconfig
	}
	p, err := testenv.StartProcessWithEnv(l.path, l.args, filepath.Join(s.LogDir, name+".log"),
		append([]string{"KUBECONFIG=" + kubeconfig}, env...))
	if err != nil {
		return err
	}
	s.Processes[name] = p
	return nil
}

// WaitReady waits until a launched binary's readiness probe answers 200, for a minute at
// most.
func (s *Stack) WaitReady(ctx context.Context, name string) error {
	p := s.Processes[name]
	if p == nil {
		return fmt.Errorf("%s was not started", name)
	}
	if err := waitReady(ctx, p, s.launches[name].probes); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// ProbeAddr is the address of a binary's health probes (GET /healthz and /readyz).
func (s *Stack) ProbeAddr(name string) string { return s.launches[name].probes }

// StartInstance starts one more process of a binary of BinDir (say, a second cluster-agent)
// under its own name, against the cluster of kubeconfig, with the flags the stack gives that
// binary (database, keyring, the stack's engine namespace) followed by args, which override
// them; its log is LogDir/name.log and Stop stops it.
func (s *Stack) StartInstance(ctx context.Context, name, binary, kubeconfig string, args ...string) error {
	if _, ok := s.launches[name]; ok {
		return fmt.Errorf("%s is already a process of this stack", name)
	}
	l := s.newLaunch(name, binary)
	l.args, l.kubeconfig = append(l.args, args...), kubeconfig
	s.launches[name] = l
	return s.StartBinary(ctx, name)
}

// newLaunch is how process name of binary starts on the stack: its own metrics, probe and
// pprof addresses, then the flags the stack gives binary.
func (s *Stack) newLaunch(name, binary string) launch {
	metrics, probes, pprof := freeAddr(), freeAddr(), freeAddr()
	s.MetricsAddr[name], s.PprofAddr[name] = metrics, pprof
	return launch{
		path: filepath.Join(s.BinDir, binary),
		// Plain metrics and profiles on loopback, for the tests and benchmarks that read
		// them; the manifests serve metrics over HTTPS to RBAC-allowed tokens.
		args: append([]string{"--metrics-bind-address=" + metrics, "--metrics-secure=false", "--health-probe-bind-address=" + probes,
			"--pprof-address=" + pprof},
			defaultArgs(binary, s.DatabaseURL, s.KeysFile)...),
		probes: probes,
	}
}

// CrashBinary kills a binary with SIGKILL, as a crash would.
func (s *Stack) CrashBinary(name string) {
	if p := s.Processes[name]; p != nil {
		p.Kill()
	}
}

// Start builds and starts everything; Stop undoes it, also after a partial start.
func Start(ctx context.Context, opts Options) (s *Stack, err error) {
	progress := opts.Progress
	if progress == nil {
		progress = func(string) {}
	}
	binaries := opts.Binaries
	if binaries == nil {
		binaries = Binaries
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	s = &Stack{Processes: map[string]*testenv.Process{}, LogDir: filepath.Join(dir, "logs"), MetricsAddr: map[string]string{}, PprofAddr: map[string]string{},
		launches: map[string]launch{}, ServiceAccounts: map[string]client.ObjectKey{}}
	if err := os.MkdirAll(s.LogDir, 0o755); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, s.Stop())
		}
	}()

	progress("building " + fmt.Sprint(binaries))
	s.BinDir = filepath.Join(dir, "bin")
	if err := Build(ctx, s.BinDir, binaries...); err != nil {
		return s, err
	}
	progress("starting kube-apiserver, etcd and kube-controller-manager")
	if s.ControlPlane, err = testenv.StartControlPlane(testenv.Options{ControllerManager: true}); err != nil {
		return s, err
	}
	s.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := copyFile(s.ControlPlane.KubeconfigPath, s.Kubeconfig); err != nil {
		return s, err
	}
	engineNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: EngineNamespace}}
	if err := s.ControlPlane.Client.Create(ctx, engineNS); err != nil && !apierrors.IsAlreadyExists(err) {
		return s, err
	}
	var (
		gitCA      string
		knownHosts []string
	)
	if opts.GitServer != nil {
		progress("starting the Git server")
		gitDir := filepath.Join(dir, "git")
		if err := os.RemoveAll(gitDir); err != nil { // repositories of an earlier run
			return s, err
		}
		if s.Git, err = gitserver.Start(gitDir, *opts.GitServer); err != nil {
			return s, err
		}
		if s.Git.SSH != nil {
			knownHosts = append(knownHosts, s.Git.SSH.KnownHosts())
		}
		if s.Git.CAPEM != nil {
			gitCA = filepath.Join(dir, "git-ca.pem")
			if err := os.WriteFile(gitCA, s.Git.CAPEM, 0o600); err != nil {
				return s, err
			}
		}
	}
	if opts.ArgoCD {
		progress("starting Argo CD (Redis, repo server, application controller)")
		if err := InstallArgoCD(ctx, s.ControlPlane.Client, EngineNamespace); err != nil {
			return s, err
		}
		argoOpts := ArgoCDOptions{Kubeconfig: s.Kubeconfig, Namespace: EngineNamespace, Dir: s.LogDir, ReconciliationTimeout: opts.ArgoCDPolling,
			KnownHosts: knownHosts}
		if gitCA != "" {
			argoOpts.TrustedCAs = map[string][]byte{"127.0.0.1": s.Git.CAPEM}
		}
		if s.ArgoCD, err = StartArgoCD(ctx, argoOpts); err != nil {
			return s, err
		}
	}
	progress("starting PostgreSQL")
	if s.Postgres, err = testenv.StartPostgres(testenv.PostgresOptions{}); err != nil {
		return s, err
	}
	s.DatabaseURL = s.Postgres.URL("postgres")

	keys, err := writeKeyring(dir)
	if err != nil {
		return s, err
	}
	s.KeysFile = keys
	for _, name := range binaries {
		progress("starting " + name)
		l := s.newLaunch(name, name)
		args := l.args
		if name == "backend" && gitCA != "" {
			args = append(args, "--repository-ca-file="+gitCA)
		}
		if name == "backend" && opts.GitWebhook {
			if s.GitWebhook, err = newGitWebhook(dir); err != nil {
				return s, err
			}
			args = append(args, s.GitWebhook.args()...)
		}
		if name == "appstudio-controller" {
			// Provisioned DeploymentTargets point at this API server, as Argo CD reaches it.
			args = append(args, "--namespace-provisioner-api-url="+s.ControlPlane.Config.Host)
		}
		if opts.LeastPrivilege {
			sa, kubeconfig, err := grantLeastPrivilege(ctx, s.ControlPlane, dir, name)
			if err != nil {
				return s, fmt.Errorf("least privilege for %s: %w", name, err)
			}
			s.ServiceAccounts[name], l.kubeconfig = sa, kubeconfig
			args = append(args, leaderElectionArgs(name, sa)...)
		}
		l.args = append(args, opts.Args[name]...)
		s.launches[name] = l
		if slices.Contains(opts.Deferred, name) {
			continue
		}
		if err := s.StartBinary(ctx, name); err != nil {
			return s, err
		}
	}
	return s, nil
}

// defaultArgs are the flags a binary needs to run on the stack.
func defaultArgs(name, databaseURL, keysFile string) []string {
	switch name {
	case "backend", "cluster-agent":
		return []string{
			"--database-url=" + databaseURL,
			"--database-allow-insecure",
			"--engine-namespace=" + EngineNamespace,
			"--credentials-keys-file=" + keysFile,
		}
	}
	return nil
}

// writeKeyring writes a fresh credentials keyring, shared by the backend and the agent.
func writeKeyring(dir string) (string, error) {
	key, err := secretbox.GenerateKey()
	if err != nil {
		return "", err
	}
	file := filepath.Join(dir, "credentials-keys")
	return file, os.WriteFile(file, []byte(secretbox.FormatKeyLine("local", key)+"\n"), 0o600)
}

// Stop stops the binaries, PostgreSQL and the control plane.
func (s *Stack) Stop() error {
	var errs []error
	for _, p := range s.Processes {
		errs = append(errs, p.Stop(10*time.Second))
	}
	if s.ArgoCD != nil {
		errs = append(errs, s.ArgoCD.Stop())
	}
	if s.Git != nil {
		errs = append(errs, s.Git.Stop())
	}
	if s.Postgres != nil {
		errs = append(errs, s.Postgres.Stop())
	}
	if s.ControlPlane != nil {
		errs = append(errs, s.ControlPlane.Stop())
	}
	errs = append(errs, s.forbiddenError())
	return errors.Join(errs...)
}

// DumpLogs writes the end of each log file (*.log) of dir to w, at most maxBytes of each.
func DumpLogs(w io.Writer, dir string, maxBytes int) {
	files, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	sort.Strings(files)
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		if len(data) > maxBytes {
			data = data[len(data)-maxBytes:]
		}
		fmt.Fprintf(w, "\n===== %s (last %d bytes) =====\n%s\n", filepath.Base(file), len(data), data)
	}
}

// Exited returns the first process that has exited, if any.
func (s *Stack) Exited() (string, *testenv.Process) {
	for name, p := range s.Processes {
		if !p.Running() {
			return name, p
		}
	}
	return "", nil
}

// Build builds the named binaries of this checkout into dir.
func Build(ctx context.Context, dir string, names ...string) error {
	root, err := testenv.RepoRoot()
	if err != nil {
		return err
	}
	for _, name := range names {
		// With the crash points the crash test arms through the environment.
		cmd := exec.CommandContext(ctx, "go", "build", "-tags", "crashpoints", "-o", filepath.Join(dir, name), "./"+name)
		cmd.Dir = root
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("building %s: %w", name, err)
		}
	}
	return nil
}

// waitReady waits for a process's readiness probe (GET /readyz answers 200).
func waitReady(ctx context.Context, p *testenv.Process, probeAddr string) error {
	return waitFor(ctx, p, func(ctx context.Context) bool { return ready(ctx, "http://"+probeAddr+"/readyz") })
}

// waitFor polls ok until it holds, the process exits, or a minute passes.
func waitFor(ctx context.Context, p *testenv.Process, ok func(context.Context) bool) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		if !p.Running() {
			return fmt.Errorf("exited during start-up:\n%s", p.Tail())
		}
		if ok(ctx) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready after 60s:\n%s", p.Tail())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// freeAddr is a free 127.0.0.1 address.
func freeAddr() string {
	port, err := testenv.FreePort()
	if err != nil {
		return "127.0.0.1:0"
	}
	return "127.0.0.1:" + strconv.Itoa(port)
}

func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o600)
}
