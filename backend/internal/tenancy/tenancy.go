// Package tenancy resolves the tenant of a namespace (identified by the namespace UID, so a
// re-created namespace is a new tenant) and the GitOps engine instance it is placed on.
package tenancy

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend/internal/placement"
)

// Store is the part of the database tenancy uses.
type Store interface {
	GetOrCreateTenant(ctx context.Context, idb bun.IDB, namespaceUID, namespaceName string) (*db.Tenant, error)
	GetTenantByNamespaceUID(ctx context.Context, idb bun.IDB, namespaceUID string) (*db.Tenant, error)
	PlaceTenant(ctx context.Context, idb bun.IDB, tenantID, engineInstanceID string) (string, error)
	GetEngineInstance(ctx context.Context, idb bun.IDB, id string) (*db.EngineInstance, error)
	ListEngineInstances(ctx context.Context, idb bun.IDB) ([]db.EngineInstance, error)
	CountTenantsByEngineInstance(ctx context.Context, idb bun.IDB) (map[string]int, error)
}

// Placer chooses the engine instance of a tenant that has none, given every instance and
// the number of tenants placed on each (loads, by instance id; absent means 0). It must be
// deterministic for a given tenant, set of instances and loads. Racing placements of the
// same tenant are settled by the database (the first one recorded wins), not the Placer.
//
// Placement only places NEW tenants; moving placed tenants when the weights, states or
// instances change is the rebalancer's job (placement.BoundedLoad.Plan decides the moves).
type Placer interface {
	Place(tenant *db.Tenant, instances []db.EngineInstance, loads map[string]int) (*db.EngineInstance, error)
}

// Resolver finds tenants and their placement.
type Resolver struct {
	Store Store
	// Placer places new tenants; nil means &placement.BoundedLoad{} (the default).
	Placer Placer
	// Namespaces reads Namespace objects (the manager's cache).
	Namespaces client.Reader
}

// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// Tenant returns the tenant of namespace, creating its row on first sight.
func (r *Resolver) Tenant(ctx context.Context, idb bun.IDB, namespace string) (*db.Tenant, error) {
	ns, err := r.namespace(ctx, namespace)
	if err != nil {
		return nil, err
	}
	return r.Store.GetOrCreateTenant(ctx, idb, string(ns.UID), ns.Name)
}

// ExistingTenant returns the tenant of namespace without creating one; db.ErrNotFound if
// the namespace or its tenant does not exist.
func (r *Resolver) ExistingTenant(ctx context.Context, idb bun.IDB, namespace string) (*db.Tenant, error) {
	uid, err := r.NamespaceUID(ctx, namespace)
	if err != nil {
		return nil, err
	}
	return r.Store.GetTenantByNamespaceUID(ctx, idb, uid)
}

// NamespaceUID returns the UID of namespace, which names its tenant's row; db.ErrNotFound
// if the namespace does not exist.
func (r *Resolver) NamespaceUID(ctx context.Context, namespace string) (string, error) {
	ns, err := r.namespace(ctx, namespace)
	if apierrors.IsNotFound(err) {
		return "", fmt.Errorf("namespace %s: %w", namespace, db.ErrNotFound)
	}
	if err != nil {
		return "", err
	}
	return string(ns.UID), nil
}

func (r *Resolver) namespace(ctx context.Context, namespace string) (*corev1.Namespace, error) {
	ns := &corev1.Namespace{}
	if err := r.Namespaces.Get(ctx, client.ObjectKey{Name: namespace}, ns); err != nil {
		return nil, fmt.Errorf("reading namespace %s: %w", namespace, err)
	}
	return ns, nil
}

// EngineInstance returns the tenant's engine instance, placing the tenant first if needed.
func (r *Resolver) EngineInstance(ctx context.Context, idb bun.IDB, tenant *db.Tenant) (*db.EngineInstance, error) {
	if tenant.EngineInstanceID != "" {
		return r.Store.GetEngineInstance(ctx, idb, tenant.EngineInstanceID)
	}
	instances, err := r.Store.ListEngineInstances(ctx, idb)
	if err != nil {
		return nil, err
	}
	loads, err := r.Store.CountTenantsByEngineInstance(ctx, idb)
	if err != nil {
		return nil, err
	}
	placer := r.Placer
	if placer == nil {
		placer = &placement.BoundedLoad{}
	}
	instance, err := placer.Place(tenant, instances, loads)
	if err != nil {
		return nil, err
	}
	placed, err := r.Store.PlaceTenant(ctx, idb, tenant.ID, instance.ID)
	if err != nil {
		return nil, err
	}
	tenant.EngineInstanceID = placed
	if placed != instance.ID {
		// A concurrent reconcile placed the tenant first: use its choice.
		return r.Store.GetEngineInstance(ctx, idb, placed)
	}
	return instance, nil
}
