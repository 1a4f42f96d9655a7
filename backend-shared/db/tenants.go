package db

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// Tenant is one tenant namespace, identified by the namespace UID.
type Tenant struct {
	bun.BaseModel `bun:"table:tenants,alias:tenant"`

	ID            string `bun:"id,pk,nullzero,type:uuid,default:gen_random_uuid()"`
	NamespaceUID  string `bun:"namespace_uid,notnull"`
	NamespaceName string `bun:"namespace_name,notnull"`
	// EngineInstanceID is the tenant's placement; empty when not placed.
	EngineInstanceID string    `bun:"engine_instance_id,nullzero,type:uuid"`
	CreatedAt        time.Time `bun:"created_at,nullzero,notnull,default:current_timestamp"`
	UpdatedAt        time.Time `bun:"updated_at,nullzero,notnull,default:current_timestamp"`
}

// GetOrCreateTenant returns the tenant of a namespace, creating it on first sight; it is
// safe to call concurrently (ON CONFLICT on the namespace UID). A renamed namespace name is
// recorded, but only written when it differs, so the common call is a read.
func (s *Store) GetOrCreateTenant(ctx context.Context, idb bun.IDB, namespaceUID, namespaceName string) (*Tenant, error) {
	// The common case is one read. FOR KEY SHARE keeps a concurrent MoveTenant (FOR UPDATE)
	// from changing the placement while the caller's transaction writes rows under it,
	// without serialising the tenant's own reconciles, and without blocking their
	// placement (an UPDATE of the row takes only FOR NO KEY UPDATE, which does not
	// conflict, so two reconciles placing the same tenant cannot deadlock).
	existing := new(Tenant)
	var p prepared
	err := p.scan(ctx, idb, idb.NewSelect().Model(existing).Where("tenant.namespace_uid = ?", p.arg(namespaceUID)).For("KEY SHARE"), existing)
	switch {
	case err == nil && existing.NamespaceName == namespaceName:
		return existing, nil
	case err != nil && !errors.Is(translate(err), ErrNotFound):
		return nil, fmt.Errorf("tenant of namespace %s: %w", namespaceUID, translate(err))
	}
	t := &Tenant{NamespaceUID: namespaceUID, NamespaceName: namespaceName}
	res, err := idb.NewInsert().Model(t).
		Column("namespace_uid", "namespace_name").
		On("CONFLICT (namespace_uid) DO UPDATE").
		Set("namespace_name = EXCLUDED.namespace_name, updated_at = now()").
		Where("tenant.namespace_name IS DISTINCT FROM EXCLUDED.namespace_name").
		Returning("*").
		Exec(ctx)
	if err != nil {
		return nil, translate(err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return t, nil
	}
	// The row exists with the same name: the conflicting insert saw it committed.
	return s.GetTenantByNamespaceUID(ctx, idb, namespaceUID)
}

// GetTenant returns a tenant by id.
func (s *Store) GetTenant(ctx context.Context, idb bun.IDB, id string) (*Tenant, error) {
	t := new(Tenant)
	if err := idb.NewSelect().Model(t).Where("tenant.id = ?", id).Scan(ctx); err != nil {
		return nil, fmt.Errorf("tenant %s: %w", id, translate(err))
	}
	return t, nil
}

// GetTenantByNamespaceUID returns the tenant of a namespace.
func (s *Store) GetTenantByNamespaceUID(ctx context.Context, idb bun.IDB, namespaceUID string) (*Tenant, error) {
	t := new(Tenant)
	var p prepared
	if err := p.scan(ctx, idb, idb.NewSelect().Model(t).Where("tenant.namespace_uid = ?", p.arg(namespaceUID)), t); err != nil {
		return nil, fmt.Errorf("tenant of namespace %s: %w", namespaceUID, translate(err))
	}
	return t, nil
}

// ListTenantsByEngineInstance returns the tenants placed on an engine instance.
func (s *Store) ListTenantsByEngineInstance(ctx context.Context, idb bun.IDB, engineInstanceID string) ([]Tenant, error) {
	var ts []Tenant
	err := idb.NewSelect().Model(&ts).Where("tenant.engine_instance_id = ?", engineInstanceID).Order("tenant.id").Scan(ctx)
	return ts, translate(err)
}

// SetTenantEngineInstance records a tenant's placement; an empty engineInstanceID
// un-places it.
func (s *Store) SetTenantEngineInstance(ctx context.Context, idb bun.IDB, tenantID, engineInstanceID string) error {
	var instance any = engineInstanceID
	if engineInstanceID == "" {
		instance = nil
	}
	res, err := idb.NewUpdate().Model((*Tenant)(nil)).
		Set("engine_instance_id = ?", instance).
		Set("updated_at = now()").
		Where("id = ?", tenantID).
		Exec(ctx)
	if err != nil {
		return translate(err)
	}
	return notFoundIfNone(res, "tenant "+tenantID)
}

// DeleteTenant deletes a tenant and, by cascade, every row it owns. Create the operations
// that remove its Argo CD objects in the same transaction.
func (s *Store) DeleteTenant(ctx context.Context, idb bun.IDB, id string) error {
	res, err := idb.NewDelete().Model((*Tenant)(nil)).Where("id = ?", id).Exec(ctx)
	if err != nil {
		return translateDelete(err)
	}
	return notFoundIfNone(res, "tenant "+id)
}
