package db

import (
	"context"
	"fmt"
	"sync"

	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5"

	"github.com/gitops-service/gitops-service/backend-shared/db/schema"
	dbschema "github.com/gitops-service/gitops-service/db-schema"
)

// Migrations are the migrations embedded in the binary (package dbschema).
var Migrations = sync.OnceValues(func() ([]schema.Migration, error) {
	return schema.Load(dbschema.Migrations, "migrations")
})

// Migrate applies every pending up migration embedded in the binary, each in one
// transaction with its version mark, under an advisory lock so that replicas starting
// together apply each migration once. It uses a connection of its own, not the pool.
func Migrate(ctx context.Context, cfg Config) error {
	return withMigrator(ctx, cfg, func(m *schema.Migrator, conn *pgx.Conn) error { return m.Up(ctx, conn) })
}

// MigrateDown reverts the last steps migrations (steps >= 1).
func MigrateDown(ctx context.Context, cfg Config, steps int) error {
	return withMigrator(ctx, cfg, func(m *schema.Migrator, conn *pgx.Conn) error { return m.Down(ctx, conn, steps) })
}

// MigrateTo migrates up or down to exactly version.
func MigrateTo(ctx context.Context, cfg Config, version uint) error {
	return withMigrator(ctx, cfg, func(m *schema.Migrator, conn *pgx.Conn) error { return m.To(ctx, conn, version) })
}

// ForceSchemaVersion marks the schema as being at version, clean, without running any
// migration: the way out of a dirty mark, once an operator checked the schema.
func ForceSchemaVersion(ctx context.Context, cfg Config, version uint) error {
	return withMigrator(ctx, cfg, func(m *schema.Migrator, conn *pgx.Conn) error { return m.Force(ctx, conn, version) })
}

// SchemaState reads the database's schema version, whether it is dirty and the oldest
// binary version that may run against it, changing nothing.
func SchemaState(ctx context.Context, cfg Config) (schema.State, error) {
	conn, err := Connect(ctx, cfg)
	if err != nil {
		return schema.State{}, err
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	return schema.ReadState(ctx, conn)
}

// SchemaVersion reports the database's schema version (0 when none is applied) and whether
// a migration failed half-way (dirty), which needs an operator.
func SchemaVersion(ctx context.Context, cfg Config) (version uint, dirty bool, err error) {
	s, err := SchemaState(ctx, cfg)
	return s.Version, s.Dirty, err
}

// LatestSchemaVersion is the newest migration embedded in this binary.
func LatestSchemaVersion() (uint, error) {
	migrations, err := Migrations()
	if err != nil {
		return 0, err
	}
	return schema.Latest(migrations), nil
}

// WaitForSchema waits, reading the version table only, until the schema is one this
// binary can run against: at least its latest migration, not dirty, and not newer than
// what it is compatible with (then it returns an error wrapping schema.ErrIncompatible).
// waiting, if set, is told why each time it goes on waiting.
func WaitForSchema(ctx context.Context, cfg Config, waiting func(reason string)) error {
	built, err := LatestSchemaVersion()
	if err != nil {
		return err
	}
	return schema.Waiter{
		Built:   built,
		Connect: func(ctx context.Context) (*pgx.Conn, error) { return Connect(ctx, cfg) },
		Log:     logr.FromContextOrDiscard(ctx).WithName("schema"),
		Waiting: waiting,
	}.Wait(ctx)
}

// Connect opens one connection (not a pool) with cfg's URL and TLS policy.
func Connect(ctx context.Context, cfg Config) (*pgx.Conn, error) {
	cc, err := cfg.ConnConfig()
	if err != nil {
		return nil, err
	}
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return nil, fmt.Errorf("connecting to the database: %w", err)
	}
	return conn, nil
}

func withMigrator(ctx context.Context, cfg Config, fn func(*schema.Migrator, *pgx.Conn) error) error {
	migrations, err := Migrations()
	if err != nil {
		return fmt.Errorf("reading embedded migrations: %w", err)
	}
	conn, err := Connect(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	m := &schema.Migrator{Migrations: migrations, Log: logr.FromContextOrDiscard(ctx).WithName("migrate")}
	if err := fn(m, conn); err != nil {
		return fmt.Errorf("migrating the database: %w", err)
	}
	return nil
}
