package app

import (
	"context"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
)

// NewCommandWithSetup is NewCommand with setup in place of the controllers' and no
// database preparation.
func NewCommandWithSetup(setup func(*Options, context.Context, ctrl.Manager, logr.Logger) error) *cobra.Command {
	return newCommand(nil, setup)
}

// WholeSeconds is how the retention is stored.
var WholeSeconds = wholeSeconds
