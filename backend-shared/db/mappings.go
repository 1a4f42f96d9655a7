package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// DeploymentMapping links a GitOpsDeployment (by UID) to its application.
type DeploymentMapping struct {
	bun.BaseModel `bun:"table:deployment_application_mappings,alias:dam"`

	DeploymentUID       string    `bun:"deployment_uid,pk"`
	TenantID            string    `bun:"tenant_id,notnull,type:uuid"`
	DeploymentName      string    `bun:"deployment_name,notnull"`
	DeploymentNamespace string    `bun:"deployment_namespace,notnull"`
	ApplicationID       string    `bun:"application_id,notnull,type:uuid"`
	CreatedAt           time.Time `bun:"created_at,nullzero,notnull,default:current_timestamp"`
}

// GetOrCreateDeploymentMapping records m unless the GitOpsDeployment already has a mapping,
// and returns the stored one (which may name another application: the caller decides).
// ErrConflict if the UID is mapped under another tenant; ErrInvalidReference if the
// application is not the tenant's.
func (s *Store) GetOrCreateDeploymentMapping(ctx context.Context, idb bun.IDB, m *DeploymentMapping) (*DeploymentMapping, error) {
	created := *m
	var p prepared
	q := p.values(idb.NewInsert().Model(&created), "deployment_uid", "tenant_id", "deployment_name", "deployment_namespace", "application_id").
		On("CONFLICT (deployment_uid) DO NOTHING").Returning("*")
	switch err := p.scan(ctx, idb, q, &created); {
	case err == nil:
		return &created, nil
	case !errors.Is(err, sql.ErrNoRows):
		return nil, translate(err)
	}
	existing, err := s.GetDeploymentMapping(ctx, idb, m.TenantID, m.DeploymentUID)
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("GitOpsDeployment %s is mapped under another tenant: %w", m.DeploymentUID, ErrConflict)
	}
	return existing, err
}

// GetDeploymentMapping returns the tenant's mapping of a GitOpsDeployment UID.
func (s *Store) GetDeploymentMapping(ctx context.Context, idb bun.IDB, tenantID, deploymentUID string) (*DeploymentMapping, error) {
	m := new(DeploymentMapping)
	err := idb.NewSelect().Model(m).Where("dam.tenant_id = ? AND dam.deployment_uid = ?", tenantID, deploymentUID).Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("mapping of GitOpsDeployment %s: %w", deploymentUID, translate(err))
	}
	return m, nil
}

// ListDeploymentMappingsByName returns the tenant's mappings of GitOpsDeployments called
// name (several when a deployment was re-created): a deletion reconcile knows only names.
func (s *Store) ListDeploymentMappingsByName(ctx context.Context, idb bun.IDB, tenantID, name string) ([]DeploymentMapping, error) {
	var ms []DeploymentMapping
	var p prepared
	q := idb.NewSelect().Model(&ms).Where("dam.tenant_id = ? AND dam.deployment_name = ?", p.arg(tenantID), p.arg(name)).
		Order("dam.created_at", "dam.deployment_uid")
	return ms, translate(p.scan(ctx, idb, q, &ms))
}

// APIResourceType is the kind of an API CR that maps to a row.
type APIResourceType string

// API CR kinds with a row; each maps to the target field named after it.
const (
	APIResourceSyncRun              APIResourceType = "GitOpsDeploymentSyncRun"              // SyncOperationID
	APIResourceManagedEnvironment   APIResourceType = "GitOpsDeploymentManagedEnvironment"   // ManagedEnvironmentID
	APIResourceRepositoryCredential APIResourceType = "GitOpsDeploymentRepositoryCredential" // RepositoryCredentialID
)

// APICRMapping links an API CR (kind, UID, name, namespace) to the row it produced. The
// CR's namespace UID is its tenant's. Exactly the target field of APIResourceType is set.
type APICRMapping struct {
	bun.BaseModel `bun:"table:api_cr_mappings,alias:acm"`

	APIResourceType        APIResourceType `bun:"api_resource_type,pk"`
	APIResourceUID         string          `bun:"api_resource_uid,pk"`
	APIResourceName        string          `bun:"api_resource_name,notnull"`
	APIResourceNamespace   string          `bun:"api_resource_namespace,notnull"`
	TenantID               string          `bun:"tenant_id,notnull,type:uuid"`
	SyncOperationID        string          `bun:"sync_operation_id,nullzero,type:uuid"`
	ManagedEnvironmentID   string          `bun:"managed_environment_id,nullzero,type:uuid"`
	RepositoryCredentialID string          `bun:"repository_credential_id,nullzero,type:uuid"`
	CreatedAt              time.Time       `bun:"created_at,nullzero,notnull,default:current_timestamp"`
}

// TargetID is the id of the mapped row, whatever its kind.
func (m *APICRMapping) TargetID() string {
	switch m.APIResourceType {
	case APIResourceSyncRun:
		return m.SyncOperationID
	case APIResourceManagedEnvironment:
		return m.ManagedEnvironmentID
	case APIResourceRepositoryCredential:
		return m.RepositoryCredentialID
	}
	return ""
}

// GetOrCreateAPICRMapping records m unless the CR already has a mapping, and returns the
// stored one. ErrConflict if the CR is mapped under another tenant or the row already has
// another CR; ErrCheck if the target field does not match the kind.
func (s *Store) GetOrCreateAPICRMapping(ctx context.Context, idb bun.IDB, m *APICRMapping) (*APICRMapping, error) {
	created := *m
	res, err := idb.NewInsert().Model(&created).
		On("CONFLICT (api_resource_type, api_resource_uid) DO NOTHING").Returning("*").Exec(ctx)
	if err != nil {
		return nil, translate(err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return &created, nil
	}
	existing, err := s.GetAPICRMapping(ctx, idb, m.TenantID, m.APIResourceType, m.APIResourceUID)
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("%s %s is mapped under another tenant: %w", m.APIResourceType, m.APIResourceUID, ErrConflict)
	}
	return existing, err
}

// GetAPICRMapping returns the tenant's mapping of an API CR.
func (s *Store) GetAPICRMapping(ctx context.Context, idb bun.IDB, tenantID string, kind APIResourceType, uid string) (*APICRMapping, error) {
	m := new(APICRMapping)
	err := idb.NewSelect().Model(m).
		Where("acm.tenant_id = ? AND acm.api_resource_type = ? AND acm.api_resource_uid = ?", tenantID, kind, uid).
		Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("mapping of %s %s: %w", kind, uid, translate(err))
	}
	return m, nil
}

// GetAPICRMappingByTarget returns the tenant's mapping of the CR that produced the row
// targetID of kind (the reverse of GetAPICRMapping): e.g. the
// GitOpsDeploymentManagedEnvironment of a managed environment id. ErrNotFound if the row
// has no mapping (any more); ErrInvalid if targetID is not a UUID.
func (s *Store) GetAPICRMappingByTarget(ctx context.Context, idb bun.IDB, tenantID string, kind APIResourceType, targetID string) (*APICRMapping, error) {
	column, ok := map[APIResourceType]string{
		APIResourceSyncRun:              "sync_operation_id",
		APIResourceManagedEnvironment:   "managed_environment_id",
		APIResourceRepositoryCredential: "repository_credential_id",
	}[kind]
	if !ok {
		return nil, fmt.Errorf("mapping of %s %s: unknown kind: %w", kind, targetID, ErrInvalid)
	}
	m := new(APICRMapping)
	err := idb.NewSelect().Model(m).
		Where("acm.tenant_id = ? AND acm.api_resource_type = ? AND ? = ?", tenantID, kind, bun.Ident("acm."+column), targetID).
		Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("mapping of %s of row %s: %w", kind, targetID, translate(err))
	}
	return m, nil
}

// ListAPICRMappingsByName returns the tenant's mappings of CRs of a kind called name
// (several when re-created): a deletion reconcile knows only names.
func (s *Store) ListAPICRMappingsByName(ctx context.Context, idb bun.IDB, tenantID string, kind APIResourceType, name string) ([]APICRMapping, error) {
	var ms []APICRMapping
	err := idb.NewSelect().Model(&ms).
		Where("acm.tenant_id = ? AND acm.api_resource_type = ? AND acm.api_resource_name = ?", tenantID, kind, name).
		Order("acm.created_at", "acm.api_resource_uid").
		Scan(ctx)
	return ms, translate(err)
}

// ListAPICRMappings returns the tenant's mappings of a kind.
func (s *Store) ListAPICRMappings(ctx context.Context, idb bun.IDB, tenantID string, kind APIResourceType) ([]APICRMapping, error) {
	var ms []APICRMapping
	err := idb.NewSelect().Model(&ms).Where("acm.tenant_id = ? AND acm.api_resource_type = ?", tenantID, kind).
		Order("acm.api_resource_name", "acm.api_resource_uid").Scan(ctx)
	return ms, translate(err)
}

// DeleteAPICRMapping deletes the tenant's mapping of an API CR (deleting the row deletes
// its mapping too).
func (s *Store) DeleteAPICRMapping(ctx context.Context, idb bun.IDB, tenantID string, kind APIResourceType, uid string) error {
	res, err := idb.NewDelete().Model((*APICRMapping)(nil)).
		Where("tenant_id = ? AND api_resource_type = ? AND api_resource_uid = ?", tenantID, kind, uid).
		Exec(ctx)
	if err != nil {
		return translateDelete(err)
	}
	return notFoundIfNone(res, fmt.Sprintf("mapping of %s %s", kind, uid))
}
