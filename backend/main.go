// Command backend reconciles the core GitOps Service API (GitOpsDeployment, SyncRun,
// ManagedEnvironment, RepositoryCredential) of tenant namespaces into PostgreSQL rows and
// Operations, and writes the CRs' status.
//
//	backend [flags]               run the controllers
//	backend migrate [flags]       apply (or with --down N, revert) database migrations
//	backend rotate-keys [flags]   re-encrypt credentials with the primary key
//	backend engine-instances ...  list, register, weigh, drain, deregister and simulate engine instances
//	backend version               print the version, Git commit and Go version
package main

import (
	"fmt"
	"os"

	"github.com/gitops-service/gitops-service/backend-shared/manageropts"
	"github.com/gitops-service/gitops-service/backend/app"
)

func main() {
	if len(os.Args) > 1 && app.IsSubcommand(os.Args[1]) {
		if err := app.RunSubcommand(os.Args[1], os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "backend:", err)
			os.Exit(1)
		}
		return
	}
	opts := &app.Options{}
	manageropts.Main(manageropts.Command{
		Name:        "backend",
		Summary:     "Reconciles GitOpsDeployments, SyncRuns, ManagedEnvironments and RepositoryCredentials into the database.\nSubcommands: migrate, rotate-keys, engine-instances (see `backend migrate --help`), version.",
		MetricsAddr: ":8080",
		ProbeAddr:   ":8081",
		BindFlags:   opts.BindFlags,
		Setup:       opts.Setup,
	}.NewCommand())
}
