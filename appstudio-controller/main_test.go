package main

import (
	"context"
	"errors"
	"testing"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/gitops-service/gitops-service/appstudio-controller/app"
	"github.com/gitops-service/gitops-service/backend-shared/manageropts/clitest"
)

func TestCommandLine(t *testing.T) {
	clitest.TestControllerBinary(t, "appstudio-controller", "../manifests/base/appstudio-controller/deployment.yaml", func(setups *int) *cobra.Command {
		return newCommand(&app.Options{}, func(context.Context, ctrl.Manager, logr.Logger) error {
			*setups++
			return errors.New("setup called")
		})
	})
}
