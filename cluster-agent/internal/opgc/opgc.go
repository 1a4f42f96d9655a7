// Package opgc garbage-collects finished operations: a leader-elected manager Runnable that
// periodically deletes the operation rows whose retention expired, with their Operation
// CRs, and removes the Operation CRs whose row no longer exists.
package opgc

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/periodic"
	"github.com/gitops-service/gitops-service/cluster-agent/internal/engine"
)

// Defaults of the collector.
const (
	DefaultInterval  = time.Minute
	DefaultBatchSize = 100
)

// Store is the part of the database the collector uses.
type Store interface {
	GarbageCollectOperations(ctx context.Context, idb bun.IDB, now time.Time, limit int) ([]db.Operation, error)
	HasOperations(ctx context.Context, idb bun.IDB, engineInstanceID string) (bool, error)
}

// ExistingFunc returns which of the given operation ids still have a row.
type ExistingFunc func(ctx context.Context, idb bun.IDB, ids []string) (map[string]bool, error)

// Collector deletes expired operations and their CRs.
type Collector struct {
	// Client deletes Operation CRs, and lists them from the manager's cache.
	Client   client.Client
	DB       bun.IDB
	Store    Store
	Identity engine.Identity
	// Interval between runs (jittered); zero or less disables the collector.
	Interval time.Duration
	// BatchSize is how many rows one transaction deletes (default 100).
	BatchSize int
	// Existing checks which ids have rows (default: ExistingOperationIDs).
	Existing ExistingFunc

	// drained is set by a run after which the instance had no operation left.
	drained bool
}

// +kubebuilder:rbac:groups=managed-gitops.redhat.com,resources=operations,verbs=get;list;watch;delete

// Task runs the collector every Interval (jittered; 0 disables it), on the leader.
func (c *Collector) Task() *periodic.Task {
	return &periodic.Task{Name: "operation-gc", Interval: c.Interval, Run: c.Collect}
}

// Collect deletes every expired operation, batch by batch, then the orphaned CRs. Once a
// run left the instance without operations, later runs read nothing until an Operation CR
// appears: every new operation is written under a signal, and a signal comes with a CR
// that stays until its row is collected, so an idle instance costs the database nothing.
// (Rows are collected whatever their instance, so another instance's expired rows wait
// for a run of an agent that reads.)
func (c *Collector) Collect(ctx context.Context) error {
	crs := &v1.OperationList{}
	if err := c.Client.List(ctx, crs, client.InNamespace(c.Identity.Namespace)); err != nil {
		return fmt.Errorf("listing Operations: %w", err)
	}
	if len(crs.Items) == 0 && c.drained {
		return nil
	}
	present := make(map[string]bool, len(crs.Items))
	for _, cr := range crs.Items {
		present[cr.Name] = true
	}
	batch := c.BatchSize
	if batch <= 0 {
		batch = DefaultBatchSize
	}
	total := 0
	collected := map[string]bool{}
	for {
		n, err := c.collectBatch(ctx, batch, collected, present)
		total += n
		if err != nil {
			return err
		}
		if n < batch {
			break
		}
	}
	orphans, err := c.sweepOrphans(ctx, crs, collected)
	if total > 0 || orphans > 0 {
		ctrl.LoggerFrom(ctx).Info("Garbage-collected operations", "rows", total, "orphanedCRs", orphans)
	}
	if err != nil {
		return err
	}
	left, err := c.Store.HasOperations(ctx, c.DB, c.Identity.InstanceID)
	c.drained = err == nil && !left
	return err
}

// collectBatch deletes up to batch expired rows and the CRs of this instance's ones that
// exist (present: most operations have none, being written under another's signal) in
// one transaction: if a CR cannot be deleted, the rows stay and the next run tries again.
// Other instances' CRs live in their own namespaces; their agents sweep them as orphans.
// The ids of the rows it deleted go into collected.
func (c *Collector) collectBatch(ctx context.Context, batch int, collected, present map[string]bool) (int, error) {
	n := 0
	err := c.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		ops, err := c.Store.GarbageCollectOperations(ctx, tx, time.Now(), batch)
		if err != nil {
			return fmt.Errorf("deleting expired operations: %w", err)
		}
		n = len(ops)
		for _, op := range ops {
			collected[op.ID] = true
			if op.EngineInstanceID != c.Identity.InstanceID || !present[v1.OperationName(op.ID)] {
				continue
			}
			if err := c.deleteCR(ctx, v1.OperationName(op.ID)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// sweepOrphans deletes the Operation CRs of the namespace (list, read before the expired
// rows went; the CRs of the collected rows went with them) whose row is gone. A row is
// committed before its CR is created and deleted with it, so a CR without a row is an
// orphan whatever its state: its row was garbage-collected while the CR's deletion failed,
// or the row was lost (a database restored from a backup, or failed over to an asynchronous
// replica, loses the last committed transactions). An unfinished one would otherwise stay
// forever, since nothing reconciles an Operation CR again after its create event.
func (c *Collector) sweepOrphans(ctx context.Context, list *v1.OperationList, collected map[string]bool) (int, error) {
	var ids []string
	names := map[string][]string{}
	for _, cr := range list.Items {
		id := cr.Spec.OperationID
		if _, err := uuid.Parse(id); err != nil {
			// Not an id at all: deleted once the operation controller marked it Failed.
			if cr.Status.State == v1.OperationStateFailed {
				if err := c.deleteCR(ctx, cr.Name); err != nil {
					return 0, err
				}
			}
			continue
		}
		if collected[id] && cr.Name == v1.OperationName(id) {
			continue // deleted with its row in this run
		}
		if _, seen := names[id]; !seen {
			ids = append(ids, id)
		}
		names[id] = append(names[id], cr.Name)
	}
	existing := c.Existing
	if existing == nil {
		existing = ExistingOperationIDs
	}
	deleted := 0
	for start := 0; start < len(ids); start += DefaultBatchSize * 5 {
		chunk := ids[start:min(start+DefaultBatchSize*5, len(ids))]
		found, err := existing(ctx, c.DB, chunk)
		if err != nil {
			return deleted, fmt.Errorf("checking which operations still exist: %w", err)
		}
		for _, id := range chunk {
			if found[id] {
				continue
			}
			for _, name := range names[id] {
				if err := c.deleteCR(ctx, name); err != nil {
					return deleted, err
				}
				deleted++
			}
		}
	}
	return deleted, nil
}

func (c *Collector) deleteCR(ctx context.Context, name string) error {
	cr := &v1.Operation{}
	cr.Namespace, cr.Name = c.Identity.Namespace, name
	if err := c.Client.Delete(ctx, cr); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting Operation %s: %w", name, err)
	}
	return nil
}

// ExistingOperationIDs returns which of ids (valid UUIDs) have an operation row.
func ExistingOperationIDs(ctx context.Context, idb bun.IDB, ids []string) (map[string]bool, error) {
	found := map[string]bool{}
	if len(ids) == 0 {
		return found, nil
	}
	var rows []string
	err := idb.NewSelect().Model((*db.Operation)(nil)).Column("op.id").
		Where("op.id IN (?)", bun.List(ids)).
		Scan(ctx, &rows)
	if err != nil {
		return nil, err
	}
	for _, id := range rows {
		found[id] = true
	}
	return found, nil
}
