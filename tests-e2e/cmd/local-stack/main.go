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
	"os/signal"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/gitops-service/gitops-service/tests-e2e/stack"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "local-stack:", err)
		os.Exit(1)
	}
}

func run() error {
	dir := flag.String("state-dir", ".local", "Directory for the kubeconfig, logs and binaries of the stack.")
	flag.Parse()
	// envtest logs through controller-runtime; its progress lines are not useful here.
	ctrl.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	start := time.Now()
	s, err := stack.Start(ctx, stack.Options{Dir: *dir, Progress: func(step string) { fmt.Printf("==> %s\n", step) }})
	if err != nil {
		return err
	}
	defer func() {
		fmt.Println("==> stopping everything")
		_ = s.Stop()
	}()

	fmt.Printf(`
The GitOps Service is running (started in %s).

  export KUBECONFIG=%s
  kubectl get gitops -A
  kubectl api-resources --api-group=managed-gitops.redhat.com

Logs: %s
PostgreSQL: %s
Press Ctrl-C to stop everything.
`, time.Since(start).Round(time.Second), s.Kubeconfig, s.LogDir, s.DatabaseURL)

	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			fmt.Println()
			return nil
		case <-ticker.C:
			if name, p := s.Exited(); p != nil {
				return fmt.Errorf("%s exited; its log ends with:\n%s", name, p.Tail())
			}
		}
	}
}
