// Package dbtest gives database tests a real PostgreSQL: one server per test package and,
// for each test, its own database cloned from a template migrated once, so tests run in
// parallel (t.Parallel) and packages run in parallel with each other.
//
// Use it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }
//
// and in each test: bdb := dbtest.NewDB(t).
package dbtest

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/testenv"
)

// TemplateDatabase is the migrated database that every test database is cloned from.
const TemplateDatabase = "gitops_template"

// server is the test package's PostgreSQL, set by Main. Test-process state only.
var server *testenv.Postgres

// Main starts PostgreSQL, migrates the template database, runs the tests and stops the
// server; it returns the exit code for os.Exit.
func Main(m *testing.M) int {
	pg, err := testenv.StartPostgres(testenv.PostgresOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "dbtest: starting PostgreSQL:", err)
		return 1
	}
	server = pg
	defer func() {
		if err := pg.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "dbtest: stopping PostgreSQL:", err)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := pg.CreateDatabase(ctx, TemplateDatabase, ""); err != nil {
		fmt.Fprintln(os.Stderr, "dbtest: creating the template database:", err)
		return 1
	}
	if err := db.Migrate(ctx, Config(TemplateDatabase)); err != nil {
		fmt.Fprintln(os.Stderr, "dbtest: migrating the template database:", err)
		return 1
	}
	return m.Run()
}

// Server is the package's PostgreSQL server (Main must be running).
func Server() *testenv.Postgres {
	if server == nil {
		panic("dbtest: call dbtest.Main from TestMain")
	}
	return server
}

// Config is a db.Config for a database of the test server (plaintext on loopback).
func Config(database string) db.Config {
	return db.Config{URL: Server().URL(database), MaxOpenConns: 10, AllowInsecure: true}
}

// NewConfig creates a database for t, a copy of the migrated template, dropped when t
// ends, and returns its config.
func NewConfig(t testing.TB) db.Config {
	t.Helper()
	return db.Config{URL: Server().NewDatabase(t, TemplateDatabase), MaxOpenConns: 10, AllowInsecure: true}
}

// NewEmptyConfig creates an empty database (no schema) for t, e.g. for migration tests.
func NewEmptyConfig(t testing.TB) db.Config {
	t.Helper()
	return db.Config{URL: Server().NewDatabase(t, ""), MaxOpenConns: 10, AllowInsecure: true}
}

// NewDB creates a migrated database for t and returns a pool on it, closed when t ends
// (before the database is dropped).
func NewDB(t testing.TB) *bun.DB {
	t.Helper()
	return Open(t, NewConfig(t))
}

// Open opens a pool with db.Open and closes it when t ends.
func Open(t testing.TB, cfg db.Config) *bun.DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	bdb, err := db.Open(ctx, cfg)
	if err != nil {
		t.Fatalf("opening the database: %v", err)
	}
	t.Cleanup(func() { _ = bdb.Close() })
	return bdb
}

// PgDump runs pg_dump against a database of the test server (Postgres.Dump).
func PgDump(ctx context.Context, database string, args ...string) (string, error) {
	return Server().Dump(ctx, database, args...)
}

// DatabaseName is the database name of a config's URL.
func DatabaseName(t testing.TB, cfg db.Config) string {
	t.Helper()
	cc, err := cfg.ConnConfig()
	if err != nil {
		t.Fatal(err)
	}
	return cc.Database
}
