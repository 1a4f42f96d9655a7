// Package db is the PostgreSQL layer of the GitOps Service: the connection (Open, Config),
// the schema migrations (Migrate), typed errors, and Store, whose methods are the
// repository functions over every table.
//
// Every Store method takes a bun.IDB, so callers compose several calls in one transaction
// (db.RunInTx) and the consumer defines the small interface it needs. Methods on tenant
// data take the tenant id and put it in the WHERE clause: they cannot see, change or delete
// another tenant's rows, and composite foreign keys keep references within a tenant.
package db

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
)

// EnvDatabaseURL is the environment variable that supplies the default --database-url.
const EnvDatabaseURL = "GITOPS_DATABASE_URL"

// DefaultMaxOpenConns is the default pool size.
const DefaultMaxOpenConns = 10

// Config says how to reach the database. Build one per process and pass it to Open once:
// the returned pool is shared by everything in the process.
type Config struct {
	// URL is a PostgreSQL connection URL or DSN. It must ask for TLS (sslmode=require,
	// verify-ca or verify-full) unless AllowInsecure is set and every host is loopback.
	URL string
	// MaxOpenConns caps the pool (0 means DefaultMaxOpenConns).
	MaxOpenConns int
	// AllowInsecure permits a plaintext connection, to loopback hosts only (development).
	AllowInsecure bool
}

// BindFlags registers --database-url (default from $GITOPS_DATABASE_URL),
// --database-max-conns and --database-allow-insecure.
func (c *Config) BindFlags(fs *flag.FlagSet) {
	def := c.URL
	if def == "" {
		def = os.Getenv(EnvDatabaseURL)
	}
	maxConns := c.MaxOpenConns
	if maxConns == 0 {
		maxConns = DefaultMaxOpenConns
	}
	c.URL = def
	fs.Var(urlFlag{&c.URL}, "database-url",
		"PostgreSQL connection URL (default $"+EnvDatabaseURL+"); must use sslmode=require, verify-ca or verify-full")
	fs.IntVar(&c.MaxOpenConns, "database-max-conns", maxConns, "maximum number of open database connections")
	fs.BoolVar(&c.AllowInsecure, "database-allow-insecure", c.AllowInsecure,
		"allow a connection without TLS to a loopback database (development only)")
}

// urlFlag is the --database-url flag: help prints its default (from the environment)
// with the password masked.
type urlFlag struct{ url *string }

func (f urlFlag) String() string {
	if f.url == nil {
		return ""
	}
	return RedactURL(*f.url)
}

func (f urlFlag) Set(s string) error { *f.url = s; return nil }

// Type names the value in command-line help, as a plain string flag's.
func (urlFlag) Type() string { return "string" }

// passwordSetting is the password of a keyword/value connection string.
var passwordSetting = regexp.MustCompile(`(?i)(password\s*=\s*)('(\\.|[^'])*'|\S+)`)

// RedactURL masks the password of a connection URL (postgres://user:password@host/db) or
// keyword/value string (host=h password=secret).
func RedactURL(s string) string {
	if u, err := url.Parse(s); err == nil && u.Scheme != "" {
		q := u.Query()
		if q.Has("password") {
			q.Set("password", "xxxxx")
			u.RawQuery = q.Encode()
		}
		return u.Redacted()
	}
	return passwordSetting.ReplaceAllString(s, "${1}xxxxx")
}

// ConnConfig parses URL and enforces the TLS policy. Its errors never contain the password.
func (c Config) ConnConfig() (*pgx.ConnConfig, error) {
	if c.URL == "" {
		return nil, errors.New("no database URL: set --database-url or $" + EnvDatabaseURL)
	}
	cc, err := pgx.ParseConfig(c.URL)
	if err != nil {
		// pgconn redacts the password in its parse errors.
		return nil, fmt.Errorf("invalid database URL: %w", err)
	}
	if err := checkTLS(&cc.Config, c.AllowInsecure); err != nil {
		return nil, err
	}
	// bun renders complete SQL text with no parameters, so preparing each statement (pgx's
	// default) would cost an extra round trip and fill the statement cache with one-offs.
	cc.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	return cc, nil
}

// checkTLS refuses any connection path without TLS: sslmode=disable, and allow/prefer (the
// default when sslmode is absent), which silently fall back to plaintext.
func checkTLS(cfg *pgconn.Config, allowInsecure bool) error {
	type target struct {
		host string
		tls  bool
	}
	targets := []target{{cfg.Host, cfg.TLSConfig != nil}}
	for _, fb := range cfg.Fallbacks {
		targets = append(targets, target{fb.Host, fb.TLSConfig != nil})
	}
	for _, t := range targets {
		if t.tls {
			continue
		}
		if !allowInsecure {
			return errors.New("the database URL allows an unencrypted connection (sslmode absent, disable, allow or prefer): " +
				"use sslmode=require, verify-ca or verify-full, or for a development database on loopback pass --database-allow-insecure")
		}
		if !isLoopback(t.host) {
			return fmt.Errorf("--database-allow-insecure only applies to loopback databases, and host %q is not one: use TLS (sslmode=require, verify-ca or verify-full)", t.host)
		}
	}
	return nil
}

func isLoopback(host string) bool {
	if strings.HasPrefix(host, "/") { // Unix socket: never leaves the machine.
		return true
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Open connects the process's pool and checks that the database answers.
func Open(ctx context.Context, cfg Config) (*bun.DB, error) {
	cc, err := cfg.ConnConfig()
	if err != nil {
		return nil, err
	}
	n := cfg.MaxOpenConns
	if n <= 0 {
		n = DefaultMaxOpenConns
	}
	sqldb := stdlib.OpenDB(*cc)
	sqldb.SetMaxOpenConns(n)
	sqldb.SetMaxIdleConns(n)
	sqldb.SetConnMaxIdleTime(5 * time.Minute)
	bdb := bun.NewDB(sqldb, pgdialect.New())
	if err := bdb.PingContext(ctx); err != nil {
		_ = bdb.Close()
		return nil, fmt.Errorf("connecting to the database: %w", err)
	}
	return bdb, nil
}
