package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// signalLockClass is the first key of the advisory locks that order raising and releasing
// the signal of an engine instance (the second is a hash of the instance's id).
const signalLockClass = 0x6f7073 // "ops"

// OperationSignal is the signal of an engine instance: while it exists, the Operation CR
// named after OperationID stands for every Waiting operation of the instance.
type OperationSignal struct {
	bun.BaseModel `bun:"table:operation_signals,alias:sig"`

	EngineInstanceID string    `bun:"engine_instance_id,pk,type:uuid"`
	OperationID      string    `bun:"operation_id,notnull,type:uuid"`
	CRCreated        bool      `bun:"cr_created,notnull"`
	CreatedAt        time.Time `bun:"created_at,nullzero,notnull,default:current_timestamp"`
}

// RaiseSignal raises the signal of op's engine instance for op, inside the transaction tx
// that wrote op, and reports whether it did (op.Signalled): false means a signal is already
// up and its CR stands for op too. op.CoveredBySignal says that this signal's CR was known
// to exist already, so nobody needs to check for it after the commit. The shared advisory
// lock it takes until tx ends keeps the cluster-agent from releasing that signal before it
// can see op.
func (s *Store) RaiseSignal(ctx context.Context, tx bun.IDB, op *Operation) (bool, error) {
	var lock prepared
	if _, err := lock.exec(ctx, tx, tx.NewRaw("SELECT pg_advisory_xact_lock_shared(?, hashtext(?))",
		lock.arg(signalLockClass), lock.arg(op.EngineInstanceID))); err != nil {
		return false, translate(err)
	}
	// A statement of its own, so that it sees the signal as it is under the lock, which no
	// release can take down now. A signal raised since the statement began is not seen, and
	// reads as not covered: the caller checks after the commit.
	var raised, covered bool
	var p prepared
	instance := p.arg(op.EngineInstanceID)
	err := p.scan(ctx, tx, tx.NewRaw(`WITH raised AS (INSERT INTO operation_signals (engine_instance_id, operation_id) VALUES (?, ?)
	ON CONFLICT (engine_instance_id) DO NOTHING RETURNING 1)
SELECT EXISTS (SELECT 1 FROM raised),
	coalesce((SELECT cr_created FROM operation_signals WHERE engine_instance_id = ?), false)`,
		instance, p.arg(op.ID), instance), &raised, &covered)
	if err != nil {
		return false, translate(err)
	}
	op.Signalled, op.CoveredBySignal = raised, !raised && covered
	return raised, nil
}

// GetSignal returns the signal of an engine instance (ErrNotFound when none is up).
func (s *Store) GetSignal(ctx context.Context, idb bun.IDB, engineInstanceID string) (*OperationSignal, error) {
	sig := new(OperationSignal)
	if err := idb.NewSelect().Model(sig).Where("sig.engine_instance_id = ?", engineInstanceID).Scan(ctx); err != nil {
		return nil, fmt.Errorf("signal of engine instance %s: %w", engineInstanceID, translate(err))
	}
	return sig, nil
}

// ListSignals returns every signal that is up.
func (s *Store) ListSignals(ctx context.Context, idb bun.IDB) ([]OperationSignal, error) {
	var sigs []OperationSignal
	err := idb.NewSelect().Model(&sigs).Order("sig.created_at").Scan(ctx)
	return sigs, translate(err)
}

// MarkSignalCRCreated records that the CR of the signal raised for operationID exists.
func (s *Store) MarkSignalCRCreated(ctx context.Context, idb bun.IDB, engineInstanceID, operationID string) error {
	_, err := idb.NewUpdate().Model((*OperationSignal)(nil)).Set("cr_created = true").
		Where("engine_instance_id = ? AND operation_id = ?", engineInstanceID, operationID).Exec(ctx)
	return translate(err)
}

// ReviveSignal makes the signal of an engine instance, if one is up, stand for the
// instance's newest Waiting operation, whose CR the caller then creates (CRCreated is false
// until it does), and returns that operation; with no operation Waiting it takes the
// signal down. It returns nil when it leaves no signal up. A database that lost the
// cluster-agent's ReleaseSignal (a crash with asynchronous commit, a failover to an
// asynchronous replica) brings back a signal whose CR the agent took long ago: every
// operation written under it would wait for the agent's sweep, and a new CR wakes the agent
// now. Under the exclusive advisory lock no writer is between its RaiseSignal and commit.
func (s *Store) ReviveSignal(ctx context.Context, idb bun.IDB, engineInstanceID string) (*Operation, error) {
	var newest *Operation
	err := idb.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		newest = nil
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(?, hashtext(?))", signalLockClass, engineInstanceID); err != nil {
			return err
		}
		op := new(Operation)
		err := tx.NewSelect().Model(op).
			Where("op.engine_instance_id = ? AND op.state = ?", engineInstanceID, OperationWaiting).
			Order("op.created_at DESC", "op.id DESC").Limit(1).Scan(ctx)
		if errors.Is(err, sql.ErrNoRows) {
			_, err = tx.NewDelete().Model((*OperationSignal)(nil)).Where("engine_instance_id = ?", engineInstanceID).Exec(ctx)
			return err
		}
		if err != nil {
			return err
		}
		res, err := tx.NewUpdate().Model((*OperationSignal)(nil)).Set("operation_id = ?, cr_created = false", op.ID).
			Where("engine_instance_id = ?", engineInstanceID).Exec(ctx)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err // no signal up: nothing to revive
		}
		newest = op
		return nil
	})
	return newest, translate(err)
}

// ListWaitingOperations returns the Waiting operations of an engine instance, oldest first.
func (s *Store) ListWaitingOperations(ctx context.Context, idb bun.IDB, engineInstanceID string) ([]Operation, error) {
	var ops []Operation
	err := idb.NewSelect().Model(&ops).
		Where("op.engine_instance_id = ? AND op.state = ?", engineInstanceID, OperationWaiting).
		Order("op.created_at", "op.id").
		Scan(ctx)
	return ops, translate(err)
}

// ListWaitingOperationsSince returns the Waiting operations of an engine instance created at
// or after since, oldest first.
func (s *Store) ListWaitingOperationsSince(ctx context.Context, idb bun.IDB, engineInstanceID string, since time.Time) ([]Operation, error) {
	var ops []Operation
	err := idb.NewSelect().Model(&ops).
		Where("op.engine_instance_id = ? AND op.state = ? AND op.created_at >= ?", engineInstanceID, OperationWaiting, since).
		Order("op.created_at", "op.id").
		Scan(ctx)
	return ops, translate(err)
}

// ReleaseSignal takes down the signal of an engine instance unless one of its Waiting
// operations is not yet taken (taken reports those the caller has). It returns the ones
// not taken; the signal stays up while there are any. Under the exclusive advisory lock no
// writer of an operation is between its RaiseSignal and its commit, so every operation
// committed under this signal is among those read here.
func (s *Store) ReleaseSignal(ctx context.Context, idb bun.IDB, engineInstanceID string, taken func(id string) bool) ([]Operation, error) {
	var untaken []Operation
	err := idb.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		untaken = nil
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(?, hashtext(?))", signalLockClass, engineInstanceID); err != nil {
			return err
		}
		waiting, err := s.ListWaitingOperations(ctx, tx, engineInstanceID)
		if err != nil {
			return err
		}
		for _, op := range waiting {
			if !taken(op.ID) {
				untaken = append(untaken, op)
			}
		}
		if len(untaken) > 0 {
			return nil
		}
		_, err = tx.NewDelete().Model((*OperationSignal)(nil)).Where("engine_instance_id = ?", engineInstanceID).Exec(ctx)
		return err
	})
	return untaken, translate(err)
}
