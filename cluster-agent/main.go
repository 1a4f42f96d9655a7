// Command cluster-agent runs beside an Argo CD instance: it turns Operations into Argo CD
// Applications, AppProjects and cluster and repository Secrets, and writes Argo CD's health
// and sync status back to the database.
package main

import (
	"fmt"
	"os"

	"github.com/gitops-service/gitops-service/backend-shared/manageropts"
	"github.com/gitops-service/gitops-service/cluster-agent/app"
)

func main() {
	opts := &app.Options{}
	err := manageropts.Command{
		Name:           "cluster-agent",
		Summary:        "Applies Operations to the Argo CD instance in its namespace and reports Argo CD's status.",
		MetricsAddr:    ":8082",
		ProbeAddr:      ":8083",
		BindFlags:      opts.BindFlags,
		ManagerOptions: opts.ManagerOptions,
		Setup:          opts.Setup,
	}.Run(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "cluster-agent:", err)
		os.Exit(1)
	}
}
