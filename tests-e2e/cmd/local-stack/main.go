// Command local-stack runs the GitOps Service on this machine: a kube-apiserver, etcd and
// kube-controller-manager with every CRD installed, a PostgreSQL server, Argo CD (Redis,
// repo server, application controller), a Git server holding the example repository, and
// the backend, cluster-agent and appstudio-controller built from this checkout. It prints
// the kubeconfig to use and runs until Ctrl-C, then stops everything it started.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/gitops-service/gitops-service/backend-shared/testenv"
	"github.com/gitops-service/gitops-service/tests-e2e/gitserver"
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
	gitAddr := flag.String("git-address", "127.0.0.1:8418", "Address of the Git server (the examples' repoURL uses the default).")
	withArgoCD := flag.Bool("argocd", true, "Run Argo CD; without it Applications are created but nothing deploys them.")
	promotionTimeout := flag.Duration("promotion-timeout", 2*time.Minute,
		"How long each step of a PromotionRun waits for its components (the appstudio-controller's --promotion-timeout; short, so that a failed promotion shows soon).")
	flag.Parse()
	defer takeTerminal()()
	// envtest logs through controller-runtime; its progress lines are not useful here.
	ctrl.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	start := time.Now()
	progress := func(step string) { fmt.Printf("==> %s (%s)\n", step, time.Since(start).Round(time.Second)) }
	s, err := stack.Start(ctx, stack.Options{Dir: *dir, Progress: progress, ArgoCD: *withArgoCD, GitServer: &gitserver.Options{Addr: *gitAddr},
		Args: map[string][]string{"appstudio-controller": {"--promotion-timeout=" + promotionTimeout.String()}}})
	if err != nil {
		return err
	}
	defer func() {
		fmt.Println("==> stopping everything")
		_ = s.Stop()
	}()
	examples, err := seedExamples(s)
	if err != nil {
		return err
	}

	fmt.Printf(`
The GitOps Service is running (started in %s).

  export KUBECONFIG=%s
  kubectl create namespace demo
  kubectl apply -n demo -f examples/gitopsdeployment.yaml
  kubectl get gitopsdeployments -n demo -w

Example repository: %s
Logs: %s
PostgreSQL: %s
Press Ctrl-C to stop everything.
`, time.Since(start).Round(time.Second), s.Kubeconfig, examples, s.LogDir, s.DatabaseURL)

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

// seedExamples serves examples/repository as the repository the examples point at.
func seedExamples(s *stack.Stack) (string, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return "", err
	}
	const name = "gitops-examples"
	if err := s.Git.Create(name, nil); err != nil {
		return "", err
	}
	if _, err := s.Git.CommitDir(name, filepath.Join(root, "examples", "repository"), "Example repository"); err != nil {
		return "", err
	}
	return s.Git.URL(name), nil
}
