package db

import (
	"context"

	"github.com/uptrace/bun"
)

// AppProject contents: the per-tenant Argo CD AppProject app-project-<tenant id> allows
// exactly these source repositories and destinations.

// AppProjectRepository is a source repository of a tenant's AppProject.
type AppProjectRepository struct {
	bun.BaseModel `bun:"table:appproject_repositories,alias:aprepo"`

	TenantID      string `bun:"tenant_id,pk,type:uuid"`
	RepositoryURL string `bun:"repository_url,pk"`
}

// AppProjectDestination is a destination (managed environment) of a tenant's AppProject.
type AppProjectDestination struct {
	bun.BaseModel `bun:"table:appproject_destinations,alias:apdest"`

	TenantID             string `bun:"tenant_id,pk,type:uuid"`
	ManagedEnvironmentID string `bun:"managed_environment_id,pk,type:uuid"`
}

// AddAppProjectRepository adds a source repository to the tenant's AppProject and reports
// whether it was new (so the caller creates an AppProject Operation only then).
func (s *Store) AddAppProjectRepository(ctx context.Context, idb bun.IDB, tenantID, repositoryURL string) (added bool, err error) {
	var p prepared
	res, err := p.exec(ctx, idb, p.values(idb.NewInsert().Model(&AppProjectRepository{TenantID: tenantID, RepositoryURL: repositoryURL}),
		"tenant_id", "repository_url").On("CONFLICT DO NOTHING").Returning("NULL"))
	if err != nil {
		return false, translate(err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// ListAppProjectRepositories returns the source repositories of the tenant's AppProject.
func (s *Store) ListAppProjectRepositories(ctx context.Context, idb bun.IDB, tenantID string) ([]string, error) {
	var urls []string
	err := idb.NewSelect().Model((*AppProjectRepository)(nil)).Column("repository_url").
		Where("tenant_id = ?", tenantID).Order("repository_url").Scan(ctx, &urls)
	return urls, translate(err)
}

// AddAppProjectDestination adds one of the tenant's managed environments to its
// AppProject and reports whether it was new. ErrInvalidReference if the environment is
// not the tenant's.
func (s *Store) AddAppProjectDestination(ctx context.Context, idb bun.IDB, tenantID, managedEnvironmentID string) (added bool, err error) {
	res, err := idb.NewInsert().Model(&AppProjectDestination{TenantID: tenantID, ManagedEnvironmentID: managedEnvironmentID}).
		On("CONFLICT DO NOTHING").Exec(ctx)
	if err != nil {
		return false, translate(err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// RemoveAppProjectDestination removes a destination from the tenant's AppProject and
// reports whether it was there.
func (s *Store) RemoveAppProjectDestination(ctx context.Context, idb bun.IDB, tenantID, managedEnvironmentID string) (removed bool, err error) {
	res, err := idb.NewDelete().Model((*AppProjectDestination)(nil)).
		Where("tenant_id = ? AND managed_environment_id = ?", tenantID, managedEnvironmentID).Exec(ctx)
	if err != nil {
		return false, translateDelete(err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// ListAppProjectDestinations returns the managed environment ids of the tenant's AppProject.
func (s *Store) ListAppProjectDestinations(ctx context.Context, idb bun.IDB, tenantID string) ([]string, error) {
	var ids []string
	err := idb.NewSelect().Model((*AppProjectDestination)(nil)).Column("managed_environment_id").
		Where("tenant_id = ?", tenantID).Order("managed_environment_id").Scan(ctx, &ids)
	return ids, translate(err)
}
