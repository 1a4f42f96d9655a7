// Command backend reconciles the core GitOps Service API (GitOpsDeployment, SyncRun,
// ManagedEnvironment, RepositoryCredential) of tenant namespaces into PostgreSQL rows and
// Operations, and writes the CRs' status.
package main

import (
	"fmt"
	"os"

	"github.com/gitops-service/gitops-service/backend-shared/manageropts"
)

func main() {
	cmd := manageropts.Command{
		Name:        "backend",
		Summary:     "Reconciles GitOpsDeployments, SyncRuns, ManagedEnvironments and RepositoryCredentials into the database.",
		MetricsAddr: ":8080",
		ProbeAddr:   ":8081",
	}
	if err := cmd.Run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "backend:", err)
		os.Exit(1)
	}
}
