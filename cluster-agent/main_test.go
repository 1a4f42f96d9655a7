package main

import (
	"context"
	"errors"
	"testing"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/gitops-service/gitops-service/backend-shared/manageropts/clitest"
	"github.com/gitops-service/gitops-service/cluster-agent/app"
)

func TestCommandLine(t *testing.T) {
	clitest.TestControllerBinary(t, "cluster-agent", "../manifests/base/cluster-agent/deployment.yaml", func(setups *int) *cobra.Command {
		return newCommand(&app.Options{}, func(context.Context, ctrl.Manager, logr.Logger) error {
			*setups++
			return errors.New("setup called")
		})
	})
}
