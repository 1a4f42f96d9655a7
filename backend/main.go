// Command backend reconciles the core GitOps Service API (GitOpsDeployment, SyncRun,
// ManagedEnvironment, RepositoryCredential) of tenant namespaces into PostgreSQL rows and
// Operations, and writes the CRs' status.
//
//	backend [flags]               run the controllers
//	backend migrate [flags]       apply (or with --down N, revert) database migrations
//	backend rotate-keys [flags]   re-encrypt credentials with the primary key
//	backend engine-instances ...  list, register, weigh, drain, deregister and simulate engine instances
//	backend operations list       list operations, newest first
//	backend version               print the version, Git commit and Go version
//	backend completion SHELL      print the shell completion script (bash, zsh, fish)
package main

import (
	"github.com/gitops-service/gitops-service/backend-shared/manageropts"
	"github.com/gitops-service/gitops-service/backend/app"
)

func main() {
	manageropts.Main(app.NewCommand())
}
