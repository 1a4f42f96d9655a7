package db

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// ManagedEnvironment is a tenant's target cluster (GitOpsDeploymentManagedEnvironment);
// its Argo CD cluster Secret is managed-env-<ID>.
type ManagedEnvironment struct {
	bun.BaseModel `bun:"table:managed_environments,alias:menv"`

	ID                   string    `bun:"id,pk,nullzero,type:uuid,default:gen_random_uuid()"`
	TenantID             string    `bun:"tenant_id,notnull,type:uuid"`
	Name                 string    `bun:"name,notnull"`
	ClusterCredentialsID string    `bun:"cluster_credentials_id,notnull,type:uuid"`
	CreatedAt            time.Time `bun:"created_at,nullzero,notnull,default:current_timestamp"`
	UpdatedAt            time.Time `bun:"updated_at,nullzero,notnull,default:current_timestamp"`
}

// CreateManagedEnvironment inserts creds (encrypted) and env, for tenant env.TenantID, as
// one unit (a savepoint inside a transaction), and fills in their ids.
func (s *Store) CreateManagedEnvironment(ctx context.Context, idb bun.IDB, env *ManagedEnvironment, creds *ClusterCredentials) error {
	return idb.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if err := s.CreateClusterCredentials(ctx, tx, creds); err != nil {
			return err
		}
		env.ClusterCredentialsID = creds.ID
		_, err := tx.NewInsert().Model(env).ExcludeColumn("id", "created_at", "updated_at").Returning("*").Exec(ctx)
		return translate(err)
	})
}

// GetManagedEnvironmentCredentials returns the decrypted credentials of one of the
// tenant's managed environments.
func (s *Store) GetManagedEnvironmentCredentials(ctx context.Context, idb bun.IDB, tenantID, envID string) (*ClusterCredentials, error) {
	row := new(clusterCredentialsRow)
	err := idb.NewSelect().Model(row).
		Join("JOIN managed_environments AS menv ON menv.cluster_credentials_id = ccred.id").
		Where("menv.tenant_id = ? AND menv.id = ?", tenantID, envID).
		Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("credentials of managed environment %s: %w", envID, translate(err))
	}
	c := new(ClusterCredentials)
	return c, s.openClusterCredentials(row, c)
}

// UpdateManagedEnvironment renames one of tenant env.TenantID's environments and, when
// creds is not nil, replaces its credentials in place (creds.ID is taken from the row).
func (s *Store) UpdateManagedEnvironment(ctx context.Context, idb bun.IDB, env *ManagedEnvironment, creds *ClusterCredentials) error {
	return idb.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		res, err := tx.NewUpdate().Model(env).
			Set("name = ?", env.Name).
			Set("updated_at = now()").
			Where("menv.tenant_id = ? AND menv.id = ?", env.TenantID, env.ID).
			Returning("*").
			Exec(ctx)
		if err != nil {
			return translate(err)
		}
		if err := notFoundIfNone(res, "managed environment "+env.ID); err != nil {
			return err
		}
		if creds == nil {
			return nil
		}
		creds.ID = env.ClusterCredentialsID
		return s.updateClusterCredentials(ctx, tx, creds, tx.NewSelect().
			Model((*ManagedEnvironment)(nil)).Column("cluster_credentials_id").
			Where("tenant_id = ? AND id = ?", env.TenantID, env.ID))
	})
}

// DeleteManagedEnvironment deletes one of the tenant's environments and its credentials.
// Applications that targeted it keep existing without a target; its cluster access,
// AppProject destination and API CR mapping are deleted.
func (s *Store) DeleteManagedEnvironment(ctx context.Context, idb bun.IDB, tenantID, id string) error {
	res, err := idb.NewDelete().Model((*ManagedEnvironment)(nil)).Where("tenant_id = ? AND id = ?", tenantID, id).Exec(ctx)
	if err != nil {
		return translateDelete(err)
	}
	return notFoundIfNone(res, "managed environment "+id)
}
