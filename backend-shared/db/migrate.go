package db

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-logr/logr"
	"github.com/golang-migrate/migrate/v4"
	migratepgx "github.com/golang-migrate/migrate/v4/database/pgx/v5"
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/jackc/pgx/v5/stdlib"

	dbschema "github.com/gitops-service/gitops-service/db-schema"
)

// Migrate applies every pending up migration embedded in the binary (package dbschema).
// golang-migrate holds a PostgreSQL advisory lock meanwhile, so replicas starting together
// apply each migration once. It uses its own connection, not the process's pool.
func Migrate(ctx context.Context, cfg Config) error {
	return withMigrator(ctx, cfg, func(m *migrate.Migrate) error { return m.Up() })
}

// MigrateDown reverts the last steps migrations (steps >= 1).
func MigrateDown(ctx context.Context, cfg Config, steps int) error {
	if steps < 1 {
		return fmt.Errorf("migrate down: steps must be at least 1, got %d", steps)
	}
	return withMigrator(ctx, cfg, func(m *migrate.Migrate) error { return m.Steps(-steps) })
}

// MigrateTo migrates up or down to exactly version.
func MigrateTo(ctx context.Context, cfg Config, version uint) error {
	return withMigrator(ctx, cfg, func(m *migrate.Migrate) error { return m.Migrate(version) })
}

// SchemaVersion reports the database's schema version (0 when none is applied) and whether
// a migration failed half-way (dirty), which needs an operator.
func SchemaVersion(ctx context.Context, cfg Config) (version uint, dirty bool, err error) {
	err = withMigrator(ctx, cfg, func(m *migrate.Migrate) error {
		version, dirty, err = m.Version()
		if errors.Is(err, migrate.ErrNilVersion) {
			return nil
		}
		return err
	})
	return version, dirty, err
}

// LatestSchemaVersion is the newest migration embedded in this binary.
func LatestSchemaVersion() (uint, error) {
	src, err := iofs.New(dbschema.Migrations, "migrations")
	if err != nil {
		return 0, err
	}
	defer func() { _ = src.Close() }()
	v, err := src.First()
	if err != nil {
		return 0, err
	}
	for {
		next, err := src.Next(v)
		if err != nil {
			return v, nil // fs.ErrNotExist: v is the last one
		}
		v = next
	}
}

func withMigrator(ctx context.Context, cfg Config, fn func(*migrate.Migrate) error) error {
	cc, err := cfg.ConnConfig()
	if err != nil {
		return err
	}
	src, err := iofs.New(dbschema.Migrations, "migrations")
	if err != nil {
		return fmt.Errorf("reading embedded migrations: %w", err)
	}
	sqldb := stdlib.OpenDB(*cc)
	sqldb.SetMaxOpenConns(2) // the driver pins one connection for the lock; one for set-up queries
	driver, err := migratepgx.WithInstance(sqldb, &migratepgx.Config{})
	if err != nil {
		_ = sqldb.Close()
		_ = src.Close()
		return fmt.Errorf("connecting to the database: %w", err)
	}
	m, err := migrate.NewWithInstance("iofs", src, "pgx5", driver)
	if err != nil {
		_ = driver.Close() // closes sqldb too
		_ = src.Close()
		return err
	}
	m.Log = migrateLogger{logr.FromContextOrDiscard(ctx).WithName("migrate")}
	defer func() { _, _ = m.Close() }()

	// golang-migrate has no context: ask it to stop at the next safe point on cancellation.
	// GracefulStop is buffered (one value), so the send never blocks.
	stop := context.AfterFunc(ctx, func() { m.GracefulStop <- true })
	defer stop()

	err = fn(m)
	if errors.Is(err, migrate.ErrNoChange) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("migrating the database: %w", err)
	}
	return ctx.Err()
}

// migrateLogger sends golang-migrate's progress lines to the context's logger.
type migrateLogger struct{ log logr.Logger }

func (l migrateLogger) Printf(format string, v ...any) {
	l.log.Info("Migration progress", "message", fmt.Sprintf(format, v...))
}

func (l migrateLogger) Verbose() bool { return false }
