// Command appstudio-controller translates the AppStudio API (Environment, Snapshot,
// SnapshotEnvironmentBinding, PromotionRun, DeploymentTarget/Claim/Class) into the core
// GitOps Service API. It needs no database.
//
//	appstudio-controller [flags]     run the controllers
//	appstudio-controller version     print the version, Git commit and Go version
package main

import (
	"context"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/gitops-service/gitops-service/appstudio-controller/app"
	"github.com/gitops-service/gitops-service/backend-shared/manageropts"
)

func main() {
	opts := &app.Options{}
	manageropts.Main(newCommand(opts, opts.Setup))
}

// newCommand is the appstudio-controller's command line: flags bound to opts, setup adding the
// controllers.
func newCommand(opts *app.Options, setup func(context.Context, ctrl.Manager, logr.Logger) error) *cobra.Command {
	return manageropts.Command{
		Name:           "appstudio-controller",
		Summary:        "Translates Environments, SnapshotEnvironmentBindings, PromotionRuns and DeploymentTargets into core GitOps Service resources.",
		MetricsAddr:    ":8084",
		ProbeAddr:      ":8085",
		BindFlags:      opts.BindFlags,
		ManagerOptions: app.ManagerOptions,
		Setup:          setup,
	}.NewCommand()
}
