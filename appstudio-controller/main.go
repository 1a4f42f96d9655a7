// Command appstudio-controller translates the AppStudio API (Environment, Snapshot,
// SnapshotEnvironmentBinding, PromotionRun, DeploymentTarget/Claim/Class) into the core
// GitOps Service API. It needs no database.
package main

import (
	"fmt"
	"os"

	"github.com/gitops-service/gitops-service/appstudio-controller/app"
	"github.com/gitops-service/gitops-service/backend-shared/manageropts"
)

func main() {
	opts := &app.Options{}
	cmd := manageropts.Command{
		Name:        "appstudio-controller",
		Summary:     "Translates Environments, SnapshotEnvironmentBindings, PromotionRuns and DeploymentTargets into core GitOps Service resources.",
		MetricsAddr: ":8084",
		ProbeAddr:   ":8085",
		BindFlags:   opts.BindFlags,
		Setup:       opts.Setup,
	}
	if err := cmd.Run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "appstudio-controller:", err)
		os.Exit(1)
	}
}
