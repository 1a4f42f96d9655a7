// Package crcleanup removes what is left of deleted API CRs (ManagedEnvironments,
// RepositoryCredentials): their rows, found by name through the api_cr_mappings, and, through
// an Operation each, the Argo CD objects the cluster-agent made from them.
package crcleanup

import (
	"context"
	"errors"

	"github.com/uptrace/bun"

	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend/internal/opsignal"
	"github.com/gitops-service/gitops-service/backend/internal/tenancy"
)

// Store is the part of the database the remover uses.
type Store interface {
	ListAPICRMappingsByName(ctx context.Context, idb bun.IDB, tenantID string, kind db.APIResourceType, name string) ([]db.APICRMapping, error)
}

// Remover removes the rows of gone CRs of one kind.
type Remover struct {
	DB      *bun.DB
	Store   Store
	Tenancy *tenancy.Resolver
	Signal  *opsignal.Signaller
	// Kind of the CRs, and the resource type of the Operations that delete their objects.
	Kind         db.APIResourceType
	ResourceType db.OperationResourceType
	// DeleteRow deletes a CR's row; its mapping goes with it (ON DELETE CASCADE).
	DeleteRow func(ctx context.Context, idb bun.IDB, tenantID, id string) error
}

// Remove deletes, in one transaction, the rows of every CR called name in namespace except
// the one with keepUID (empty: all), with an Operation each, then signals the cluster-agent.
func (r *Remover) Remove(ctx context.Context, namespace, name, keepUID string) error {
	tenant, err := r.Tenancy.ExistingTenant(ctx, r.DB, namespace)
	if errors.Is(err, db.ErrNotFound) {
		return nil // no tenant, no rows
	}
	if err != nil {
		return err
	}
	var ops []*db.Operation
	err = r.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		mappings, err := r.Store.ListAPICRMappingsByName(ctx, tx, tenant.ID, r.Kind, name)
		if err != nil {
			return err
		}
		for _, m := range mappings {
			if m.APIResourceUID == keepUID {
				continue
			}
			if err := r.DeleteRow(ctx, tx, tenant.ID, m.TargetID()); err != nil && !errors.Is(err, db.ErrNotFound) {
				return err
			}
			if tenant.EngineInstanceID == "" {
				continue // never placed, so nothing was made in Argo CD
			}
			op, err := r.Signal.Row(ctx, tx, &db.EngineInstance{ID: tenant.EngineInstanceID}, tenant.ID, r.ResourceType, m.TargetID())
			if err != nil {
				return err
			}
			ops = append(ops, op)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return r.Signal.CRs(ctx, ops...)
}
