package db

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// EngineCluster is a cluster that runs GitOps engine (Argo CD) instances.
type EngineCluster struct {
	bun.BaseModel `bun:"table:engine_clusters,alias:ecluster"`

	ID   string `bun:"id,pk,nullzero,type:uuid,default:gen_random_uuid()"`
	Name string `bun:"name,notnull"`
	// ClusterCredentialsID is empty for the cluster the service runs in.
	ClusterCredentialsID string    `bun:"cluster_credentials_id,nullzero,type:uuid"`
	CreatedAt            time.Time `bun:"created_at,nullzero,notnull,default:current_timestamp"`
	UpdatedAt            time.Time `bun:"updated_at,nullzero,notnull,default:current_timestamp"`
}

// EngineInstanceState says whether an instance takes new tenants.
type EngineInstanceState string

// Engine instance states.
const (
	EngineInstanceActive   EngineInstanceState = "Active"
	EngineInstanceDraining EngineInstanceState = "Draining"
)

// EngineInstance is an Argo CD instance: a namespace on an engine cluster.
type EngineInstance struct {
	bun.BaseModel `bun:"table:engine_instances,alias:einstance"`

	ID              string `bun:"id,pk,nullzero,type:uuid,default:gen_random_uuid()"`
	EngineClusterID string `bun:"engine_cluster_id,notnull,type:uuid"`
	NamespaceName   string `bun:"namespace_name,notnull"`
	NamespaceUID    string `bun:"namespace_uid,notnull"`
	// CapacityWeight is the instance's relative share of tenants (0: none new). Zero in a
	// struct passed to a create means the column default (100).
	CapacityWeight int                 `bun:"capacity_weight,nullzero,notnull,default:100"`
	State          EngineInstanceState `bun:"state,nullzero,notnull,default:'Active'"`
	CreatedAt      time.Time           `bun:"created_at,nullzero,notnull,default:current_timestamp"`
	UpdatedAt      time.Time           `bun:"updated_at,nullzero,notnull,default:current_timestamp"`
}

// GetOrCreateEngineCluster returns the engine cluster called name, creating it (with
// clusterCredentialsID, empty for in-cluster) when missing. Concurrent callers get one row.
func (s *Store) GetOrCreateEngineCluster(ctx context.Context, idb bun.IDB, name, clusterCredentialsID string) (*EngineCluster, error) {
	c := &EngineCluster{Name: name, ClusterCredentialsID: clusterCredentialsID}
	res, err := idb.NewInsert().Model(c).Column("name", "cluster_credentials_id").
		On("CONFLICT (name) DO NOTHING").Returning("*").Exec(ctx)
	if err != nil {
		return nil, translate(err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return c, nil
	}
	c = new(EngineCluster)
	if err := idb.NewSelect().Model(c).Where("ecluster.name = ?", name).Scan(ctx); err != nil {
		return nil, fmt.Errorf("engine cluster %q: %w", name, translate(err))
	}
	return c, nil
}

// GetEngineCluster returns an engine cluster by id.
func (s *Store) GetEngineCluster(ctx context.Context, idb bun.IDB, id string) (*EngineCluster, error) {
	c := new(EngineCluster)
	if err := idb.NewSelect().Model(c).Where("ecluster.id = ?", id).Scan(ctx); err != nil {
		return nil, fmt.Errorf("engine cluster %s: %w", id, translate(err))
	}
	return c, nil
}

// ListEngineClusters returns every engine cluster.
func (s *Store) ListEngineClusters(ctx context.Context, idb bun.IDB) ([]EngineCluster, error) {
	var cs []EngineCluster
	err := idb.NewSelect().Model(&cs).Order("ecluster.name").Scan(ctx)
	return cs, translate(err)
}

// CreateEngineInstance inserts an engine instance and fills in its id and defaults.
func (s *Store) CreateEngineInstance(ctx context.Context, idb bun.IDB, ei *EngineInstance) error {
	_, err := idb.NewInsert().Model(ei).ExcludeColumn("id", "created_at", "updated_at").Returning("*").Exec(ctx)
	return translate(err)
}

// GetOrCreateEngineInstance returns the engine instance of ei.NamespaceUID, creating it
// from ei when missing (e.g. the default instance registered at start-up). ErrConflict if
// that namespace is registered on another engine cluster.
func (s *Store) GetOrCreateEngineInstance(ctx context.Context, idb bun.IDB, ei *EngineInstance) (*EngineInstance, error) {
	created := *ei
	res, err := idb.NewInsert().Model(&created).ExcludeColumn("id", "created_at", "updated_at").
		On("CONFLICT (namespace_uid) DO NOTHING").Returning("*").Exec(ctx)
	if err != nil {
		return nil, translate(err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return &created, nil
	}
	existing, err := s.GetEngineInstanceByNamespaceUID(ctx, idb, ei.NamespaceUID)
	if err != nil {
		return nil, err
	}
	if existing.EngineClusterID != ei.EngineClusterID {
		return nil, fmt.Errorf("namespace %s is an engine instance of another engine cluster: %w", ei.NamespaceUID, ErrConflict)
	}
	return existing, nil
}

// RegisterEngineInstance gets or creates the engine cluster called cluster and the engine
// instance of the namespace (identified by its UID: a re-created namespace is a new
// instance), in one transaction. An instance already registered keeps its id and state.
// ErrConflict if the namespace is registered on another engine cluster.
func (s *Store) RegisterEngineInstance(ctx context.Context, idb bun.IDB, cluster, namespace, namespaceUID string) (*EngineCluster, *EngineInstance, error) {
	var (
		ec *EngineCluster
		ei *EngineInstance
	)
	err := idb.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var err error
		if ec, err = s.GetOrCreateEngineCluster(ctx, tx, cluster, ""); err != nil {
			return fmt.Errorf("registering engine cluster %q: %w", cluster, err)
		}
		ei, err = s.GetOrCreateEngineInstance(ctx, tx, &EngineInstance{EngineClusterID: ec.ID, NamespaceName: namespace, NamespaceUID: namespaceUID})
		if errors.Is(err, ErrConflict) {
			return fmt.Errorf("engine namespace %s (UID %s) is registered on another engine cluster: %w", namespace, namespaceUID, err)
		}
		if err != nil {
			return fmt.Errorf("registering engine instance of namespace %q: %w", namespace, err)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return ec, ei, nil
}

// GetEngineInstance returns an engine instance by id.
func (s *Store) GetEngineInstance(ctx context.Context, idb bun.IDB, id string) (*EngineInstance, error) {
	ei := new(EngineInstance)
	if err := idb.NewSelect().Model(ei).Where("einstance.id = ?", id).Scan(ctx); err != nil {
		return nil, fmt.Errorf("engine instance %s: %w", id, translate(err))
	}
	return ei, nil
}

// GetEngineInstanceByNamespaceUID returns the engine instance that runs in a namespace: how
// a cluster-agent finds its own instance.
func (s *Store) GetEngineInstanceByNamespaceUID(ctx context.Context, idb bun.IDB, namespaceUID string) (*EngineInstance, error) {
	ei := new(EngineInstance)
	if err := idb.NewSelect().Model(ei).Where("einstance.namespace_uid = ?", namespaceUID).Scan(ctx); err != nil {
		return nil, fmt.Errorf("engine instance of namespace %s: %w", namespaceUID, translate(err))
	}
	return ei, nil
}

// ListEngineInstances returns every engine instance (placement reads them all).
func (s *Store) ListEngineInstances(ctx context.Context, idb bun.IDB) ([]EngineInstance, error) {
	var eis []EngineInstance
	err := idb.NewSelect().Model(&eis).Order("einstance.created_at", "einstance.id").Scan(ctx)
	return eis, translate(err)
}

// UpdateEngineInstance writes an instance's capacity weight and state (the only mutable
// columns) and refreshes ei from the row.
func (s *Store) UpdateEngineInstance(ctx context.Context, idb bun.IDB, ei *EngineInstance) error {
	res, err := idb.NewUpdate().Model(ei).
		Set("capacity_weight = ?", ei.CapacityWeight).
		Set("state = ?", ei.State).
		Set("updated_at = now()").
		WherePK().
		Returning("*").
		Exec(ctx)
	if err != nil {
		return translate(err)
	}
	return notFoundIfNone(res, "engine instance "+ei.ID)
}

// DeleteEngineInstance deletes an engine instance; ErrReferenced while applications or
// repository credentials still use it. Its operations and cluster access go with it, and
// its tenants become unplaced.
func (s *Store) DeleteEngineInstance(ctx context.Context, idb bun.IDB, id string) error {
	res, err := idb.NewDelete().Model((*EngineInstance)(nil)).Where("id = ?", id).Exec(ctx)
	if err != nil {
		return translateDelete(err)
	}
	return notFoundIfNone(res, "engine instance "+id)
}

// SetEngineClusterCredentials makes creds how the backend reaches the engine cluster called
// name, creating the cluster when missing: the cluster's credentials are updated in place,
// or created and attached. Call it in a transaction: the cluster row is locked meanwhile,
// so concurrent callers do not both attach new credentials.
func (s *Store) SetEngineClusterCredentials(ctx context.Context, idb bun.IDB, name string, creds *ClusterCredentials) (*EngineCluster, error) {
	if _, err := s.GetOrCreateEngineCluster(ctx, idb, name, ""); err != nil {
		return nil, err
	}
	c := new(EngineCluster)
	if err := idb.NewSelect().Model(c).Where("ecluster.name = ?", name).For("UPDATE").Scan(ctx); err != nil {
		return nil, fmt.Errorf("engine cluster %q: %w", name, translate(err))
	}
	if c.ClusterCredentialsID != "" {
		creds.ID = c.ClusterCredentialsID
		return c, s.UpdateClusterCredentials(ctx, idb, creds)
	}
	if err := s.CreateClusterCredentials(ctx, idb, creds); err != nil {
		return nil, err
	}
	c.ClusterCredentialsID = creds.ID
	_, err := idb.NewUpdate().Model(c).Column("cluster_credentials_id").Set("updated_at = now()").
		Where("ecluster.id = ?", c.ID).Returning("*").Exec(ctx)
	return c, translate(err)
}
