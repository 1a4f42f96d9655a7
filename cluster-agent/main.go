// Command cluster-agent runs beside an Argo CD instance: it turns Operations into Argo CD
// Applications, AppProjects and cluster and repository Secrets, and writes Argo CD's health
// and sync status back to the database.
//
//	cluster-agent [flags]     run the controllers
//	cluster-agent version     print the version, Git commit and Go version
package main

import (
	"context"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/gitops-service/gitops-service/backend-shared/manageropts"
	"github.com/gitops-service/gitops-service/cluster-agent/app"
)

func main() {
	opts := &app.Options{}
	manageropts.Main(newCommand(opts, opts.Setup))
}

// newCommand is the cluster-agent's command line: flags bound to opts, setup adding the
// controllers.
func newCommand(opts *app.Options, setup func(context.Context, ctrl.Manager, logr.Logger) error) *cobra.Command {
	return manageropts.Command{
		Name:           "cluster-agent",
		Summary:        "Applies Operations to the Argo CD instance in its namespace and reports Argo CD's status.",
		MetricsAddr:    ":8082",
		ProbeAddr:      ":8083",
		BindFlags:      opts.BindFlags,
		ManagerOptions: opts.ManagerOptions,
		Prepare:        opts.Prepare,
		Setup:          setup,
	}.NewCommand()
}
