// Package sweep is the backend's safety net for deletions nobody saw: a leader-elected
// manager Runnable that periodically walks the rows that stand for API CRs and removes, through
// the controllers' own deletion path, those whose CR no longer exists (deleted while the
// backend was down), and removes the tenants whose namespace no longer exists (deleted
// before its CRs were processed), with Operations that delete their Argo CD objects. The
// other way round, it puts the CRs that have no rows back into their controller's queue
// (rows lost by the database, or a controller that keeps failing on them).
//
// Reads: existence is first checked in the manager's cache (the backend watches all four
// kinds and Namespaces, so the scan costs the API server nothing); a row is only removed
// after the API server itself (the manager's APIReader) confirmed that its CR, or its
// tenant's namespace, is gone. Any error reading either skips the row for this round.
package sweep

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/uptrace/bun"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/periodic"
	"github.com/gitops-service/gitops-service/backend/internal/crcleanup"
	"github.com/gitops-service/gitops-service/backend/internal/notifyroute"
	"github.com/gitops-service/gitops-service/backend/internal/opsignal"
)

// Defaults of the sweep.
const (
	DefaultInterval = 10 * time.Minute
	// DefaultBatchSize is large enough that a sweep of thousands of deployments costs a
	// few statements: the statements, not the rows, are what an idle installation pays.
	DefaultBatchSize = 1000
	DefaultPause     = 100 * time.Millisecond
)

// Metric labels of what is not a CR kind.
const (
	// KindDeployment labels the GitOpsDeployment rows (deployment mappings).
	KindDeployment = "GitOpsDeployment"
	// KindTenant labels tenants removed because their namespace is gone.
	KindTenant = "Tenant"
)

var (
	removedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gitops_backend_sweep_removed_total",
		Help: "Rows the periodic sweep removed, or handed to their controller to remove, because their CR (or, for kind Tenant, their namespace) no longer exists, by kind.",
	}, []string{"kind"})
	requeuedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gitops_backend_sweep_requeued_total",
		Help: "CRs the periodic sweep put back into their controller's queue because they had no rows, by kind.",
	}, []string{"kind"})
	runsTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "gitops_backend_sweep_runs_total",
		Help: "Runs of the periodic sweep.",
	})
)

func init() {
	ctrlmetrics.Registry.MustRegister(removedTotal, requeuedTotal, runsTotal)
}

// Store is the part of the database the sweep uses.
type Store interface {
	ListDeploymentMappingsAfter(ctx context.Context, idb bun.IDB, afterUID string, limit int) ([]db.DeploymentMapping, error)
	ListAPICRMappingsAfter(ctx context.Context, idb bun.IDB, afterKind db.APIResourceType, afterUID string, limit int) ([]db.APICRMapping, error)
	ListTenantsAfter(ctx context.Context, idb bun.IDB, afterID string, limit int) ([]db.Tenant, error)
	ListTenantResources(ctx context.Context, idb bun.IDB, tenantID string) ([]db.TenantResource, error)
	DeleteTenant(ctx context.Context, idb bun.IDB, id string) error
	GetDeploymentMapping(ctx context.Context, idb bun.IDB, tenantID, deploymentUID string) (*db.DeploymentMapping, error)
	GetAPICRMapping(ctx context.Context, idb bun.IDB, tenantID string, kind db.APIResourceType, uid string) (*db.APICRMapping, error)
}

// Kind is how the sweep handles the rows of one CR kind.
type Kind struct {
	// New returns an empty CR of the kind.
	New func() client.Object
	// Queue is the workqueue of the kind's controller. The name of a CR that no longer
	// exists goes into it: reconciling it is the controller's deletion path, which removes
	// the rows of every incarnation of that name and signals the Operations, exactly as on
	// a deletion event.
	Queue *notifyroute.Queue
	// Remover, if set, removes the rows of an earlier incarnation of a CR that exists again
	// under the same name (a crcleanup.Remover keeping the live UID). Without one, such rows
	// are left to the controller, which removes them when it reconciles the new CR.
	Remover *crcleanup.Remover
	// NewList, if set, lets the sweep check the other way round: a CR of the kind that has
	// no row although it was created before the run started goes back into the
	// controller's queue. Its rows were lost (a database restored from a backup, or failed
	// over to an asynchronous replica, loses the last committed transactions), or the
	// controller keeps failing on it; either way, reconciling it again is what fixes it.
	NewList func() client.ObjectList
}

// Sweeper is the Runnable.
type Sweeper struct {
	// Cache is the manager's cache (CRs and Namespaces); APIReader reads the API server
	// directly, to confirm that something is gone before anything is removed.
	Cache     client.Reader
	APIReader client.Reader
	DB        *bun.DB
	Store     Store
	Signal    *opsignal.Signaller
	// Kinds by kind name: KindDeployment for the deployment mappings, the
	// db.APIResourceType for the API CR mappings. Rows of a kind without an entry are kept.
	Kinds map[string]Kind
	// Interval between runs (jittered ±20%), the first one interval after start; zero or
	// less disables the sweep.
	Interval time.Duration
	// BatchSize is how many rows one query reads (default 1000); Pause is the wait between
	// batches (default 100ms), so that a sweep never loads the database.
	BatchSize int
	Pause     time.Duration
}

// Task runs the sweep every Interval (jittered; 0 disables it), on the leader.
func (s *Sweeper) Task() *periodic.Task {
	return &periodic.Task{Name: "sweep", Interval: s.Interval, Run: func(ctx context.Context) error {
		_, err := s.Run(ctx)
		return err
	}}
}

// Result counts what one run did.
type Result struct {
	// Checked rows and tenants; Removed by kind (rows of gone CRs: handed to their
	// controller, which removes them); Skipped because of an error (retried next run).
	Checked int
	Removed map[string]int
	Skipped int
	// Requeued CRs without rows, by kind.
	Requeued map[string]int
	// live holds, by kind, the UIDs of the CRs whose rows the run found.
	live map[string]map[string]bool
}

// Run sweeps once: the tenants first (so that the rows of a gone namespace go with their
// tenant), then the deployment mappings, then the API CR mappings; last, the CRs without
// rows are requeued.
func (s *Sweeper) Run(ctx context.Context) (Result, error) {
	runsTotal.Inc()
	res := Result{Removed: map[string]int{}, Requeued: map[string]int{}, live: map[string]map[string]bool{}}
	start := time.Now()
	err := errors.Join(s.sweepTenants(ctx, &res), s.sweepDeployments(ctx, &res), s.sweepAPICRs(ctx, &res))
	if err == nil {
		// Only after a complete walk: a CR is unmapped only if no batch had its row.
		err = s.requeueUnmapped(ctx, &res, start)
	}
	removed := 0
	for kind, n := range res.Removed {
		removedTotal.WithLabelValues(kind).Add(float64(n))
		removed += n
	}
	for kind, n := range res.Requeued {
		requeuedTotal.WithLabelValues(kind).Add(float64(n))
	}
	ctrl.LoggerFrom(ctx).Info("Swept rows of gone CRs", "checked", res.Checked, "removed", removed,
		"removedByKind", res.Removed, "requeuedByKind", res.Requeued, "skipped", res.Skipped,
		"duration", time.Since(start).Round(time.Millisecond))
	return res, err
}

// requeueUnmapped puts the CRs created before start that have no row back into their
// controller's queue.
func (s *Sweeper) requeueUnmapped(ctx context.Context, res *Result, start time.Time) error {
	var errs []error
	for name, kind := range s.Kinds {
		if kind.NewList == nil {
			continue
		}
		list := kind.NewList()
		if err := s.Cache.List(ctx, list); err != nil {
			errs = append(errs, fmt.Errorf("listing %s: %w", name, err))
			continue
		}
		live := res.live[name]
		err := meta.EachListItem(list, func(o runtime.Object) error {
			obj := o.(client.Object)
			if live[string(obj.GetUID())] || !obj.GetCreationTimestamp().Time.Before(start) || obj.GetDeletionTimestamp() != nil {
				return nil
			}
			ctrl.LoggerFrom(ctx).V(1).Info("Reconciling a CR without rows again", "kind", name,
				"namespace", obj.GetNamespace(), "name", obj.GetName())
			kind.Queue.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
			res.Requeued[name]++
			return nil
		})
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (s *Sweeper) batchSize() int {
	if s.BatchSize > 0 {
		return s.BatchSize
	}
	return DefaultBatchSize
}

// pause waits between batches; false if ctx ended.
func (s *Sweeper) pause(ctx context.Context) bool {
	d := s.Pause
	if d <= 0 {
		d = DefaultPause
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func (s *Sweeper) sweepTenants(ctx context.Context, res *Result) error {
	after := ""
	for {
		batch, err := s.Store.ListTenantsAfter(ctx, s.DB, after, s.batchSize())
		if err != nil {
			return fmt.Errorf("listing tenants: %w", err)
		}
		for i := range batch {
			tenant := &batch[i]
			after = tenant.ID
			res.Checked++
			gone, err := s.namespaceGone(ctx, tenant)
			if err != nil {
				ctrl.LoggerFrom(ctx).V(1).Info("Skipping tenant this round", "tenant", tenant.ID, "error", err.Error())
				res.Skipped++
				continue
			}
			if !gone {
				continue
			}
			if err := s.removeTenant(ctx, tenant); err != nil {
				ctrl.LoggerFrom(ctx).Error(err, "Removing the tenant of a gone namespace failed", "tenant", tenant.ID, "namespace", tenant.NamespaceName)
				res.Skipped++
				continue
			}
			res.Removed[KindTenant]++
		}
		if len(batch) < s.batchSize() || !s.pause(ctx) {
			return ctx.Err()
		}
	}
}

// namespaceGone reports whether the tenant's namespace (that name with that UID) no
// longer exists, confirmed by the API server.
func (s *Sweeper) namespaceGone(ctx context.Context, tenant *db.Tenant) (bool, error) {
	key := client.ObjectKey{Name: tenant.NamespaceName}
	ns := &corev1.Namespace{}
	if err := s.Cache.Get(ctx, key, ns); err == nil && string(ns.UID) == tenant.NamespaceUID {
		return false, nil
	} else if err != nil && !apierrors.IsNotFound(err) {
		return false, err
	}
	ns = &corev1.Namespace{}
	err := s.APIReader.Get(ctx, key, ns)
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, err
	}
	// A namespace of that name with another UID is a new tenant's.
	return string(ns.UID) != tenant.NamespaceUID, nil
}

// removeTenant deletes a tenant whose namespace is gone, with all its rows (by cascade),
// and an Operation for each Argo CD object made from them and for its AppProject, in one
// transaction; then creates the Operation CRs.
func (s *Sweeper) removeTenant(ctx context.Context, tenant *db.Tenant) error {
	var ops []*db.Operation
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		ops = nil
		resources, err := s.Store.ListTenantResources(ctx, tx, tenant.ID)
		if err != nil {
			return err
		}
		for _, r := range resources {
			engine := r.EngineInstanceID
			if engine == "" {
				engine = tenant.EngineInstanceID
			}
			if engine == "" {
				continue // never placed, so nothing was made in Argo CD
			}
			op, err := s.Signal.Row(ctx, tx, &db.EngineInstance{ID: engine}, tenant.ID, r.ResourceType, r.ID)
			if err != nil {
				return err
			}
			ops = append(ops, op)
		}
		if tenant.EngineInstanceID != "" {
			op, err := s.Signal.Row(ctx, tx, &db.EngineInstance{ID: tenant.EngineInstanceID}, tenant.ID, db.OperationResourceAppProject, tenant.ID)
			if err != nil {
				return err
			}
			ops = append(ops, op)
		}
		if err := s.Store.DeleteTenant(ctx, tx, tenant.ID); err != nil && !errors.Is(err, db.ErrNotFound) {
			return err
		}
		return nil
	})
	if err != nil {
		return err
	}
	ctrl.LoggerFrom(ctx).Info("Removed the tenant of a gone namespace", "tenant", tenant.ID, "namespace", tenant.NamespaceName, "operations", len(ops))
	return s.Signal.CRs(ctx, ops...)
}

// row is a mapping of either table.
type row struct {
	kind, uid, namespace, name, tenantID string
}

func (s *Sweeper) sweepDeployments(ctx context.Context, res *Result) error {
	if _, ok := s.Kinds[KindDeployment]; !ok {
		return nil
	}
	after := ""
	for {
		batch, err := s.Store.ListDeploymentMappingsAfter(ctx, s.DB, after, s.batchSize())
		if err != nil {
			return fmt.Errorf("listing deployment mappings: %w", err)
		}
		for _, m := range batch {
			after = m.DeploymentUID
			s.sweepRow(ctx, res, row{kind: KindDeployment, uid: m.DeploymentUID, namespace: m.DeploymentNamespace,
				name: m.DeploymentName, tenantID: m.TenantID})
		}
		if len(batch) < s.batchSize() || !s.pause(ctx) {
			return ctx.Err()
		}
	}
}

func (s *Sweeper) sweepAPICRs(ctx context.Context, res *Result) error {
	var afterKind db.APIResourceType
	afterUID := ""
	for {
		batch, err := s.Store.ListAPICRMappingsAfter(ctx, s.DB, afterKind, afterUID, s.batchSize())
		if err != nil {
			return fmt.Errorf("listing API CR mappings: %w", err)
		}
		for _, m := range batch {
			afterKind, afterUID = m.APIResourceType, m.APIResourceUID
			if _, ok := s.Kinds[string(m.APIResourceType)]; !ok {
				continue
			}
			s.sweepRow(ctx, res, row{kind: string(m.APIResourceType), uid: m.APIResourceUID, namespace: m.APIResourceNamespace,
				name: m.APIResourceName, tenantID: m.TenantID})
		}
		if len(batch) < s.batchSize() || !s.pause(ctx) {
			return ctx.Err()
		}
	}
}

// sweepRow has the rows of r removed if its CR is gone: by its controller, or, for an
// earlier incarnation of a CR that exists again, by the kind's Remover.
func (s *Sweeper) sweepRow(ctx context.Context, res *Result, r row) {
	log := ctrl.LoggerFrom(ctx).WithValues("kind", r.kind, "namespace", r.namespace, "name", r.name, "uid", r.uid)
	res.Checked++
	kind := s.Kinds[r.kind]
	liveUID, err := s.liveUID(ctx, kind, r)
	if err != nil {
		log.V(1).Info("Skipping row this round", "error", err.Error())
		res.Skipped++
		return
	}
	switch {
	case liveUID == r.uid:
		// The CR exists: never touched.
		if res.live[r.kind] == nil {
			res.live[r.kind] = map[string]bool{}
		}
		res.live[r.kind][r.uid] = true
		return
	case liveUID == "":
		// The controller's deletion path, as on a deletion event.
		kind.Queue.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: r.namespace, Name: r.name}})
		log.Info("Handed the rows of a gone CR to its controller")
		res.Removed[r.kind]++
		return
	case kind.Remover != nil:
		err = kind.Remover.Remove(ctx, r.namespace, r.name, liveUID)
	default:
		log.V(1).Info("Leaving an earlier incarnation to the controller of the live CR", "liveUID", liveUID)
		return
	}
	if err != nil {
		log.Error(err, "Removing the rows of a gone CR failed")
		res.Skipped++
		return
	}
	// The controller resolves the tenant from the namespace: if that is not the row's
	// tenant (the namespace is gone or re-created), the row stays for the tenant sweep.
	if gone, err := s.rowGone(ctx, r); err != nil || !gone {
		log.V(1).Info("Row of a gone CR left for its tenant to be removed", "tenant", r.tenantID)
		res.Skipped++
		return
	}
	log.Info("Removed the rows of a gone CR")
	res.Removed[r.kind]++
}

// liveUID returns the UID of the CR called r.name in r.namespace, "" if there is none
// (confirmed by the API server when the cache shows none or another UID).
func (s *Sweeper) liveUID(ctx context.Context, kind Kind, r row) (string, error) {
	key := client.ObjectKey{Namespace: r.namespace, Name: r.name}
	obj := kind.New()
	err := s.Cache.Get(ctx, key, obj)
	if err == nil && string(obj.GetUID()) == r.uid {
		return r.uid, nil
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return "", err
	}
	obj = kind.New()
	err = s.APIReader.Get(ctx, key, obj)
	switch {
	case apierrors.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", err
	}
	return string(obj.GetUID()), nil
}

func (s *Sweeper) rowGone(ctx context.Context, r row) (bool, error) {
	var err error
	if r.kind == KindDeployment {
		_, err = s.Store.GetDeploymentMapping(ctx, s.DB, r.tenantID, r.uid)
	} else {
		_, err = s.Store.GetAPICRMapping(ctx, s.DB, r.tenantID, db.APIResourceType(r.kind), r.uid)
	}
	if errors.Is(err, db.ErrNotFound) {
		return true, nil
	}
	return false, err
}
