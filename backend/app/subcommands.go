package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/uptrace/bun"

	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend/internal/placement"
)

// IsSubcommand reports whether name is one of the backend's subcommands.
func IsSubcommand(name string) bool {
	return name == "migrate" || name == "rotate-keys" || name == "engine-instances"
}

// RunSubcommand runs a one-shot subcommand.
func RunSubcommand(name string, args []string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opts := &Options{}
	fs := flag.NewFlagSet("backend "+name, flag.ContinueOnError)
	opts.Database.BindFlags(fs)
	switch name {
	case "migrate":
		down := fs.Int("down", 0, "Revert this many migrations instead of applying them.")
		if err := parse(fs, args); err != nil {
			return err
		}
		if *down > 0 {
			return db.MigrateDown(ctx, opts.Database, *down)
		}
		if err := db.Migrate(ctx, opts.Database); err != nil {
			return err
		}
		version, _, err := db.SchemaVersion(ctx, opts.Database)
		if err == nil {
			fmt.Printf("database schema at version %d\n", version)
		}
		return err
	case "rotate-keys":
		fs.StringVar(&opts.KeysFile, "credentials-keys-file", os.Getenv(EnvKeysFile), "Keyring file; its first key becomes the one every credential is encrypted with.")
		if err := parse(fs, args); err != nil {
			return err
		}
		keyring, err := opts.Keyring()
		if err != nil {
			return err
		}
		if keyring == nil {
			return errors.New("--credentials-keys-file is required")
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
		fmt.Printf("re-encrypted %d values with key %s\n", n, keyring.PrimaryID())
		return nil
	case "engine-instances":
		fs.StringVar(&opts.KeysFile, "credentials-keys-file", os.Getenv(EnvKeysFile),
			"Keyring file that encrypts engine cluster credentials (set-cluster-credentials only).")
		cmd := &placement.Command{
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
			Out: os.Stdout,
			Open: func(ctx context.Context) (bun.IDB, func(), error) {
				database, err := db.Open(ctx, opts.Database)
				if err != nil {
					return nil, nil, err
				}
				return database, func() { _ = database.Close() }, nil
			},
		}
		err := cmd.Run(ctx, fs, args)
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	return fmt.Errorf("unknown subcommand %q", name)
}

func parse(fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	return err
}
