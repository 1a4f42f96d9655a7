package db

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"
)

// CountTenantsByEngineInstance returns how many tenants are placed on each engine instance,
// by instance id (instances without tenants are absent): the loads that placement bounds.
// One GROUP BY over the tenants_engine_instance_id_idx index.
func (s *Store) CountTenantsByEngineInstance(ctx context.Context, idb bun.IDB) (map[string]int, error) {
	var rows []struct {
		EngineInstanceID string `bun:"engine_instance_id"`
		Tenants          int    `bun:"tenants"`
	}
	err := idb.NewSelect().Model((*Tenant)(nil)).
		ColumnExpr("tenant.engine_instance_id").
		ColumnExpr("count(*) AS tenants").
		Where("tenant.engine_instance_id IS NOT NULL").
		Group("tenant.engine_instance_id").
		Scan(ctx, &rows)
	if err != nil {
		return nil, translate(err)
	}
	loads := make(map[string]int, len(rows))
	for _, r := range rows {
		loads[r.EngineInstanceID] = r.Tenants
	}
	return loads, nil
}

// PlaceTenant records engineInstanceID as the placement of a tenant that has none, and
// returns the tenant's placement: engineInstanceID, or the instance a concurrent caller
// placed it on first (the first placement wins, so racing reconciles agree).
// ErrInvalidReference if the instance does not exist, ErrNotFound if the tenant does not.
func (s *Store) PlaceTenant(ctx context.Context, idb bun.IDB, tenantID, engineInstanceID string) (string, error) {
	res, err := idb.NewUpdate().Model((*Tenant)(nil)).
		Set("engine_instance_id = ?", engineInstanceID).
		Set("updated_at = now()").
		Where("id = ?", tenantID).
		Where("engine_instance_id IS NULL").
		Exec(ctx)
	if err != nil {
		return "", translate(err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return engineInstanceID, nil
	}
	t, err := s.GetTenant(ctx, idb, tenantID)
	if err != nil {
		return "", err
	}
	if t.EngineInstanceID == "" {
		// Un-placed again between the two statements: rare enough to leave to a retry.
		return "", fmt.Errorf("placing tenant %s: %w", tenantID, ErrConflict)
	}
	return t.EngineInstanceID, nil
}

// DeregisterEngineInstance deletes an engine instance that has no tenants. It locks the
// instance row first, so a placement on it cannot commit between the check and the delete
// (the placement's foreign key check waits for the lock and then fails). An instance with
// tenants gives an error that is ErrReferenced; ErrReferenced too while applications or
// repository credentials still use it.
func (s *Store) DeregisterEngineInstance(ctx context.Context, idb bun.IDB, id string) error {
	return idb.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		ei := new(EngineInstance)
		if err := tx.NewSelect().Model(ei).Where("einstance.id = ?", id).For("UPDATE").Scan(ctx); err != nil {
			return fmt.Errorf("engine instance %s: %w", id, translate(err))
		}
		n, err := tx.NewSelect().Model((*Tenant)(nil)).Where("tenant.engine_instance_id = ?", id).Count(ctx)
		if err != nil {
			return translate(err)
		}
		if n > 0 {
			return &TenantsPlacedError{EngineInstanceID: id, Tenants: int(n)}
		}
		return s.DeleteEngineInstance(ctx, tx, id)
	})
}

// TenantsPlacedError refuses to deregister an engine instance that tenants are placed on.
// errors.Is(err, ErrReferenced) is true.
type TenantsPlacedError struct {
	EngineInstanceID string
	Tenants          int
}

func (e *TenantsPlacedError) Error() string {
	return fmt.Sprintf("engine instance %s still has %d tenants placed on it", e.EngineInstanceID, e.Tenants)
}

// Is makes errors.Is(err, ErrReferenced) true.
func (e *TenantsPlacedError) Is(target error) bool { return target == ErrReferenced }
