package db

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
)

// Health statuses (Argo CD's) accepted by application_states.health_status.
const (
	HealthHealthy     = "Healthy"
	HealthProgressing = "Progressing"
	HealthDegraded    = "Degraded"
	HealthSuspended   = "Suspended"
	HealthMissing     = "Missing"
	HealthUnknown     = "Unknown"
)

// Sync statuses (Argo CD's) accepted by application_states.sync_status.
const (
	SyncStatusSynced    = "Synced"
	SyncStatusOutOfSync = "OutOfSync"
	SyncStatusUnknown   = "Unknown"
)

// ApplicationState is what Argo CD reports about an application, as the cluster-agent
// last wrote it.
type ApplicationState struct {
	bun.BaseModel `bun:"table:application_states,alias:appstate"`

	ApplicationID string `bun:"application_id,pk,type:uuid"`
	// EngineInstanceID is the instance whose cluster-agent wrote the state.
	EngineInstanceID string `bun:"engine_instance_id,nullzero,type:uuid"`
	// Health is one of the Health* constants; empty is stored as Unknown.
	Health        string `bun:"health_status,notnull"`
	HealthMessage string `bun:"health_message,notnull"`
	// SyncStatus is one of the SyncStatus* constants; empty is stored as Unknown.
	SyncStatus string                              `bun:"sync_status,notnull"`
	Revision   string                              `bun:"sync_revision,notnull"`
	Resources  []argov1alpha1.ResourceStatus       `bun:"resources,type:jsonb,notnull"`
	Conditions []argov1alpha1.ApplicationCondition `bun:"conditions,type:jsonb,notnull"`
	// ReconciledState is what Argo CD last compared against (status.sync.comparedTo).
	ReconciledState *argov1alpha1.ComparedTo     `bun:"reconciled_state,type:jsonb"`
	OperationState  *argov1alpha1.OperationState `bun:"operation_state,type:jsonb"`
	UpdatedAt       time.Time                    `bun:"updated_at,nullzero,notnull,default:current_timestamp"`
}

// RecordApplicationState writes st when it differs from the stored state and reports
// whether it did: the comparison happens in PostgreSQL (IS DISTINCT FROM, JSONB compared by
// value), so the cluster-agent writes and notifies only on a real change, with no read
// first. The same statement publishes the application's id on notifyChannel when it writes
// (the cluster-agent passes notify.ApplicationStateChanged, which wakes the backend): the
// change and its notification commit together, in one round trip. st.UpdatedAt is set when
// written.
func (s *Store) RecordApplicationState(ctx context.Context, idb bun.IDB, st *ApplicationState, notifyChannel string) (changed bool, err error) {
	if st.Health == "" {
		st.Health = HealthUnknown
	}
	if st.SyncStatus == "" {
		st.SyncStatus = SyncStatusUnknown
	}
	if st.Resources == nil {
		st.Resources = []argov1alpha1.ResourceStatus{}
	}
	if st.Conditions == nil {
		st.Conditions = []argov1alpha1.ApplicationCondition{}
	}
	var p prepared
	upsert := p.values(idb.NewInsert().Model(st), "application_id", "engine_instance_id", "health_status", "health_message",
		"sync_status", "sync_revision", "resources", "conditions", "reconciled_state", "operation_state").
		On("CONFLICT (application_id) DO UPDATE").
		Set("engine_instance_id = EXCLUDED.engine_instance_id").
		Set("health_status = EXCLUDED.health_status").
		Set("health_message = EXCLUDED.health_message").
		Set("sync_status = EXCLUDED.sync_status").
		Set("sync_revision = EXCLUDED.sync_revision").
		Set("resources = EXCLUDED.resources").
		Set("conditions = EXCLUDED.conditions").
		Set("reconciled_state = EXCLUDED.reconciled_state").
		Set("operation_state = EXCLUDED.operation_state").
		Set("updated_at = now()").
		Where("(appstate.engine_instance_id, appstate.health_status, appstate.health_message, appstate.sync_status, appstate.sync_revision, " +
			"appstate.resources, appstate.conditions, appstate.reconciled_state, appstate.operation_state) IS DISTINCT FROM " +
			"(EXCLUDED.engine_instance_id, EXCLUDED.health_status, EXCLUDED.health_message, EXCLUDED.sync_status, EXCLUDED.sync_revision, " +
			"EXCLUDED.resources, EXCLUDED.conditions, EXCLUDED.reconciled_state, EXCLUDED.operation_state)").
		Returning("application_id, updated_at")
	var written []ApplicationState
	err = p.scan(ctx, idb, selectNotifying(idb, &p, upsert, "written.application_id::text", notifyChannel).ColumnExpr("written.updated_at"), &written)
	if err != nil || len(written) == 0 {
		return false, translate(err)
	}
	st.UpdatedAt = written[0].UpdatedAt
	return true, nil
}

// LockApplicationOperationState returns the operation state last written for an
// application (nil when no state or no operation was written) and locks its row until the
// end of idb's transaction, so that a writer in the same transaction knows what it
// replaces: the cluster-agent records each finished sync once.
func (s *Store) LockApplicationOperationState(ctx context.Context, idb bun.IDB, applicationID string) (*argov1alpha1.OperationState, error) {
	var rows []ApplicationState
	err := idb.NewSelect().Model(&rows).Column("operation_state").
		Where("application_id = ?", applicationID).
		For("UPDATE").
		Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("operation state of application %s: %w", applicationID, translate(err))
	}
	if len(rows) == 0 {
		return nil, nil
	}
	return rows[0].OperationState, nil
}

// GetApplicationState returns the state of one of the tenant's applications.
func (s *Store) GetApplicationState(ctx context.Context, idb bun.IDB, tenantID, applicationID string) (*ApplicationState, error) {
	st := new(ApplicationState)
	var p prepared
	q := idb.NewSelect().Model(st).
		Join("JOIN applications AS app ON app.id = appstate.application_id").
		Where("app.tenant_id = ? AND appstate.application_id = ?", p.arg(tenantID), p.arg(applicationID))
	if err := p.scan(ctx, idb, q, st); err != nil {
		return nil, fmt.Errorf("state of application %s: %w", applicationID, translate(err))
	}
	return st, nil
}
