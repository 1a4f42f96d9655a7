package manageropts

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/gitops-service/gitops-service/backend-shared/buildinfo"
	"github.com/gitops-service/gitops-service/backend-shared/eventshards"
	"github.com/gitops-service/gitops-service/backend-shared/scheme"
)

// Command is the skeleton every binary shares: parse flags, build a manager with probes,
// metrics and leader election, let the binary add its controllers, run until a signal.
type Command struct {
	Name        string
	Summary     string
	MetricsAddr string
	ProbeAddr   string
	// BindFlags registers the binary's own flags.
	BindFlags func(fs *flag.FlagSet)
	// DeprecatedFlags maps flags that still work but are hidden from the help to what
	// to use instead; using one prints a warning.
	DeprecatedFlags map[string]string
	// ManagerOptions, if set, adjusts the manager's options once the flags are parsed
	// (e.g. to limit the cache to a namespace named by a flag).
	ManagerOptions func(o *ctrl.Options)
	// Prepare, if set, runs before the manager exists (so before anything it starts), while
	// the probe address answers alive and not ready: for the database's schema, migrated or
	// waited for. waiting sets the reason /readyz gives meanwhile.
	Prepare func(ctx context.Context, log logr.Logger, waiting func(reason string)) error
	// Setup adds the binary's controllers and runnables to mgr.
	Setup func(ctx context.Context, mgr ctrl.Manager, log logr.Logger) error
}

// NewCommand returns the binary's root command. With flags only it runs the controllers
// until the command's context is done; it has the verbs version, completion and help, and
// the binary adds its own. An unknown verb or a stray argument is an error.
func (c Command) NewCommand() *cobra.Command {
	opts := New(c.Name, c.MetricsAddr, c.ProbeAddr)
	root := &cobra.Command{
		Use:  c.Name,
		Long: c.Summary,
		Args: NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.run(cmd.Context(), opts)
		},
		// A failing controller is not a usage error: print the error alone.
		SilenceUsage: true,
	}
	root.SetFlagErrorFunc(flagUsageError)
	fs := flag.NewFlagSet(c.Name, flag.ContinueOnError)
	opts.BindFlags(fs)
	if c.BindFlags != nil {
		c.BindFlags(fs)
	}
	root.Flags().AddGoFlagSet(fs)
	for name, instead := range c.DeprecatedFlags {
		if err := root.Flags().MarkDeprecated(name, instead); err != nil {
			panic(err) // a flag the binary does not have: a programming error
		}
	}
	root.AddCommand(NewVersionCommand())
	return root
}

// NewVersionCommand returns the version verb: it prints the build and needs no cluster.
func NewVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, Git commit, Go version and platform",
		Args:  NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprint(cmd.OutOrStdout(), buildinfo.Get())
			return err
		},
	}
}

// run builds the manager, lets the binary set it up and runs it until ctx is done, then
// shuts down gracefully.
func (c Command) run(ctx context.Context, opts *Options) error {
	log := opts.Logger().WithName(c.Name)

	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	log.Info("build", "version", buildinfo.Get().Version, "commit", buildinfo.Get().Commit)
	if c.Prepare != nil {
		if err := c.prepare(ctx, opts.ProbeAddr, log); err != nil {
			return err
		}
	}
	mgrOpts := opts.ManagerOptions(scheme.New())
	if c.ManagerOptions != nil {
		c.ManagerOptions(&mgrOpts)
	}
	if mgrOpts.Cache.NewInformer == nil {
		mgrOpts.Cache.NewInformer = NewInformer
	}
	eventsCtx, stopEvents := context.WithCancel(context.WithoutCancel(ctx))
	defer stopEvents()
	eventshards.Use(eventsCtx, &mgrOpts)
	mgr, err := ctrl.NewManager(opts.RestConfig(cfg), mgrOpts)
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	if err := AddProbes(mgr); err != nil {
		return err
	}
	if err := registerBuildInfo(c.Name); err != nil {
		return err
	}
	if c.Setup != nil {
		if err := c.Setup(ctx, mgr, log); err != nil {
			return err
		}
	}
	log.Info("starting manager")
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running manager: %w", err)
	}
	log.Info("stopped")
	return nil
}

// prepare runs Prepare behind the start-up probes.
func (c Command) prepare(ctx context.Context, probeAddr string, log logr.Logger) error {
	probes, err := serveStartupProbes(probeAddr, log)
	if err != nil {
		return err
	}
	defer probes.stop(ctx)
	return c.Prepare(logr.NewContext(ctx, log), log, probes.Waiting)
}

// registerBuildInfo registers the build info metric once per process (tests run the root
// command more than once).
func registerBuildInfo(name string) error {
	err := metrics.Registry.Register(buildinfo.NewCollector(name))
	var already prometheus.AlreadyRegisteredError
	if err != nil && !errors.As(err, &already) {
		return fmt.Errorf("registering the build info metric: %w", err)
	}
	return nil
}
