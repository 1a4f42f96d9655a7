package schema

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5"
)

// Verdict is what a binary built for one schema version does against a database's schema.
type Verdict int

const (
	// Run: the schema is the binary's own or a newer compatible one.
	Run Verdict = iota
	// Wait: the schema is older than the binary's, or dirty; the migrator will (or an
	// operator must) bring it to a version the binary can run against.
	Wait
	// Refuse: the schema is newer and incompatible; only a newer release can run on it.
	Refuse
)

// Judge decides what a binary built with schema version built does against s, and says why
// in a sentence for its log.
func Judge(s State, built uint) (Verdict, string) {
	switch {
	case s.Dirty:
		return Wait, fmt.Sprintf("the database schema is dirty at version %d: a migration failed half-way; "+
			"an operator must check it and run `backend migrate force` (see the operator guide)", s.Version)
	case s.Version < built:
		return Wait, fmt.Sprintf("the database schema is at version %d and this binary needs version %d: waiting for the backend to migrate it",
			s.Version, built)
	case s.CompatibleFrom > built:
		return Refuse, fmt.Sprintf("the database schema is at version %d, which runs only binaries built for schema version %d or later; "+
			"this binary is built for version %d: run the release that the backend migrating the database comes from", s.Version, s.CompatibleFrom, built)
	}
	return Run, ""
}

// ErrIncompatible: the schema is newer than the binary's and incompatible with it.
var ErrIncompatible = errors.New("incompatible database schema")

// Waiter waits until a database's schema is one a binary built for version Built can run
// against, reading the version table only: it creates nothing.
type Waiter struct {
	Built uint
	// Connect opens a connection for one look at the schema.
	Connect func(ctx context.Context) (*pgx.Conn, error)
	Log     logr.Logger
	// Interval between looks (default 2s); the log repeats the reason at most every
	// Reminder (default 30s) while it does not change.
	Interval, Reminder time.Duration
	// Waiting, if set, is told the reason each time the binary goes on waiting (for its
	// readiness probe).
	Waiting func(reason string)
}

// Wait returns nil once the schema is runnable, ErrIncompatible (wrapped, with the reason)
// when it is newer and incompatible, or the context's error.
func (w Waiter) Wait(ctx context.Context) error {
	interval, reminder := w.Interval, w.Reminder
	if interval <= 0 {
		interval = 2 * time.Second
	}
	if reminder <= 0 {
		reminder = 30 * time.Second
	}
	var (
		last     string
		lastTime time.Time
	)
	for {
		reason, err := w.look(ctx)
		switch {
		case err == nil && reason == "":
			if last != "" {
				w.Log.Info("The database schema is ready", "binarySchemaVersion", w.Built)
			}
			return nil
		case errors.Is(err, ErrIncompatible):
			return err
		case err != nil:
			reason = "the database is unreachable: " + err.Error()
		}
		if w.Waiting != nil {
			w.Waiting(reason)
		}
		if reason != last || time.Since(lastTime) >= reminder {
			w.Log.Info("Waiting for the database schema", "reason", reason)
			last, lastTime = reason, time.Now()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}

// look reads the schema once: "" when it is runnable, the reason to wait otherwise.
func (w Waiter) look(ctx context.Context) (string, error) {
	lookCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := w.Connect(lookCtx)
	if err != nil {
		return "", err
	}
	defer func() { _ = conn.Close(context.WithoutCancel(lookCtx)) }()
	s, err := ReadState(lookCtx, conn)
	if err != nil {
		return "", err
	}
	switch verdict, reason := Judge(s, w.Built); verdict {
	case Refuse:
		return "", fmt.Errorf("%w: %s", ErrIncompatible, reason)
	case Wait:
		return reason, nil
	}
	return "", nil
}
