package schema

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ErrDirty: the version mark says a migration failed half-way (left by golang-migrate, or
// set by hand). Nothing migrates until an operator checks the schema and runs
// `backend migrate force`.
var ErrDirty = errors.New("the database schema is dirty")

// State is what the database says of its schema.
type State struct {
	// Version is the last migration applied (0: none, or no version table yet).
	Version uint
	// Dirty: a migration of Version failed half-way under golang-migrate, or a hand edit.
	Dirty bool
	// CompatibleFrom is the oldest binary version that may run against the schema.
	CompatibleFrom uint
}

func (s State) String() string {
	out := fmt.Sprintf("version %d", s.Version)
	if s.Dirty {
		out += " (dirty)"
	}
	return out
}

// The version table; golang-migrate's name and columns, plus compatible_from, which a
// binary reads to know whether it may run against a newer schema than its own.
const (
	versionTable        = "schema_migrations"
	createVersionTable  = `CREATE TABLE IF NOT EXISTS schema_migrations (version bigint NOT NULL PRIMARY KEY, dirty boolean NOT NULL)`
	addCompatibleFrom   = `ALTER TABLE schema_migrations ADD COLUMN IF NOT EXISTS compatible_from bigint NOT NULL DEFAULT 0`
	readVersion         = `SELECT version, dirty, compatible_from FROM schema_migrations LIMIT 1`
	readVersionNoCompat = `SELECT version, dirty, 0 FROM schema_migrations LIMIT 1`
	// golang-migrate's advisory lock salt (database.GenerateAdvisoryLockId).
	advisoryLockSalt uint32 = 1486364155
)

// ReadState reads the schema's state without changing anything: a binary waiting for the
// schema must not create the version table, nor anything else, while the backend migrates.
func ReadState(ctx context.Context, conn *pgx.Conn) (State, error) {
	var table, column *string
	if err := conn.QueryRow(ctx,
		`SELECT to_regclass($1)::text, (SELECT attname::text FROM pg_attribute WHERE attrelid = to_regclass($1) AND attname = 'compatible_from' AND NOT attisdropped)`,
		versionTable).Scan(&table, &column); err != nil {
		return State{}, fmt.Errorf("reading the schema version: %w", err)
	}
	if table == nil {
		return State{}, nil
	}
	query := readVersion
	if column == nil {
		query = readVersionNoCompat
	}
	var (
		version int64
		dirty   bool
		from    int64
	)
	err := conn.QueryRow(ctx, query).Scan(&version, &dirty, &from)
	if errors.Is(err, pgx.ErrNoRows) {
		return State{}, nil
	}
	if err != nil {
		return State{}, fmt.Errorf("reading the schema version: %w", err)
	}
	if version < 0 { // golang-migrate's "no version, dirty"
		return State{Dirty: dirty}, nil
	}
	v, err := toVersion(version)
	if err != nil {
		return State{}, err
	}
	f, err := toVersion(from)
	if err != nil {
		return State{}, err
	}
	return State{Version: v, Dirty: dirty, CompatibleFrom: f}, nil
}

// toVersion is a version read from the version table; migration versions fit 32 bits.
func toVersion(v int64) (uint, error) {
	if v < 0 || v > math.MaxUint32 {
		return 0, fmt.Errorf("the version table holds %d, which is no migration version", v)
	}
	return uint(v), nil
}

// Migrator applies Migrations to one database connection, under golang-migrate's advisory
// lock, each migration in one transaction with its version mark.
type Migrator struct {
	Migrations []Migration
	Log        logr.Logger
	// LockTimeout bounds how long one statement of a migration waits for a lock; past it the
	// migration is rolled back and tried again, so that it never deadlocks with, nor holds
	// up for long, the service's own statements (default 10s).
	LockTimeout time.Duration
	// Attempts is how often a migration is tried when it fails on a deadlock, a
	// serialization failure or a lock timeout (default 5), with a backoff between tries
	// starting at Backoff (default 1s) and doubling.
	Attempts int
	Backoff  time.Duration
}

// Up applies every pending migration.
func (m *Migrator) Up(ctx context.Context, conn *pgx.Conn) error {
	return m.To(ctx, conn, Latest(m.Migrations))
}

// To migrates up or down to exactly version. A schema newer than every migration the
// binary has is left as it is when the target is the binary's latest (an older replica
// during an upgrade), and refused otherwise.
func (m *Migrator) To(ctx context.Context, conn *pgx.Conn, version uint) error {
	if version != 0 {
		if _, ok := find(m.Migrations, version); !ok {
			return fmt.Errorf("no migration of version %d in this binary (latest: %d)", version, Latest(m.Migrations))
		}
	}
	return m.locked(ctx, conn, func(s State) error {
		if s.Dirty {
			return dirtyError(s)
		}
		if s.Version > Latest(m.Migrations) {
			if version == Latest(m.Migrations) {
				m.Log.Info("The database schema is newer than this binary's; nothing to migrate", "schemaVersion", s.Version, "binaryVersion", version)
				return nil
			}
			return fmt.Errorf("the database schema is at version %d, newer than this binary's migrations (latest: %d): run the release that has them", s.Version, Latest(m.Migrations))
		}
		for v := s.Version; v < version; {
			next, ok := m.next(v)
			if !ok {
				return fmt.Errorf("no migration after version %d in this binary", v)
			}
			if err := m.apply(ctx, conn, next.Up, next.Version, fmt.Sprintf("up %d (%s)", next.Version, next.Name)); err != nil {
				return err
			}
			v = next.Version
		}
		for v := s.Version; v > version; {
			cur, ok := find(m.Migrations, v)
			if !ok {
				return fmt.Errorf("no migration of version %d in this binary to revert", v)
			}
			prev := m.previous(v)
			if err := m.apply(ctx, conn, cur.Down, prev, fmt.Sprintf("down %d (%s)", cur.Version, cur.Name)); err != nil {
				return err
			}
			v = prev
		}
		return nil
	})
}

// Down reverts the last steps migrations (steps >= 1).
func (m *Migrator) Down(ctx context.Context, conn *pgx.Conn, steps int) error {
	if steps < 1 {
		return fmt.Errorf("migrate down: steps must be at least 1, got %d", steps)
	}
	s, err := ReadState(ctx, conn)
	if err != nil {
		return err
	}
	target := s.Version
	for range steps {
		if target == 0 {
			return fmt.Errorf("migrate down: the schema is at version %d; cannot revert %d migrations", s.Version, steps)
		}
		target = m.previous(target)
	}
	return m.To(ctx, conn, target)
}

// Force sets the version mark to version, clean, without running any migration: for an
// operator who checked that the schema is that version's (after a dirty mark).
func (m *Migrator) Force(ctx context.Context, conn *pgx.Conn, version uint) error {
	if version != 0 {
		if _, ok := find(m.Migrations, version); !ok {
			return fmt.Errorf("no migration of version %d in this binary (latest: %d)", version, Latest(m.Migrations))
		}
	}
	return m.locked(ctx, conn, func(State) error {
		return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error { return m.mark(ctx, tx, version) })
	})
}

// locked runs fn holding the migration lock, with the version table present.
func (m *Migrator) locked(ctx context.Context, conn *pgx.Conn, fn func(State) error) error {
	id, err := lockID(ctx, conn)
	if err != nil {
		return err
	}
	var got bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, id).Scan(&got); err != nil {
		return fmt.Errorf("taking the migration lock: %w", err)
	}
	if !got {
		m.Log.Info("Another process is migrating the database; waiting for its lock")
		if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, id); err != nil {
			return fmt.Errorf("taking the migration lock: %w", err)
		}
	}
	defer func() {
		// A cancelled ctx may have closed the connection: its session lock went with it.
		unlockCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_, _ = conn.Exec(unlockCtx, `SELECT pg_advisory_unlock($1)`, id)
	}()
	for _, stmt := range []string{createVersionTable, addCompatibleFrom} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("creating the version table: %w", err)
		}
	}
	s, err := ReadState(ctx, conn)
	if err != nil {
		return err
	}
	return fn(s)
}

// apply runs sql and marks version in one transaction, again on a transient failure.
func (m *Migrator) apply(ctx context.Context, conn *pgx.Conn, sql string, version uint, what string) error {
	attempts, backoff := m.Attempts, m.Backoff
	if attempts <= 0 {
		attempts = 5
	}
	if backoff <= 0 {
		backoff = time.Second
	}
	lockTimeout := m.LockTimeout
	if lockTimeout <= 0 {
		lockTimeout = 10 * time.Second
	}
	for attempt := 1; ; attempt++ {
		start := time.Now()
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, fmt.Sprintf("SET LOCAL lock_timeout = %d", lockTimeout.Milliseconds())); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, sql); err != nil {
				return err
			}
			return m.mark(ctx, tx, version)
		})
		if err == nil {
			m.Log.Info("Applied migration", "migration", what, "duration", time.Since(start).Round(time.Millisecond).String())
			return nil
		}
		if !Transient(err) || attempt >= attempts || ctx.Err() != nil {
			return fmt.Errorf("migration %s failed (the schema stays at the version before it, clean): %w", what, err)
		}
		m.Log.Info("Migration rolled back on a transient failure; trying again", "migration", what, "attempt", attempt, "error", err.Error())
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff *= 2
	}
}

// mark writes version as the schema's, clean, in tx.
func (m *Migrator) mark(ctx context.Context, tx pgx.Tx, version uint) error {
	if _, err := tx.Exec(ctx, `DELETE FROM schema_migrations`); err != nil {
		return err
	}
	if version == 0 {
		return nil // golang-migrate's mark for no version: an empty table
	}
	_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, dirty, compatible_from) VALUES ($1, false, $2)`,
		uint64(version), uint64(CompatibleFrom(m.Migrations, version)))
	return err
}

func (m *Migrator) next(v uint) (Migration, bool) {
	for _, mig := range m.Migrations {
		if mig.Version > v {
			return mig, true
		}
	}
	return Migration{}, false
}

func (m *Migrator) previous(v uint) uint {
	var prev uint
	for _, mig := range m.Migrations {
		if mig.Version < v {
			prev = mig.Version
		}
	}
	return prev
}

// Transient says whether err is a failure that trying again can cure: a deadlock, a
// serialization failure or a lock timeout.
func Transient(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	switch pgErr.Code {
	case "40P01", "40001", "55P03": // deadlock_detected, serialization_failure, lock_not_available
		return true
	}
	return false
}

// lockID is golang-migrate's advisory lock id for the version table of the connection's
// database and schema, so that its migrator and this one exclude each other.
func lockID(ctx context.Context, conn *pgx.Conn) (int64, error) {
	var database, schemaName string
	if err := conn.QueryRow(ctx, `SELECT current_database(), current_schema()`).Scan(&database, &schemaName); err != nil {
		return 0, fmt.Errorf("reading the database name: %w", err)
	}
	sum := crc32.ChecksumIEEE([]byte(strings.Join([]string{schemaName, versionTable, database}, "\x00")))
	return int64(sum * advisoryLockSalt), nil
}

func dirtyError(s State) error {
	return fmt.Errorf("%w at version %d: a migration failed half-way under an earlier release; check the schema, "+
		"then run `backend migrate force VERSION --yes` with the version it is at (see the operator guide, \"A dirty database schema\")", ErrDirty, s.Version)
}
