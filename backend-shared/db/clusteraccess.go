package db

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// ClusterAccess says that a tenant may deploy to a managed environment through an engine
// instance.
type ClusterAccess struct {
	bun.BaseModel `bun:"table:cluster_access,alias:caccess"`

	TenantID             string    `bun:"tenant_id,pk,type:uuid"`
	ManagedEnvironmentID string    `bun:"managed_environment_id,pk,type:uuid"`
	EngineInstanceID     string    `bun:"engine_instance_id,pk,type:uuid"`
	CreatedAt            time.Time `bun:"created_at,nullzero,notnull,default:current_timestamp"`
}

// GetOrCreateClusterAccess records a (tenant, environment, instance) access once and
// reports whether it was new; safe to call concurrently. ErrInvalidReference if the
// environment is not the tenant's.
func (s *Store) GetOrCreateClusterAccess(ctx context.Context, idb bun.IDB, ca *ClusterAccess) (created bool, err error) {
	res, err := idb.NewInsert().Model(ca).
		On("CONFLICT (tenant_id, managed_environment_id, engine_instance_id) DO NOTHING").
		Returning("created_at").
		Exec(ctx)
	if err != nil {
		return false, translate(err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// GetClusterAccess returns the tenant's access to an environment through an instance.
func (s *Store) GetClusterAccess(ctx context.Context, idb bun.IDB, tenantID, managedEnvironmentID, engineInstanceID string) (*ClusterAccess, error) {
	ca := new(ClusterAccess)
	err := idb.NewSelect().Model(ca).
		Where("caccess.tenant_id = ? AND caccess.managed_environment_id = ? AND caccess.engine_instance_id = ?",
			tenantID, managedEnvironmentID, engineInstanceID).
		Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("cluster access to managed environment %s: %w", managedEnvironmentID, translate(err))
	}
	return ca, nil
}

// ListClusterAccess returns the tenant's cluster access rows.
func (s *Store) ListClusterAccess(ctx context.Context, idb bun.IDB, tenantID string) ([]ClusterAccess, error) {
	var cas []ClusterAccess
	err := idb.NewSelect().Model(&cas).Where("caccess.tenant_id = ?", tenantID).
		Order("caccess.managed_environment_id", "caccess.engine_instance_id").Scan(ctx)
	return cas, translate(err)
}

// DeleteClusterAccess deletes the tenant's access to an environment through an instance.
func (s *Store) DeleteClusterAccess(ctx context.Context, idb bun.IDB, tenantID, managedEnvironmentID, engineInstanceID string) error {
	res, err := idb.NewDelete().Model((*ClusterAccess)(nil)).
		Where("tenant_id = ? AND managed_environment_id = ? AND engine_instance_id = ?", tenantID, managedEnvironmentID, engineInstanceID).
		Exec(ctx)
	if err != nil {
		return translateDelete(err)
	}
	return notFoundIfNone(res, "cluster access to managed environment "+managedEnvironmentID)
}
