package db

import (
	"context"
	"errors"
	"fmt"

	"github.com/uptrace/bun"
)

// ErrMoveInProgress: a tenant cannot move again while applications of its last move are
// still held by the instance they are moving from.
var ErrMoveInProgress = errors.New("the tenant is still moving: its previous engine instance has not let all its applications go yet")

// TenantMove is what MoveTenant changed: the ids of the tenant's rows whose Argo CD
// objects must now be created on To, and removed from From.
type TenantMove struct {
	TenantID                string
	From, To                string
	ApplicationIDs          []string
	ManagedEnvironmentIDs   []string
	RepositoryCredentialIDs []string
}

// MoveTenant places a tenant on another engine instance, in the caller's transaction,
// together with everything that follows the placement: its applications (which remember
// the instance they move from), its repository credentials, and, implicitly, its managed
// environments' cluster Secrets and AppProjects. The caller signals both instances.
// It locks the tenant's row, so reconciles that write the tenant's applications (which
// lock it too, see GetOrCreateTenant) run before or after the move, never across it.
// Returns nil when the tenant is already on to; ErrMoveInProgress while an earlier move
// is not finished.
func (s *Store) MoveTenant(ctx context.Context, idb bun.IDB, tenantID, to string) (*TenantMove, error) {
	tenant := new(Tenant)
	if err := idb.NewSelect().Model(tenant).Where("tenant.id = ?", tenantID).For("UPDATE").Scan(ctx); err != nil {
		return nil, fmt.Errorf("tenant %s: %w", tenantID, translate(err))
	}
	if tenant.EngineInstanceID == to {
		return nil, nil
	}
	moving, err := idb.NewSelect().Model((*Application)(nil)).
		Where("tenant_id = ? AND moving_from_engine_instance_id IS NOT NULL", tenantID).Exists(ctx)
	if err != nil {
		return nil, translate(err)
	}
	if moving {
		return nil, fmt.Errorf("tenant %s: %w", tenantID, ErrMoveInProgress)
	}
	if err := s.SetTenantEngineInstance(ctx, idb, tenantID, to); err != nil {
		return nil, err
	}
	move := &TenantMove{TenantID: tenantID, From: tenant.EngineInstanceID, To: to}
	// Applications not on the tenant's instance (none, normally) move too, each from where
	// it is.
	err = idb.NewUpdate().Model((*Application)(nil)).
		Set("moving_from_engine_instance_id = engine_instance_id").
		Set("engine_instance_id = ?", to).
		Set("updated_at = now()").
		Where("tenant_id = ? AND engine_instance_id <> ?", tenantID, to).
		Returning("id").
		Scan(ctx, &move.ApplicationIDs)
	if err != nil {
		return nil, translate(err)
	}
	err = idb.NewUpdate().Model((*repositoryCredentialRow)(nil)).
		Set("engine_instance_id = ?", to).
		Set("updated_at = now()").
		Where("tenant_id = ?", tenantID).
		Returning("id").
		Scan(ctx, &move.RepositoryCredentialIDs)
	if err != nil {
		return nil, translate(err)
	}
	err = idb.NewSelect().Model((*ManagedEnvironment)(nil)).Column("id").
		Where("tenant_id = ?", tenantID).Order("id").Scan(ctx, &move.ManagedEnvironmentIDs)
	return move, translate(err)
}

// ApplicationAdopted says whether the instance an application is on has adopted it: its
// cluster-agent recorded a state in which Argo CD compared the Application.
func (s *Store) ApplicationAdopted(ctx context.Context, idb bun.IDB, id string) (bool, error) {
	adopted, err := idb.NewSelect().TableExpr("applications AS app").
		Join("JOIN application_states AS appstate ON appstate.application_id = app.id").
		Where("app.id = ?", id).
		Where("appstate.engine_instance_id = app.engine_instance_id").
		Where("appstate.reconciled_state IS NOT NULL").
		Exists(ctx)
	return adopted, translate(err)
}

// FinishApplicationMove records that the instance from let the application go.
func (s *Store) FinishApplicationMove(ctx context.Context, idb bun.IDB, id, from string) error {
	_, err := idb.NewUpdate().Model((*Application)(nil)).
		Set("moving_from_engine_instance_id = NULL").
		Set("updated_at = now()").
		Where("id = ? AND moving_from_engine_instance_id = ?", id, from).
		Exec(ctx)
	return translate(err)
}

// TenantServedBy says whether an engine instance must hold the tenant's AppProjects and
// Secrets: the tenant is placed on it, or applications of the tenant are still moving
// away from it.
func (s *Store) TenantServedBy(ctx context.Context, idb bun.IDB, tenantID, engineInstanceID string) (bool, error) {
	served, err := s.ServedTenantIDs(ctx, idb, engineInstanceID, []string{tenantID})
	return served[tenantID], err
}

// ListTenants returns every tenant (the rebalancer's input), by id.
func (s *Store) ListTenants(ctx context.Context, idb bun.IDB) ([]Tenant, error) {
	var ts []Tenant
	err := idb.NewSelect().Model(&ts).Order("tenant.id").Scan(ctx)
	return ts, translate(err)
}

// MovingTenantIDs returns the tenants with a move in progress.
func (s *Store) MovingTenantIDs(ctx context.Context, idb bun.IDB) (map[string]bool, error) {
	var ids []string
	err := idb.NewSelect().Model((*Application)(nil)).ColumnExpr("DISTINCT tenant_id").
		Where("moving_from_engine_instance_id IS NOT NULL").Scan(ctx, &ids)
	out := make(map[string]bool, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	return out, translate(err)
}
