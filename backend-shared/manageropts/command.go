package manageropts

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/gitops-service/gitops-service/backend-shared/buildinfo"
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
	// ManagerOptions, if set, adjusts the manager's options once the flags are parsed
	// (e.g. to limit the cache to a namespace named by a flag).
	ManagerOptions func(o *ctrl.Options)
	// Setup adds the binary's controllers and runnables to mgr.
	Setup func(ctx context.Context, mgr ctrl.Manager, log logr.Logger) error
}

// Run parses args and runs the manager until SIGTERM/SIGINT, then shuts down gracefully.
// `version` as the only argument prints the build instead.
func (c Command) Run(args []string) error {
	if len(args) == 1 && args[0] == "version" {
		_, err := fmt.Print(buildinfo.Get())
		return err
	}
	opts := New(c.Name, c.MetricsAddr, c.ProbeAddr)
	fs := flag.NewFlagSet(c.Name, flag.ContinueOnError)
	fs.Usage = func() {
		_, _ = fmt.Fprintf(fs.Output(), "Usage: %s [flags]\n       %s version\n\n%s\n\nFlags:\n", c.Name, c.Name, c.Summary)
		fs.PrintDefaults()
	}
	opts.BindFlags(fs)
	if c.BindFlags != nil {
		c.BindFlags(fs)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	log := opts.Logger().WithName(c.Name)

	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	mgrOpts := opts.ManagerOptions(scheme.New())
	if c.ManagerOptions != nil {
		c.ManagerOptions(&mgrOpts)
	}
	if mgrOpts.Cache.NewInformer == nil {
		mgrOpts.Cache.NewInformer = NewInformer
	}
	mgr, err := ctrl.NewManager(opts.RestConfig(cfg), mgrOpts)
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	if err := AddProbes(mgr); err != nil {
		return err
	}
	if err := metrics.Registry.Register(buildinfo.NewCollector(c.Name)); err != nil {
		return fmt.Errorf("registering the build info metric: %w", err)
	}
	log.Info("build", "version", buildinfo.Get().Version, "commit", buildinfo.Get().Commit)
	ctx := ctrl.SetupSignalHandler()
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
