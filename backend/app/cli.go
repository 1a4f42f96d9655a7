package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"github.com/uptrace/bun"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/manageropts"
	"github.com/gitops-service/gitops-service/backend/internal/engineinstances"
	"github.com/gitops-service/gitops-service/backend/internal/operations"
)

// NewCommand returns the backend's command line: with flags only it runs the controllers;
// its verbs are migrate, rotate-keys, engine-instances, operations and version.
func NewCommand() *cobra.Command {
	return newCommand((*Options).Setup)
}

// ManagerOptions adjusts the backend's manager: Secrets are watched by their metadata and
// read from the API server (manageropts.UncachedSecrets).
func ManagerOptions(o *ctrl.Options) { manageropts.UncachedSecrets(o) }

// newCommand is NewCommand with setup adding the controllers (tests replace it).
func newCommand(setup func(*Options, context.Context, ctrl.Manager, logr.Logger) error) *cobra.Command {
	opts := &Options{}
	root := manageropts.Command{
		Name:            "backend",
		Summary:         "Reconciles GitOpsDeployments, SyncRuns, ManagedEnvironments and RepositoryCredentials into the database.",
		MetricsAddr:     ":8080",
		ProbeAddr:       ":8081",
		BindFlags:       opts.BindFlags,
		DeprecatedFlags: DeprecatedFlags,
		ManagerOptions:  ManagerOptions,
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
		Short: "Apply the pending database migrations (or revert some with --down N)",
		Long: `Apply the pending database migrations, under a PostgreSQL advisory lock, and print the
schema version; with --down N, revert the last N instead (with the binary that has them).`,
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
	cmd.Flags().AddGoFlagSet(databaseFlags(&cfg))
	cmd.Flags().IntVar(&down, "down", 0, "Revert this many migrations instead of applying them.")
	return cmd
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
