package db

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/uptrace/bun"
)

// OperationResourceType is the kind of row an operation is about.
type OperationResourceType string

// Operation resource types. An AppProject operation's resource id is the tenant's id.
const (
	OperationResourceManagedEnvironment   OperationResourceType = "ManagedEnvironment"
	OperationResourceRepositoryCredential OperationResourceType = "RepositoryCredential"
	OperationResourceApplication          OperationResourceType = "Application"
	OperationResourceSyncOperation        OperationResourceType = "SyncOperation"
	OperationResourceAppProject           OperationResourceType = "AppProject"
)

// OperationState is the progress of an operation.
type OperationState string

// Operation states.
const (
	OperationWaiting    OperationState = "Waiting"
	OperationInProgress OperationState = "In_Progress"
	OperationCompleted  OperationState = "Completed"
	OperationFailed     OperationState = "Failed"
)

// Finished reports whether the state is final (Completed or Failed).
func (s OperationState) Finished() bool { return s == OperationCompleted || s == OperationFailed }

// Operation tells the cluster-agent of an engine instance to make Argo CD match the row
// (ResourceType, ResourceID): create, update, or delete when the row is gone.
type Operation struct {
	bun.BaseModel `bun:"table:operations,alias:op"`

	ID               string                `bun:"id,pk,nullzero,type:uuid,default:gen_random_uuid()"`
	EngineInstanceID string                `bun:"engine_instance_id,notnull,type:uuid"`
	ResourceType     OperationResourceType `bun:"resource_type,notnull"`
	ResourceID       string                `bun:"resource_id,notnull,type:uuid"`
	// OwnerTenantID is the tenant on whose behalf; empty for system operations and after
	// the tenant was deleted.
	OwnerTenantID      string         `bun:"owner_tenant_id,nullzero,type:uuid"`
	State              OperationState `bun:"state,nullzero,notnull,default:'Waiting'"`
	HumanReadableState string         `bun:"human_readable_state,notnull"`
	// GCExpiration is how long the operation is kept once finished (whole seconds);
	// zero keeps it until deleted.
	GCExpirationSeconds int `bun:"gc_expiration_seconds,notnull"`
	// GCExpiresAt is set when the operation finishes, if GCExpirationSeconds > 0.
	GCExpiresAt time.Time `bun:"gc_expires_at,nullzero"`
	CreatedAt   time.Time `bun:"created_at,nullzero,notnull,default:current_timestamp"`
	UpdatedAt   time.Time `bun:"updated_at,nullzero,notnull,default:current_timestamp"`

	// Signalled is set by the writer whose transaction raised the engine instance's signal
	// for this operation (RaiseSignal): after commit it creates the signal's CR.
	Signalled bool `bun:"-"`
	// CoveredBySignal is set by RaiseSignal when the signal already up had its CR: that CR
	// stands for this operation too, and nothing needs checking after commit.
	CoveredBySignal bool `bun:"-"`
}

// CreateOperation inserts op (Waiting unless op.State says otherwise) and fills in its id
// and timestamps.
func (s *Store) CreateOperation(ctx context.Context, idb bun.IDB, op *Operation) error {
	var p prepared
	q := p.values(idb.NewInsert().Model(op), "engine_instance_id", "resource_type", "resource_id", "owner_tenant_id", "state",
		"human_readable_state", "gc_expiration_seconds").
		Returning("*")
	return translate(p.scan(ctx, idb, q, op))
}

// GetOperation returns an operation by id. Not scoped: operations are the system's, and
// cluster-agents of earlier versions publish bare ids in operation_changed notifications.
func (s *Store) GetOperation(ctx context.Context, idb bun.IDB, id string) (*Operation, error) {
	op := new(Operation)
	var p prepared
	if err := p.scan(ctx, idb, idb.NewSelect().Model(op).Where("op.id = ?", p.arg(id)), op); err != nil {
		return nil, fmt.Errorf("operation %s: %w", id, translate(err))
	}
	return op, nil
}

// ListPendingOperations returns the operations of an engine instance that are neither
// Completed nor Failed, oldest first (the cluster-agent's resync); served by a partial index.
func (s *Store) ListPendingOperations(ctx context.Context, idb bun.IDB, engineInstanceID string) ([]Operation, error) {
	var ops []Operation
	err := idb.NewSelect().Model(&ops).
		Where("op.engine_instance_id = ? AND op.state IN (?, ?)", engineInstanceID, OperationWaiting, OperationInProgress).
		Order("op.created_at", "op.id").
		Scan(ctx)
	return ops, translate(err)
}

// ListOperationsForResource returns the operations about a row, newest first.
func (s *Store) ListOperationsForResource(ctx context.Context, idb bun.IDB, resourceType OperationResourceType, resourceID string) ([]Operation, error) {
	var ops []Operation
	var p prepared
	q := idb.NewSelect().Model(&ops).
		Where("op.resource_type = ? AND op.resource_id = ?", p.arg(resourceType), p.arg(resourceID)).
		Order("op.created_at DESC", "op.id")
	return ops, translate(p.scan(ctx, idb, q, &ops))
}

// OperationFilter selects operations for ListOperations; its zero value selects them all.
type OperationFilter struct {
	// State and EngineInstanceID, when set, must match.
	State            OperationState
	EngineInstanceID string
	// Limit caps the number of operations returned; 0 returns them all.
	Limit int
}

// ListOperations returns the operations f selects, newest first: what operators look at to
// see how the engine instances are doing. A malformed EngineInstanceID is ErrInvalid.
func (s *Store) ListOperations(ctx context.Context, idb bun.IDB, f OperationFilter) ([]Operation, error) {
	var ops []Operation
	q := idb.NewSelect().Model(&ops).Order("op.created_at DESC", "op.id DESC")
	if f.State != "" {
		q = q.Where("op.state = ?", f.State)
	}
	if f.EngineInstanceID != "" {
		q = q.Where("op.engine_instance_id = ?", f.EngineInstanceID)
	}
	if f.Limit > 0 {
		q = q.Limit(int64(f.Limit))
	}
	err := q.Scan(ctx)
	return ops, translate(err)
}

// OperationChange is what a notification of UpdateOperationStates says of an operation
// whose state changed: enough for a listener to route it without reading the row.
type OperationChange struct {
	ID           string                `json:"id"`
	State        OperationState        `json:"state"`
	ResourceType OperationResourceType `json:"resourceType"`
	ResourceID   string                `json:"resourceID"`
}

// ParseOperationChange reads the payload of an UpdateOperationStates notification. ok is
// false when the payload is not one (cluster-agents of earlier versions publish the bare
// operation id): the listener then reads the row.
func ParseOperationChange(payload string) (change OperationChange, ok bool) {
	if !strings.HasPrefix(payload, "{") || json.Unmarshal([]byte(payload), &change) != nil || change.ID == "" {
		return OperationChange{}, false
	}
	return change, true
}

// UpdateOperationStates records an engine instance's progress on some of its operations,
// in one statement that also publishes each updated operation's OperationChange on
// notifyChannel (the cluster-agent passes notify.OperationChanged, which wakes the
// backend): the change and its notifications commit together, in one round trip.
// Finishing an operation (Completed, Failed) starts its garbage-collection clock. It
// returns the updated rows; an id that names no operation of the instance is ErrNotFound
// (the others are updated all the same).
func (s *Store) UpdateOperationStates(ctx context.Context, idb bun.IDB, engineInstanceID string, ids []string, state OperationState, humanReadable, notifyChannel string) ([]Operation, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var p prepared
	update := idb.NewUpdate().Model((*Operation)(nil)).
		Set("state = ?", p.arg(state)).
		Set("human_readable_state = ?", p.arg(humanReadable)).
		Set("updated_at = now()").
		Set("gc_expires_at = CASE WHEN ?::boolean AND op.gc_expiration_seconds > 0 "+
			"THEN now() + make_interval(secs => op.gc_expiration_seconds) END", p.arg(state.Finished())).
		Where("op.engine_instance_id = ? AND op.id = ANY(?::uuid[])", p.arg(engineInstanceID), p.arg(ids)).
		Returning("op.*")
	var ops []Operation
	err := p.scan(ctx, idb, selectNotifying(idb, &p, update, operationChangePayload, notifyChannel).ColumnExpr("written.*"), &ops)
	if err != nil {
		return nil, translate(err)
	}
	if len(ops) < len(ids) {
		return ops, fmt.Errorf("%d of %d operations: %w", len(ids)-len(ops), len(ids), ErrNotFound)
	}
	return ops, nil
}

// operationChangePayload is the OperationChange of a written operations row, as JSON.
const operationChangePayload = "json_build_object('id', written.id, 'state', written.state, " +
	"'resourceType', written.resource_type, 'resourceID', written.resource_id)::text"

// selectNotifying selects the rows that write (an INSERT, UPDATE or DELETE with RETURNING,
// built with p's placeholders) returns, as the common table "written", and publishes
// payload (an expression over written's columns) of each row on channel: pg_notify is
// volatile, so PostgreSQL calls it once per row, and the write and its notifications
// commit together in one statement.
func selectNotifying(idb bun.IDB, p *prepared, write bun.Query, payload, channel string) *bun.SelectQuery {
	return idb.NewSelect().With("written", write).
		TableExpr("written").
		Join(", LATERAL (SELECT pg_notify(?, "+payload+")) AS notified", p.arg(channel))
}

// HasOperations reports whether an engine instance has any operation, finished or not.
func (s *Store) HasOperations(ctx context.Context, idb bun.IDB, engineInstanceID string) (bool, error) {
	exists, err := idb.NewSelect().Model((*Operation)(nil)).Where("op.engine_instance_id = ?", engineInstanceID).Exists(ctx)
	return exists, translate(err)
}

// GarbageCollectOperations deletes up to limit finished operations whose expiry is at or
// before now and returns them, so that the caller deletes their Operation CRs too (named
// after the id, in the engine instance's namespace). Rows locked by another collector are
// skipped, so replicas do not collide.
func (s *Store) GarbageCollectOperations(ctx context.Context, idb bun.IDB, now time.Time, limit int) ([]Operation, error) {
	var ops []Operation
	expired := idb.NewSelect().Model((*Operation)(nil)).Column("id").
		Where("gc_expires_at <= ?", now).
		OrderExpr("gc_expires_at").
		Limit(int64(limit)).
		For("UPDATE SKIP LOCKED")
	_, err := idb.NewDelete().Model(&ops).
		Where("op.id IN (?)", expired).
		Returning("*").
		Exec(ctx)
	if err != nil {
		return nil, translateDelete(err)
	}
	return ops, nil
}
