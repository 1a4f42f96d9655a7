package db

import (
	"context"

	"github.com/uptrace/bun"
)

// The queries of the periodic sweeps: they walk whole tables (not one tenant's rows) in
// primary-key order, one batch at a time (keyset pagination: the batch after the last key
// seen), so that a sweep never holds many rows or long-running queries.

// ListDeploymentMappingsAfter returns up to limit deployment mappings, of every tenant,
// whose GitOpsDeployment UID sorts after afterUID ("" for the first batch).
func (s *Store) ListDeploymentMappingsAfter(ctx context.Context, idb bun.IDB, afterUID string, limit int) ([]DeploymentMapping, error) {
	var ms []DeploymentMapping
	q := idb.NewSelect().Model(&ms).Order("dam.deployment_uid").Limit(int64(limit))
	if afterUID != "" {
		q = q.Where("dam.deployment_uid > ?", afterUID)
	}
	return ms, translate(q.Scan(ctx))
}

// ListAPICRMappingsAfter returns up to limit API CR mappings, of every tenant and kind,
// whose (kind, UID) sorts after (afterKind, afterUID) (both "" for the first batch).
func (s *Store) ListAPICRMappingsAfter(ctx context.Context, idb bun.IDB, afterKind APIResourceType, afterUID string, limit int) ([]APICRMapping, error) {
	var ms []APICRMapping
	q := idb.NewSelect().Model(&ms).Order("acm.api_resource_type", "acm.api_resource_uid").Limit(int64(limit))
	if afterKind != "" || afterUID != "" {
		q = q.Where("(acm.api_resource_type, acm.api_resource_uid) > (?, ?)", afterKind, afterUID)
	}
	return ms, translate(q.Scan(ctx))
}

// ListTenantsAfter returns up to limit tenants whose id sorts after afterID ("" for the
// first batch).
func (s *Store) ListTenantsAfter(ctx context.Context, idb bun.IDB, afterID string, limit int) ([]Tenant, error) {
	var ts []Tenant
	q := idb.NewSelect().Model(&ts).Order("tenant.id").Limit(int64(limit))
	if afterID != "" {
		q = q.Where("tenant.id > ?", afterID)
	}
	return ts, translate(q.Scan(ctx))
}

// TenantResource is a row of a tenant from which a cluster-agent made an Argo CD object,
// and the engine instance that holds the object (empty: the tenant's own instance).
type TenantResource struct {
	ResourceType     OperationResourceType `bun:"resource_type"`
	ID               string                `bun:"id"`
	EngineInstanceID string                `bun:"engine_instance_id"`
}

// ListTenantResources returns the tenant's applications, managed environments and
// repository credentials: what must be signalled for deletion before DeleteTenant removes
// the rows (in the same transaction).
func (s *Store) ListTenantResources(ctx context.Context, idb bun.IDB, tenantID string) ([]TenantResource, error) {
	var rs []TenantResource
	err := idb.NewRaw(`
SELECT ? AS resource_type, id::text AS id, engine_instance_id::text AS engine_instance_id
  FROM applications WHERE tenant_id = ?
UNION ALL
SELECT ?, id::text, moving_from_engine_instance_id::text
  FROM applications WHERE tenant_id = ? AND moving_from_engine_instance_id IS NOT NULL
UNION ALL
SELECT ?, id::text, '' FROM managed_environments WHERE tenant_id = ?
UNION ALL
SELECT ?, id::text, engine_instance_id::text FROM repository_credentials WHERE tenant_id = ?
ORDER BY 1, 2`,
		OperationResourceApplication, tenantID,
		OperationResourceApplication, tenantID,
		OperationResourceManagedEnvironment, tenantID,
		OperationResourceRepositoryCredential, tenantID).Scan(ctx, &rs)
	return rs, translate(err)
}

// ExistingApplicationIDs returns which of ids (valid UUIDs) are application rows placed on
// the engine instance.
func (s *Store) ExistingApplicationIDs(ctx context.Context, idb bun.IDB, engineInstanceID string, ids []string) (map[string]bool, error) {
	return existingIDs(ctx, idb.NewSelect().Table("applications").Column("id").
		Where("engine_instance_id = ?", engineInstanceID), "id", ids)
}

// ExistingManagedEnvironmentIDs returns which of ids (valid UUIDs) are managed
// environments. (Their cluster Secrets follow the tenant's placement, which a sweep does not
// second-guess: engineInstanceID is not used.)
func (s *Store) ExistingManagedEnvironmentIDs(ctx context.Context, idb bun.IDB, _ string, ids []string) (map[string]bool, error) {
	return existingIDs(ctx, idb.NewSelect().Table("managed_environments").Column("id"), "id", ids)
}

// ExistingRepositoryCredentialIDs returns which of ids (valid UUIDs) are repository
// credentials served by the engine instance.
func (s *Store) ExistingRepositoryCredentialIDs(ctx context.Context, idb bun.IDB, engineInstanceID string, ids []string) (map[string]bool, error) {
	return existingIDs(ctx, idb.NewSelect().Table("repository_credentials").Column("id").
		Where("engine_instance_id = ?", engineInstanceID), "id", ids)
}

// ExistingTenantIDs returns which of ids (valid UUIDs) are tenants (engineInstanceID is not
// used, as for managed environments).
func (s *Store) ExistingTenantIDs(ctx context.Context, idb bun.IDB, _ string, ids []string) (map[string]bool, error) {
	return existingIDs(ctx, idb.NewSelect().Table("tenants").Column("id"), "id", ids)
}

// ServedTenantIDs returns which of ids (valid UUIDs) are tenants the engine instance
// serves (see TenantServedBy), in one query.
func (s *Store) ServedTenantIDs(ctx context.Context, idb bun.IDB, engineInstanceID string, ids []string) (map[string]bool, error) {
	return existingIDs(ctx, idb.NewSelect().TableExpr("tenants AS tenant").Column("id").
		WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
			return q.Where("tenant.engine_instance_id = ?", engineInstanceID).
				WhereOr("EXISTS (SELECT 1 FROM applications WHERE tenant_id = tenant.id AND moving_from_engine_instance_id = ?)", engineInstanceID)
		}), "id", ids)
}

// existingIDs runs q restricted to column IN ids and returns the ids it found.
func existingIDs(ctx context.Context, q *bun.SelectQuery, column string, ids []string) (map[string]bool, error) {
	found := map[string]bool{}
	if len(ids) == 0 {
		return found, nil
	}
	var rows []string
	if err := q.Where("? IN (?)", bun.Ident(column), bun.List(ids)).Scan(ctx, &rows); err != nil {
		return nil, translate(err)
	}
	for _, id := range rows {
		found[id] = true
	}
	return found, nil
}

// InstanceResource is a row from which a cluster-agent makes an Argo CD object on its engine
// instance: an application (with the managed environment it deploys to, if any) or a
// repository credential.
type InstanceResource struct {
	ID       string `bun:"id"`
	TenantID string `bun:"tenant_id"`
	// Name and ManagedEnvironmentID: an application's Argo CD name and target (empty
	// in-cluster).
	Name                 string `bun:"name"`
	ManagedEnvironmentID string `bun:"managed_environment_id"`
}

// ListInstanceApplicationsAfter returns up to limit applications placed on the engine
// instance whose id sorts after afterID ("" for the first batch).
func (s *Store) ListInstanceApplicationsAfter(ctx context.Context, idb bun.IDB, engineInstanceID, afterID string, limit int) ([]InstanceResource, error) {
	return listInstanceResourcesAfter(ctx, idb.NewSelect().Table("applications").
		Column("id", "tenant_id", "name").ColumnExpr("coalesce(managed_environment_id::text, '') AS managed_environment_id"),
		engineInstanceID, afterID, limit)
}

// ListInstanceRepositoryCredentialsAfter returns up to limit repository credentials served
// by the engine instance whose id sorts after afterID ("" for the first batch).
func (s *Store) ListInstanceRepositoryCredentialsAfter(ctx context.Context, idb bun.IDB, engineInstanceID, afterID string, limit int) ([]InstanceResource, error) {
	return listInstanceResourcesAfter(ctx, idb.NewSelect().Table("repository_credentials").Column("id", "tenant_id"),
		engineInstanceID, afterID, limit)
}

func listInstanceResourcesAfter(ctx context.Context, q *bun.SelectQuery, engineInstanceID, afterID string, limit int) ([]InstanceResource, error) {
	q = q.Where("engine_instance_id = ?", engineInstanceID).Order("id").Limit(int64(limit))
	if afterID != "" {
		q = q.Where("id > ?", afterID)
	}
	var rs []InstanceResource
	return rs, translate(q.Scan(ctx, &rs))
}
