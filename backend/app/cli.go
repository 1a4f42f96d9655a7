package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"github.com/uptrace/bun"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/schema"
	"github.com/gitops-service/gitops-service/backend-shared/manageropts"
	"github.com/gitops-service/gitops-service/backend/internal/engineinstances"
	"github.com/gitops-service/gitops-service/backend/internal/operations"
)

// NewCommand returns the backend's command line: with flags only it runs the controllers;
// its verbs are migrate, rotate-keys, engine-instances, operations and version.
func NewCommand() *cobra.Command {
	return newCommand((*Options).Prepare, (*Options).Setup)
}

// ManagerOptions adjusts the backend's manager: Secrets are watched by their metadata and
// read from the API server (manageropts.UncachedSecrets).
func ManagerOptions(o *ctrl.Options) { manageropts.UncachedSecrets(o) }

// newCommand is NewCommand with prepare readying the database (nil: nothing) and setup
// adding the controllers (tests replace them).
func newCommand(prepare func(*Options, context.Context, logr.Logger, func(string)) error,
	setup func(*Options, context.Context, ctrl.Manager, logr.Logger) error) *cobra.Command {
	opts := &Options{}
	var prepareOpts func(context.Context, logr.Logger, func(string)) error
	if prepare != nil {
		prepareOpts = func(ctx context.Context, log logr.Logger, waiting func(string)) error {
			return prepare(opts, ctx, log, waiting)
		}
	}
	root := manageropts.Command{
		Name:            "backend",
		Summary:         "Reconciles GitOpsDeployments, SyncRuns, ManagedEnvironments and RepositoryCredentials into the database.",
		MetricsAddr:     ":8080",
		ProbeAddr:       ":8081",
		BindFlags:       opts.BindFlags,
		DeprecatedFlags: DeprecatedFlags,
		ManagerOptions:  ManagerOptions,
		Prepare:         prepareOpts,
		Setup: func(ctx context.Context, mgr ctrl.Manager, log logr.Logger) error {
			return setup(opts, ctx, mgr, log)
		},
	}.NewCommand()
	root.AddCommand(migrateCommand(), rotateKeysCommand(), engineInstancesCommand(), operationsCommand())
	return root
}

// databaseFlags binds the database flags to cfg, in the flag set of a verb.
func databaseFlags(cfg *db.Config) *flag.FlagSet {
	fs := flag.NewFlagSet("database", flag.ContinueOnError)
	cfg.BindFlags(fs)
	return fs
}

// keysFileFlag binds --credentials-keys-file to opts.
func keysFileFlag(cmd *cobra.Command, opts *Options, usage string) {
	cmd.PersistentFlags().StringVar(&opts.KeysFile, "credentials-keys-file", os.Getenv(EnvKeysFile), usage)
}

func migrateCommand() *cobra.Command {
	var cfg db.Config
	var down int
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply the pending database migrations (or revert some with --down N); see its verbs status and force",
		Long: `Apply the pending database migrations, each in one transaction with its version mark,
under a PostgreSQL advisory lock, and print the schema version; with --down N, revert the
last N instead (with the binary that has them).`,
		Args: manageropts.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if down > 0 {
				return db.MigrateDown(ctx, cfg, down)
			}
			if err := db.Migrate(ctx, cfg); err != nil {
				return err
			}
			version, _, err := db.SchemaVersion(ctx, cfg)
			if err == nil {
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "database schema at version %d\n", version)
			}
			return err
		},
	}
	cmd.PersistentFlags().AddGoFlagSet(databaseFlags(&cfg))
	cmd.Flags().IntVar(&down, "down", 0, "Revert this many migrations instead of applying them.")
	cmd.AddCommand(migrateStatusCommand(&cfg), migrateForceCommand(&cfg))
	return cmd
}

func migrateStatusCommand(cfg *db.Config) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Print the database's schema version, whether it is dirty, and the migrations this binary would apply",
		Args:  manageropts.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := db.SchemaState(cmd.Context(), *cfg)
			if err != nil {
				return err
			}
			migrations, err := db.Migrations()
			if err != nil {
				return err
			}
			return writeSchemaStatus(cmd.OutOrStdout(), s, migrations)
		},
	}
}

func migrateForceCommand(cfg *db.Config) *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:   "force VERSION",
		Short: "Mark the schema as being at VERSION, clean, without running any migration (after a dirty mark)",
		Long: `Mark the database's schema as being at VERSION, clean, without running any migration.
Use it only after checking which migration the schema really is at: a mark that says more
than the schema holds makes the next migration fail, one that says less runs a migration
again. Needs --yes.`,
		Args: manageropts.ExactArgs("VERSION"),
		RunE: func(cmd *cobra.Command, args []string) error {
			version, err := strconv.ParseUint(args[0], 10, 32)
			if err != nil {
				return manageropts.UsageErrorf("VERSION %q is not a schema version (a whole number)", args[0])
			}
			if !yes {
				return manageropts.UsageErrorf("migrate force changes the version mark without migrating: check the schema first, then confirm with --yes")
			}
			ctx := cmd.Context()
			before, err := db.SchemaState(ctx, *cfg)
			if err != nil {
				return err
			}
			if err := db.ForceSchemaVersion(ctx, *cfg, uint(version)); err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "database schema marked at version %d, clean (it was at %s)\n", version, before)
			return err
		},
	}
	cmd.Flags().BoolVar(&yes, "yes", false, "Confirm that the schema was checked and is at VERSION.")
	return cmd
}

// writeSchemaStatus prints what migrate status reports.
func writeSchemaStatus(w io.Writer, s schema.State, migrations []schema.Migration) error {
	latest := schema.Latest(migrations)
	fmt.Fprintf(w, "schema version:   %d\n", s.Version)
	fmt.Fprintf(w, "dirty:            %t\n", s.Dirty)
	fmt.Fprintf(w, "compatible from:  %d (the oldest binary schema version that runs against it)\n", s.CompatibleFrom)
	fmt.Fprintf(w, "this binary:      %d\n", latest)
	var pending []string
	for _, m := range migrations {
		if m.Version > s.Version {
			pending = append(pending, fmt.Sprintf("%d (%s)", m.Version, m.Name))
		}
	}
	switch {
	case s.Dirty:
		fmt.Fprintf(w, "a migration of version %d failed half-way under an earlier release: check which of its statements took effect,\n"+
			"finish or undo them by hand, then run: backend migrate force VERSION --yes\n", s.Version)
	case len(pending) > 0:
		fmt.Fprintf(w, "pending:          %s\n", strings.Join(pending, ", "))
	}
	verdict, reason := schema.Judge(s, latest)
	if verdict == schema.Refuse {
		fmt.Fprintf(w, "this binary refuses to run: %s\n", reason)
	}
	return nil
}

func rotateKeysCommand() *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "rotate-keys",
		Short: "Re-encrypt every credential in the database with the primary key",
		Args:  manageropts.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return rotateKeys(cmd, opts)
		},
	}
	cmd.Flags().AddGoFlagSet(databaseFlags(&opts.Database))
	keysFileFlag(cmd, opts, "Keyring file; its first key becomes the one every credential is encrypted with.")
	return cmd
}

func rotateKeys(cmd *cobra.Command, opts *Options) error {
	ctx := cmd.Context()
	keyring, err := opts.Keyring()
	if err != nil {
		return err
	}
	if keyring == nil {
		return manageropts.UsageErrorf("--credentials-keys-file is required")
	}
	database, err := db.Open(ctx, opts.Database)
	if err != nil {
		return err
	}
	defer func() { _ = database.Close() }()
	n, err := db.RotateKeys(ctx, database, keyring)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(cmd.OutOrStdout(), "re-encrypted %d values with key %s\n", n, keyring.PrimaryID())
	return err
}

func engineInstancesCommand() *cobra.Command {
	opts := &Options{}
	cmd := (&engineinstances.Command{
		Store: db.NewStore(nil), // engine instances hold no credentials
		CredentialStore: func() (*db.Store, error) {
			keyring, err := opts.Keyring()
			if err != nil {
				return nil, err
			}
			if keyring == nil {
				return nil, errors.New("--credentials-keys-file is required to store credentials")
			}
			return db.NewStore(keyring), nil
		},
		Open: openDatabase(&opts.Database),
	}).NewCommand()
	// Persistent: the database flags go before or after the verb.
	cmd.PersistentFlags().AddGoFlagSet(databaseFlags(&opts.Database))
	keysFileFlag(cmd, opts, "Keyring file that encrypts engine cluster credentials (set-cluster-credentials only).")
	return cmd
}

func operationsCommand() *cobra.Command {
	var cfg db.Config
	cmd := (&operations.Command{Store: db.NewStore(nil), Open: openDatabase(&cfg)}).NewCommand()
	cmd.PersistentFlags().AddGoFlagSet(databaseFlags(&cfg))
	return cmd
}

// openDatabase opens the database of cfg once the flags are parsed.
func openDatabase(cfg *db.Config) func(ctx context.Context) (bun.IDB, func(), error) {
	return func(ctx context.Context) (bun.IDB, func(), error) {
		database, err := db.Open(ctx, *cfg)
		if err != nil {
			return nil, nil, err
		}
		return database, func() { _ = database.Close() }, nil
	}
}
