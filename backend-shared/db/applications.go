package db

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
)

// ApplicationNamePrefix starts every Argo CD Application name: gitopsdepl-<GitOpsDeployment UID>.
const ApplicationNamePrefix = "gitopsdepl-"

// ApplicationName is the Argo CD Application name of a GitOpsDeployment.
func ApplicationName(deploymentUID string) string { return ApplicationNamePrefix + deploymentUID }

// Application is the desired Argo CD Application of a GitOpsDeployment.
type Application struct {
	bun.BaseModel `bun:"table:applications,alias:app"`

	ID       string `bun:"id,pk,nullzero,type:uuid,default:gen_random_uuid()"`
	TenantID string `bun:"tenant_id,notnull,type:uuid"`
	// Name is the Argo CD Application name (see ApplicationName).
	Name             string `bun:"name,notnull"`
	EngineInstanceID string `bun:"engine_instance_id,notnull,type:uuid"`
	// ManagedEnvironmentID is the target; empty for the engine's own cluster, and after
	// the environment was deleted.
	ManagedEnvironmentID string `bun:"managed_environment_id,nullzero,type:uuid"`
	// MovingFromEngineInstanceID is the instance the application is moving away from
	// (see MoveTenant); empty when it is not moving.
	MovingFromEngineInstanceID string                       `bun:"moving_from_engine_instance_id,nullzero,type:uuid"`
	Spec                       argov1alpha1.ApplicationSpec `bun:"spec,type:jsonb,notnull"`
	// Refresh is the last refresh request: a new value makes the cluster-agent ask Argo CD
	// to refresh the Application now.
	Refresh   string    `bun:"refresh,notnull"`
	CreatedAt time.Time `bun:"created_at,nullzero,notnull,default:current_timestamp"`
	UpdatedAt time.Time `bun:"updated_at,nullzero,notnull,default:current_timestamp"`
}

// Created reports whether the row is as the transaction that created it left it (its
// created_at and updated_at are that transaction's time until an update): after a write,
// that the write created it.
func (app *Application) Created() bool { return app.CreatedAt.Equal(app.UpdatedAt) }

// SameAs reports whether writing want over app would change nothing: the comparison
// UpsertApplication makes in PostgreSQL, made on rows already read (the spec compared as
// the JSON it is stored as). Fields of a stored spec that the Go type does not know are
// not compared: the cluster-agent applies the row through the same type, so they never
// reach Argo CD.
func (app *Application) SameAs(want *Application) bool {
	if app.TenantID != want.TenantID || app.Name != want.Name || app.EngineInstanceID != want.EngineInstanceID ||
		app.ManagedEnvironmentID != want.ManagedEnvironmentID || app.Refresh != want.Refresh {
		return false
	}
	have, err := json.Marshal(app.Spec)
	if err != nil {
		return false
	}
	wanted, err := json.Marshal(want.Spec)
	return err == nil && bytes.Equal(have, wanted)
}

// UpsertApplication inserts app, or updates the application of the same name when its
// engine instance, target or spec differ, and reports whether anything was written, so
// the caller creates an Operation only for a real change. app is refreshed from the row.
// ErrConflict if the name belongs to another tenant (whose row is left untouched).
//
// A change of engine instance starts a move of the application (the old instance lets its
// Argo CD Application go once the new one has adopted it), and a change back to the
// instance it is moving from ends the move. MoveTenant is the normal way to move; this
// keeps the rows consistent if a placement changes underneath a reconcile.
func (s *Store) UpsertApplication(ctx context.Context, idb bun.IDB, app *Application) (changed bool, err error) {
	columns := []string{"tenant_id", "name", "engine_instance_id", "managed_environment_id", "spec", "refresh"}
	if app.ID != "" {
		// The backend uses the GitOpsDeployment's UID, so notifications about the
		// application map to the CR without a lookup.
		columns = append(columns, "id")
	}
	var p prepared
	q := p.values(idb.NewInsert().Model(app), columns...).
		On("CONFLICT (name) DO UPDATE").
		Set("engine_instance_id = EXCLUDED.engine_instance_id").
		Set("moving_from_engine_instance_id = CASE " +
			"WHEN app.engine_instance_id = EXCLUDED.engine_instance_id THEN app.moving_from_engine_instance_id " +
			"WHEN app.moving_from_engine_instance_id = EXCLUDED.engine_instance_id THEN NULL " +
			"ELSE app.engine_instance_id END").
		Set("managed_environment_id = EXCLUDED.managed_environment_id").
		Set("spec = EXCLUDED.spec").
		Set("refresh = EXCLUDED.refresh").
		Set("updated_at = now()").
		Where("app.tenant_id = EXCLUDED.tenant_id").
		Where("(app.engine_instance_id, app.managed_environment_id, app.spec, app.refresh) IS DISTINCT FROM " +
			"(EXCLUDED.engine_instance_id, EXCLUDED.managed_environment_id, EXCLUDED.spec, EXCLUDED.refresh)").
		Returning("*")
	switch err := p.scan(ctx, idb, q, app); {
	case err == nil:
		return true, nil
	case !errors.Is(err, sql.ErrNoRows):
		return false, translate(err)
	}
	// Unchanged, or another tenant's: read it back under the caller's tenant.
	existing := new(Application)
	var read prepared
	err = read.scan(ctx, idb, idb.NewSelect().Model(existing).
		Where("app.name = ? AND app.tenant_id = ?", read.arg(app.Name), read.arg(app.TenantID)), existing)
	if err != nil {
		if errors.Is(translate(err), ErrNotFound) {
			return false, fmt.Errorf("application %s belongs to another tenant: %w", app.Name, ErrConflict)
		}
		return false, translate(err)
	}
	*app = *existing
	return false, nil
}

// GetApplication returns one of the tenant's applications.
func (s *Store) GetApplication(ctx context.Context, idb bun.IDB, tenantID, id string) (*Application, error) {
	app := new(Application)
	if err := idb.NewSelect().Model(app).Where("app.tenant_id = ? AND app.id = ?", tenantID, id).Scan(ctx); err != nil {
		return nil, fmt.Errorf("application %s: %w", id, translate(err))
	}
	return app, nil
}

// GetApplicationForEngineInstance returns an application by id, scoped by engine instance
// (the cluster-agent acting on an Operation).
func (s *Store) GetApplicationForEngineInstance(ctx context.Context, idb bun.IDB, engineInstanceID, id string) (*Application, error) {
	app := new(Application)
	var p prepared
	q := idb.NewSelect().Model(app).Where("app.engine_instance_id = ? AND app.id = ?", p.arg(engineInstanceID), p.arg(id))
	if err := p.scan(ctx, idb, q, app); err != nil {
		return nil, fmt.Errorf("application %s: %w", id, translate(err))
	}
	return app, nil
}

// ListApplications returns the tenant's applications.
func (s *Store) ListApplications(ctx context.Context, idb bun.IDB, tenantID string) ([]Application, error) {
	var apps []Application
	err := idb.NewSelect().Model(&apps).Where("app.tenant_id = ?", tenantID).Order("app.name").Scan(ctx)
	return apps, translate(err)
}

// DeleteApplication deletes one of the tenant's applications with its state and
// deployment mapping; its sync operations lose their application.
func (s *Store) DeleteApplication(ctx context.Context, idb bun.IDB, tenantID, id string) error {
	res, err := idb.NewDelete().Model((*Application)(nil)).Where("tenant_id = ? AND id = ?", tenantID, id).Exec(ctx)
	if err != nil {
		return translateDelete(err)
	}
	return notFoundIfNone(res, "application "+id)
}

// DeleteApplicationByDeploymentUID deletes the tenant's application of a GitOpsDeployment
// (and so the mapping) and returns it, for the Operation that removes it from Argo CD.
func (s *Store) DeleteApplicationByDeploymentUID(ctx context.Context, idb bun.IDB, tenantID, deploymentUID string) (*Application, error) {
	app := new(Application)
	res, err := idb.NewDelete().Model(app).
		Where("app.tenant_id = ?", tenantID).
		Where("app.id = (SELECT application_id FROM deployment_application_mappings WHERE tenant_id = ? AND deployment_uid = ?)",
			tenantID, deploymentUID).
		Returning("*").
		Exec(ctx)
	if err != nil {
		return nil, translateDelete(err)
	}
	if err := notFoundIfNone(res, "application of GitOpsDeployment "+deploymentUID); err != nil {
		return nil, err
	}
	return app, nil
}

// AppliedApplication is an application row as a GitOpsDeployment's reconcile finds it
// before writing: with its tenant, whether an operation on it is still Waiting, and the
// state the cluster-agent last recorded.
type AppliedApplication struct {
	Application `bun:",extend"`

	Tenant *Tenant `bun:"rel:belongs-to,join:tenant_id=id"`
	// Waiting: an operation on the row is Waiting (its signal may still need a CR).
	Waiting bool `bun:"waiting,scanonly"`
	// Recorded is the application's state; nil when none was recorded (AppState).
	Recorded *ApplicationState `bun:"rel:has-one,join:id=application_id"`
}

// AppState is the application's recorded state, nil while there is none.
func (a *AppliedApplication) AppState() *ApplicationState {
	if a.Recorded == nil || a.Recorded.ApplicationID == "" {
		return nil // the join found no state: bun fills in a zero one
	}
	return a.Recorded
}

// GetAppliedApplication returns application id with its tenant, which must be the tenant of
// namespaceUID (ErrNotFound otherwise, as when there is no such row), and its state, in one
// statement.
func (s *Store) GetAppliedApplication(ctx context.Context, idb bun.IDB, namespaceUID, id string) (*AppliedApplication, error) {
	row := new(AppliedApplication)
	var p prepared
	q := idb.NewSelect().Model(row).
		ColumnExpr("?TableColumns").
		ColumnExpr("EXISTS (SELECT 1 FROM operations AS op WHERE op.resource_type = ? AND op.resource_id = app.id AND op.state = ?) AS waiting",
			p.arg(OperationResourceApplication), p.arg(OperationWaiting)).
		Relation("Tenant").
		Relation("Recorded").
		Where("app.id = ? AND tenant.namespace_uid = ?", p.arg(id), p.arg(namespaceUID))
	if err := p.scan(ctx, idb, q, row); err != nil {
		return nil, fmt.Errorf("application %s: %w", id, translate(err))
	}
	return row, nil
}
