package db

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"github.com/gitops-service/gitops-service/backend-shared/orphans"
)

// Leftovers are the resources a deleted Argo CD Application may have left behind, because
// its finalizer was removed before Argo CD finished pruning: the cluster-agent removes those
// still left after RemoveAfter.
type Leftovers struct {
	bun.BaseModel `bun:"table:leftover_resources,alias:lo"`

	EngineInstanceID string `bun:"engine_instance_id,pk,type:uuid"`
	ApplicationName  string `bun:"application_name,pk"`
	// DestinationName (an Argo CD cluster Secret) or DestinationServer says where the
	// Application deployed to; DestinationNamespace is the only namespace removed from.
	DestinationName      string             `bun:"destination_name,notnull"`
	DestinationServer    string             `bun:"destination_server,notnull"`
	DestinationNamespace string             `bun:"destination_namespace,notnull"`
	Resources            []orphans.Resource `bun:"resources,type:jsonb,notnull"`
	RemoveAfter          time.Time          `bun:"remove_after,notnull"`
	CreatedAt            time.Time          `bun:"created_at,nullzero,notnull,default:current_timestamp"`
}

// RecordLeftovers writes l, replacing an earlier record of the same Application (a
// deletion retried after a failure records the same resources again).
func (s *Store) RecordLeftovers(ctx context.Context, idb bun.IDB, l *Leftovers) error {
	_, err := idb.NewInsert().Model(l).ExcludeColumn("created_at").
		On("CONFLICT (engine_instance_id, application_name) DO UPDATE").
		Set("destination_name = EXCLUDED.destination_name").
		Set("destination_server = EXCLUDED.destination_server").
		Set("destination_namespace = EXCLUDED.destination_namespace").
		Set("resources = EXCLUDED.resources").
		Set("remove_after = EXCLUDED.remove_after").
		Exec(ctx)
	return translate(err)
}

// DueLeftovers returns up to limit records of the engine instance whose RemoveAfter has
// passed at now, oldest first.
func (s *Store) DueLeftovers(ctx context.Context, idb bun.IDB, engineInstanceID string, now time.Time, limit int) ([]Leftovers, error) {
	var out []Leftovers
	err := idb.NewSelect().Model(&out).
		Where("lo.engine_instance_id = ? AND lo.remove_after <= ?", engineInstanceID, now).
		Order("lo.remove_after", "lo.application_name").Limit(int64(limit)).Scan(ctx)
	return out, translate(err)
}

// DeleteLeftovers deletes the record of one Application; a missing record is no error.
func (s *Store) DeleteLeftovers(ctx context.Context, idb bun.IDB, engineInstanceID, applicationName string) error {
	_, err := idb.NewDelete().Model((*Leftovers)(nil)).
		Where("engine_instance_id = ? AND application_name = ?", engineInstanceID, applicationName).Exec(ctx)
	return translate(err)
}
