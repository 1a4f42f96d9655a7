package db

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"
)

// Store methods that only the tests use, to read and remove rows as the schema allows: the
// service's own code reaches the same rows through the methods it needs.

// GetApplicationByDeploymentUID returns the tenant's application of a GitOpsDeployment.
func (s *Store) GetApplicationByDeploymentUID(ctx context.Context, idb bun.IDB, tenantID, deploymentUID string) (*Application, error) {
	app := new(Application)
	err := idb.NewSelect().Model(app).
		Join("JOIN deployment_application_mappings AS dam ON dam.application_id = app.id AND dam.tenant_id = app.tenant_id").
		Where("app.tenant_id = ? AND dam.deployment_uid = ?", tenantID, deploymentUID).
		Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("application of GitOpsDeployment %s: %w", deploymentUID, translate(err))
	}
	return app, nil
}

// GetApplicationByName returns an application of an engine instance by Argo CD name: how
// the cluster-agent, which sees Argo CD Applications, finds rows. Scoped by engine
// instance, the cluster-agent's unit of access.
func (s *Store) GetApplicationByName(ctx context.Context, idb bun.IDB, engineInstanceID, name string) (*Application, error) {
	app := new(Application)
	err := idb.NewSelect().Model(app).Where("app.engine_instance_id = ? AND app.name = ?", engineInstanceID, name).Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("application %s: %w", name, translate(err))
	}
	return app, nil
}

// ListApplicationsByEngineInstance returns the applications an engine instance runs (the
// cluster-agent's resync).
func (s *Store) ListApplicationsByEngineInstance(ctx context.Context, idb bun.IDB, engineInstanceID string) ([]Application, error) {
	var apps []Application
	err := idb.NewSelect().Model(&apps).Where("app.engine_instance_id = ?", engineInstanceID).Order("app.name").Scan(ctx)
	return apps, translate(err)
}

// RemoveAppProjectRepository removes a source repository from the tenant's AppProject and
// reports whether it was there.
func (s *Store) RemoveAppProjectRepository(ctx context.Context, idb bun.IDB, tenantID, repositoryURL string) (removed bool, err error) {
	res, err := idb.NewDelete().Model((*AppProjectRepository)(nil)).
		Where("tenant_id = ? AND repository_url = ?", tenantID, repositoryURL).Exec(ctx)
	if err != nil {
		return false, translateDelete(err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// DeleteApplicationState deletes the state of an engine instance's application (the
// cluster-agent, when the Argo CD Application is gone).
func (s *Store) DeleteApplicationState(ctx context.Context, idb bun.IDB, engineInstanceID, applicationID string) error {
	res, err := idb.NewDelete().Model((*ApplicationState)(nil)).
		Where("application_id = ?", applicationID).
		Where("application_id IN (SELECT id FROM applications WHERE engine_instance_id = ?)", engineInstanceID).
		Exec(ctx)
	if err != nil {
		return translateDelete(err)
	}
	return notFoundIfNone(res, "state of application "+applicationID)
}

// DeleteClusterCredentials deletes credentials by id; ErrReferenced while an environment
// or engine cluster uses them (those delete their credentials themselves).
func (s *Store) DeleteClusterCredentials(ctx context.Context, idb bun.IDB, id string) error {
	res, err := idb.NewDelete().Model((*clusterCredentialsRow)(nil)).Where("id = ?", id).Exec(ctx)
	if err != nil {
		return translateDelete(err)
	}
	return notFoundIfNone(res, "cluster credentials "+id)
}

// DeleteEngineCluster deletes an engine cluster and its credentials; ErrReferenced while
// it has engine instances.
func (s *Store) DeleteEngineCluster(ctx context.Context, idb bun.IDB, id string) error {
	res, err := idb.NewDelete().Model((*EngineCluster)(nil)).Where("id = ?", id).Exec(ctx)
	if err != nil {
		return translateDelete(err)
	}
	return notFoundIfNone(res, "engine cluster "+id)
}

// GetManagedEnvironment returns one of the tenant's managed environments.
func (s *Store) GetManagedEnvironment(ctx context.Context, idb bun.IDB, tenantID, id string) (*ManagedEnvironment, error) {
	env := new(ManagedEnvironment)
	err := idb.NewSelect().Model(env).Where("menv.tenant_id = ? AND menv.id = ?", tenantID, id).Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("managed environment %s: %w", id, translate(err))
	}
	return env, nil
}

// ListManagedEnvironments returns the tenant's managed environments.
func (s *Store) ListManagedEnvironments(ctx context.Context, idb bun.IDB, tenantID string) ([]ManagedEnvironment, error) {
	var envs []ManagedEnvironment
	err := idb.NewSelect().Model(&envs).Where("menv.tenant_id = ?", tenantID).Order("menv.name", "menv.id").Scan(ctx)
	return envs, translate(err)
}

// ListDeploymentMappings returns all of the tenant's mappings (the periodic sweep).
func (s *Store) ListDeploymentMappings(ctx context.Context, idb bun.IDB, tenantID string) ([]DeploymentMapping, error) {
	var ms []DeploymentMapping
	err := idb.NewSelect().Model(&ms).Where("dam.tenant_id = ?", tenantID).Order("dam.deployment_uid").Scan(ctx)
	return ms, translate(err)
}

// GetDeploymentMappingByApplication returns the mapping of an application. Not
// tenant-scoped: it is how the backend goes from an application_state_changed
// notification (an application id) to the tenant's GitOpsDeployment.
func (s *Store) GetDeploymentMappingByApplication(ctx context.Context, idb bun.IDB, applicationID string) (*DeploymentMapping, error) {
	m := new(DeploymentMapping)
	if err := idb.NewSelect().Model(m).Where("dam.application_id = ?", applicationID).Scan(ctx); err != nil {
		return nil, fmt.Errorf("mapping of application %s: %w", applicationID, translate(err))
	}
	return m, nil
}

// DeleteDeploymentMapping deletes the tenant's mapping of a GitOpsDeployment UID (the
// application stays; DeleteApplicationByDeploymentUID removes both).
func (s *Store) DeleteDeploymentMapping(ctx context.Context, idb bun.IDB, tenantID, deploymentUID string) error {
	res, err := idb.NewDelete().Model((*DeploymentMapping)(nil)).Where("tenant_id = ? AND deployment_uid = ?", tenantID, deploymentUID).Exec(ctx)
	if err != nil {
		return translateDelete(err)
	}
	return notFoundIfNone(res, "mapping of GitOpsDeployment "+deploymentUID)
}

// DeleteOperation deletes an operation.
func (s *Store) DeleteOperation(ctx context.Context, idb bun.IDB, id string) error {
	res, err := idb.NewDelete().Model((*Operation)(nil)).Where("id = ?", id).Exec(ctx)
	if err != nil {
		return translateDelete(err)
	}
	return notFoundIfNone(res, "operation "+id)
}

// ListRepositoryCredentials returns the tenant's repository credentials, decrypted.
func (s *Store) ListRepositoryCredentials(ctx context.Context, idb bun.IDB, tenantID string) ([]RepositoryCredential, error) {
	var rows []repositoryCredentialRow
	if err := idb.NewSelect().Model(&rows).Where("rcred.tenant_id = ?", tenantID).Order("rcred.repository_url", "rcred.id").Scan(ctx); err != nil {
		return nil, translate(err)
	}
	out := make([]RepositoryCredential, 0, len(rows))
	for i := range rows {
		c, err := s.openRepositoryCredential(&rows[i])
		if err != nil {
			return nil, err
		}
		out = append(out, *c)
	}
	return out, nil
}

// ListSyncOperationsByApplication returns the tenant's sync operations of an application.
func (s *Store) ListSyncOperationsByApplication(ctx context.Context, idb bun.IDB, tenantID, applicationID string) ([]SyncOperation, error) {
	var ops []SyncOperation
	err := idb.NewSelect().Model(&ops).Where("syncop.tenant_id = ? AND syncop.application_id = ?", tenantID, applicationID).
		Order("syncop.created_at", "syncop.id").Scan(ctx)
	return ops, translate(err)
}

// DeleteSyncOperation deletes one of the tenant's sync operations and its CR mapping.
func (s *Store) DeleteSyncOperation(ctx context.Context, idb bun.IDB, tenantID, id string) error {
	res, err := idb.NewDelete().Model((*SyncOperation)(nil)).Where("tenant_id = ? AND id = ?", tenantID, id).Exec(ctx)
	if err != nil {
		return translateDelete(err)
	}
	return notFoundIfNone(res, "sync operation "+id)
}
