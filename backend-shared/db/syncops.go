package db

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// SyncDesiredState is what a sync operation asks of Argo CD.
type SyncDesiredState string

// Sync operation desired states.
const (
	SyncRunning    SyncDesiredState = "Running"
	SyncTerminated SyncDesiredState = "Terminated"
)

// SyncOperation is a requested sync of an application (a GitOpsDeploymentSyncRun).
type SyncOperation struct {
	bun.BaseModel `bun:"table:sync_operations,alias:syncop"`

	ID       string `bun:"id,pk,nullzero,type:uuid,default:gen_random_uuid()"`
	TenantID string `bun:"tenant_id,notnull,type:uuid"`
	// ApplicationID is empty once the application was deleted.
	ApplicationID  string           `bun:"application_id,nullzero,type:uuid"`
	DeploymentName string           `bun:"deployment_name,notnull"`
	Revision       string           `bun:"revision,notnull"`
	DesiredState   SyncDesiredState `bun:"desired_state,nullzero,notnull,default:'Running'"`
	// ResultPhase and ResultMessage say how Argo CD's sync ended (Succeeded, Failed, Error);
	// empty until the cluster-agent saw it end.
	ResultPhase   string    `bun:"result_phase,notnull"`
	ResultMessage string    `bun:"result_message,notnull"`
	CreatedAt     time.Time `bun:"created_at,nullzero,notnull,default:current_timestamp"`
	UpdatedAt     time.Time `bun:"updated_at,nullzero,notnull,default:current_timestamp"`
}

// CreateSyncOperation inserts op for tenant op.TenantID (its application must be the
// tenant's: ErrInvalidReference otherwise) and fills in its id and defaults.
func (s *Store) CreateSyncOperation(ctx context.Context, idb bun.IDB, op *SyncOperation) error {
	excluded := []string{"created_at", "updated_at"}
	if op.ID == "" {
		excluded = append(excluded, "id") // generated; the backend passes the SyncRun's UID
	}
	_, err := idb.NewInsert().Model(op).ExcludeColumn(excluded...).Returning("*").Exec(ctx)
	return translate(err)
}

// GetSyncOperation returns one of the tenant's sync operations.
func (s *Store) GetSyncOperation(ctx context.Context, idb bun.IDB, tenantID, id string) (*SyncOperation, error) {
	op := new(SyncOperation)
	if err := idb.NewSelect().Model(op).Where("syncop.tenant_id = ? AND syncop.id = ?", tenantID, id).Scan(ctx); err != nil {
		return nil, fmt.Errorf("sync operation %s: %w", id, translate(err))
	}
	return op, nil
}

// UpdateSyncOperationDesiredState sets the desired state of one of the tenant's sync
// operations (Terminated when the SyncRun is deleted mid-sync).
func (s *Store) UpdateSyncOperationDesiredState(ctx context.Context, idb bun.IDB, tenantID, id string, state SyncDesiredState) error {
	res, err := idb.NewUpdate().Model((*SyncOperation)(nil)).
		Set("desired_state = ?", state).
		Set("updated_at = now()").
		Where("tenant_id = ? AND id = ?", tenantID, id).
		Exec(ctx)
	if err != nil {
		return translate(err)
	}
	return notFoundIfNone(res, "sync operation "+id)
}

// RecordSyncResult records how the sync of sync operation id, on application
// applicationID, ended, unless a result is recorded already (the first one is the sync's:
// Argo CD does not run one sync operation twice). A sync operation that does not exist, or
// is another application's, is left alone.
func (s *Store) RecordSyncResult(ctx context.Context, idb bun.IDB, applicationID, id, phase, message string) error {
	if uuid.Validate(id) != nil {
		return nil // an id written by someone else than the cluster-agent: no sync operation of ours
	}
	_, err := idb.NewUpdate().Model((*SyncOperation)(nil)).
		Set("result_phase = ?", phase).
		Set("result_message = ?", message).
		Set("updated_at = now()").
		Where("id = ? AND application_id = ? AND result_phase = ''", id, applicationID).
		Exec(ctx)
	return translate(err)
}
