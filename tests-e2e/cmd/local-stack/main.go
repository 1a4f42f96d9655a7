// Command local-stack runs the GitOps Service on this machine: a kube-apiserver, etcd and
// kube-controller-manager with every CRD installed, a PostgreSQL server, and the backend,
// cluster-agent and appstudio-controller built from this checkout. It prints the kubeconfig
// to use and runs until Ctrl-C, then stops everything it started.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/gitops-service/gitops-service/backend-shared/testenv"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "local-stack:", err)
		os.Exit(1)
	}
}

func run() error {
	stateDir := flag.String("state-dir", ".local", "Directory for the kubeconfig, logs and binaries of the stack.")
	flag.Parse()
	// envtest logs through controller-runtime; its progress lines are not useful here.
	ctrl.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	dir, err := filepath.Abs(*stateDir)
	if err != nil {
		return err
	}
	logs := filepath.Join(dir, "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return err
	}

	root, err := testenv.RepoRoot()
	if err != nil {
		return err
	}
	step("building backend, cluster-agent and appstudio-controller")
	bins := filepath.Join(dir, "bin")
	for _, name := range []string{"backend", "cluster-agent", "appstudio-controller"} {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(bins, name), "./"+name)
		cmd.Dir = root
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("building %s: %w", name, err)
		}
	}

	step("starting kube-apiserver, etcd and kube-controller-manager")
	cp, err := testenv.StartControlPlane(testenv.Options{ControllerManager: true})
	if err != nil {
		return err
	}
	defer func() { step("stopping the control plane"); _ = cp.Stop() }()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := copyFile(cp.KubeconfigPath, kubeconfig); err != nil {
		return err
	}

	step("starting PostgreSQL")
	pg, err := testenv.StartPostgres(testenv.PostgresOptions{})
	if err != nil {
		return err
	}
	defer func() { step("stopping PostgreSQL"); _ = pg.Stop() }()

	var procs []*testenv.Process
	defer func() {
		for _, p := range procs {
			_ = p.Stop(10 * time.Second)
		}
	}()
	for _, name := range []string{"backend", "cluster-agent", "appstudio-controller"} {
		step("starting " + name)
		p, err := testenv.StartProcessWithEnv(filepath.Join(bins, name), nil, filepath.Join(logs, name+".log"),
			[]string{"KUBECONFIG=" + kubeconfig, "GITOPS_DATABASE_URL=" + pg.URL("postgres")})
		if err != nil {
			return err
		}
		procs = append(procs, p)
	}

	fmt.Printf(`
The GitOps Service is running.

  export KUBECONFIG=%s
  kubectl get gitops -A
  kubectl api-resources --api-group=managed-gitops.redhat.com

Logs: %s
PostgreSQL: %s
Press Ctrl-C to stop everything.
`, kubeconfig, logs, pg.URL("postgres"))

	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			fmt.Println()
			return nil
		case <-ticker.C:
			for _, p := range procs {
				if !p.Running() {
					return fmt.Errorf("a process exited; its log ends with:\n%s", p.Tail())
				}
			}
		}
	}
}

func step(msg string) { fmt.Printf("==> %s\n", msg) }

func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o600)
}
