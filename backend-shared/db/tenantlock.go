package db

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"
)

// tenantLockClass is the first key of the advisory locks that serialise the work on one
// tenant's Argo CD objects (the second is a hash of the tenant's id).
const tenantLockClass = 0x74656e // "ten"

// WithTenantLock runs fn in a transaction that holds the advisory lock of tenantID until it
// ends. The cluster-agent's handlers of a tenant's AppProjects and credential Secrets take
// it, so that each reads the tenant's rows and writes its objects while no other worker, in
// this process or another, acts on reads made before those writes. fn reads through tx.
func (s *Store) WithTenantLock(ctx context.Context, idb bun.IDB, tenantID string, fn func(ctx context.Context, tx bun.Tx) error) error {
	return idb.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if err := s.LockTenant(ctx, tx, tenantID); err != nil {
			return err
		}
		return fn(ctx, tx)
	})
}

// LockTenant waits until no transaction holds the advisory lock of tenantID and takes it:
// inside a transaction until it ends (WithTenantLock), outside one for its one statement
// only. There it is a wait that keeps nothing, for a reader that needs the last holder's
// work done but does not keep the next holder out.
func (s *Store) LockTenant(ctx context.Context, idb bun.IDB, tenantID string) error {
	var p prepared
	_, err := p.exec(ctx, idb, idb.NewRaw("SELECT pg_advisory_xact_lock(?, hashtext(?))", p.arg(tenantLockClass), p.arg(tenantID)))
	return translate(err)
}

// LocateApplicationOnceTenantFree returns an application by id whatever its tenant and
// instance, once no one holds its tenant's lock (LockTenant's wait, in the same
// statement). The cluster-agent tells by it an application that moved away (release its
// Argo CD Application, keep the resources) from one that was deleted (delete and prune),
// and applies an Argo CD Application only once every change to its tenant's AppProject
// begun before has let go of the lock. No row, no wait.
func (s *Store) LocateApplicationOnceTenantFree(ctx context.Context, idb bun.IDB, id string) (*Application, error) {
	app := new(Application)
	var p prepared
	q := idb.NewSelect().Model(app).
		Join(", LATERAL (SELECT pg_advisory_xact_lock(?, hashtext(app.tenant_id::text))) AS waited", p.arg(tenantLockClass)).
		Where("app.id = ?", p.arg(id))
	if err := p.scan(ctx, idb, q, app); err != nil {
		return nil, fmt.Errorf("application %s: %w", id, translate(err))
	}
	return app, nil
}
