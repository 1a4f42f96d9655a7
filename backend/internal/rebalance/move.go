// Package rebalance moves tenants between GitOps engine instances: Mover moves one tenant,
// and Rebalancer, a controller of one item on the leader, moves tenants off draining instances and
// evens out loads, a few at a time.
//
// A move never deploys anything twice nor drops it. In one transaction the tenant's rows
// point at the new instance (its applications remember the old one), and both instances
// get Operations: the new one creates the tenant's AppProjects, cluster and repository
// Secrets and Argo CD Applications, whose Argo CD takes over the resources already
// deployed (same Application names, so the same tracking); the old one lets each
// Application go only once the new instance has adopted it, removing Argo CD's finalizers
// first so that nothing is pruned, then removes the tenant's AppProjects, and its cluster
// and repository Secrets once no AppProject is left.
package rebalance

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend/internal/opsignal"
)

// Store is the part of the database the package uses.
type Store interface {
	MoveTenant(ctx context.Context, idb bun.IDB, tenantID, to string) (*db.TenantMove, error)
	ListTenants(ctx context.Context, idb bun.IDB) ([]db.Tenant, error)
	ListEngineInstances(ctx context.Context, idb bun.IDB) ([]db.EngineInstance, error)
	MovingTenantIDs(ctx context.Context, idb bun.IDB) (map[string]bool, error)
}

// Mover moves tenants.
type Mover struct {
	DB     bun.IDB
	Store  Store
	Signal *opsignal.Signaller
}

// Move places a tenant on engine instance to and signals both instances (see the package
// comment). It returns nil when the tenant is already there, db.ErrMoveInProgress while
// its previous move is not finished.
func (m *Mover) Move(ctx context.Context, tenantID, to string) (*db.TenantMove, error) {
	var move *db.TenantMove
	var ops []*db.Operation
	err := m.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		ops = nil
		var err error
		if move, err = m.Store.MoveTenant(ctx, tx, tenantID, to); err != nil || move == nil {
			return err
		}
		signalOn := func(engine string, resourceType db.OperationResourceType, ids ...string) error {
			for _, id := range ids {
				op, err := m.Signal.Row(ctx, tx, &db.EngineInstance{ID: engine}, tenantID, resourceType, id)
				if err != nil {
					return err
				}
				ops = append(ops, op)
			}
			return nil
		}
		// The new instance: projects and Secrets first (the Applications need them; the
		// agent works on them concurrently, and Argo CD retries until they exist).
		if err := signalOn(to, db.OperationResourceAppProject, tenantID); err != nil {
			return err
		}
		if err := signalOn(to, db.OperationResourceManagedEnvironment, move.ManagedEnvironmentIDs...); err != nil {
			return err
		}
		if err := signalOn(to, db.OperationResourceRepositoryCredential, move.RepositoryCredentialIDs...); err != nil {
			return err
		}
		if err := signalOn(to, db.OperationResourceApplication, move.ApplicationIDs...); err != nil {
			return err
		}
		if move.From == "" {
			return nil // never placed: nothing to let go
		}
		// The old instance: each Application waits there for the new one to adopt it; the
		// AppProject operation removes the tenant's projects once no Application is left
		// (at once for a tenant without applications), and the credential operations its
		// Secrets, the cluster Secrets once the projects are gone.
		if err := signalOn(move.From, db.OperationResourceApplication, move.ApplicationIDs...); err != nil {
			return err
		}
		if err := signalOn(move.From, db.OperationResourceAppProject, tenantID); err != nil {
			return err
		}
		if err := signalOn(move.From, db.OperationResourceManagedEnvironment, move.ManagedEnvironmentIDs...); err != nil {
			return err
		}
		return signalOn(move.From, db.OperationResourceRepositoryCredential, move.RepositoryCredentialIDs...)
	})
	if err != nil {
		return nil, fmt.Errorf("moving tenant %s to engine instance %s: %w", tenantID, to, err)
	}
	return move, m.Signal.CRs(ctx, ops...)
}
