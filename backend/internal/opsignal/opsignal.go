// Package opsignal tells a cluster-agent that Argo CD must change: an Operation row (written in
// the caller's transaction, together with the rows it is about) and an Operation CR holding
// a row's id, created after the transaction commits. One CR stands for every operation of
// an engine instance written while the instance's signal is up (db.RaiseSignal): only the
// transaction that raises it creates a CR, so a burst of changes costs one API write, not
// one per change. The cluster-agent takes the signal down once it has every Waiting
// operation in its work queue.
package opsignal

import (
	"context"
	"errors"
	"fmt"

	"github.com/uptrace/bun"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/queue"
)

// OperationStore is the part of the database the signaller uses.
type OperationStore interface {
	CreateOperation(ctx context.Context, idb bun.IDB, op *db.Operation) error
	RaiseSignal(ctx context.Context, tx bun.IDB, op *db.Operation) (bool, error)
	GetSignal(ctx context.Context, idb bun.IDB, engineInstanceID string) (*db.OperationSignal, error)
	MarkSignalCRCreated(ctx context.Context, idb bun.IDB, engineInstanceID, operationID string) error
	GetEngineInstance(ctx context.Context, idb bun.IDB, id string) (*db.EngineInstance, error)
}

// Signaller creates Operations.
type Signaller struct {
	DB    bun.IDB
	Store OperationStore
	// Clusters gives the client of the engine cluster an Operation CR goes to.
	Clusters *Clusters
	// GCExpirationSeconds is how long finished operations are kept.
	GCExpirationSeconds int
}

// Row inserts an Operation row for (resourceType, resourceID) on engine and raises the
// engine's signal (op.Signalled when this transaction raised it); call it inside the
// transaction that changes the resource, then CRs after commit.
func (s *Signaller) Row(ctx context.Context, idb bun.IDB, engine *db.EngineInstance, tenantID string,
	resourceType db.OperationResourceType, resourceID string) (*db.Operation, error) {
	op := &db.Operation{
		EngineInstanceID:    engine.ID,
		ResourceType:        resourceType,
		ResourceID:          resourceID,
		OwnerTenantID:       tenantID,
		HumanReadableState:  "waiting for the cluster-agent",
		GCExpirationSeconds: s.GCExpirationSeconds,
	}
	if err := s.Store.CreateOperation(ctx, idb, op); err != nil {
		return nil, fmt.Errorf("creating %s operation: %w", resourceType, err)
	}
	if d, ok := ctx.Value(deferredKey{}).(*deferred); ok {
		d.ops = append(d.ops, op)
		return op, nil
	}
	if _, err := s.Store.RaiseSignal(ctx, idb, op); err != nil {
		return nil, fmt.Errorf("signalling %s operation: %w", resourceType, err)
	}
	return op, nil
}

// deferred holds the operations Row wrote in one transaction without raising their
// signals.
type deferred struct{ ops []*db.Operation }

type deferredKey struct{}

// Deferring is a txbatch.Batcher's Shared: Row, with a context from join, leaves the
// signals of the operations it writes to finish, which raises each engine instance's
// once for all of them at the end of the transaction. Until the commit the signal is as
// its one raise found it: its shared lock is held, so nobody takes it down.
func (s *Signaller) Deferring() (join func(context.Context) context.Context, finish func(context.Context, bun.Tx) error) {
	d := &deferred{}
	join = func(ctx context.Context) context.Context { return context.WithValue(ctx, deferredKey{}, d) }
	finish = func(ctx context.Context, tx bun.Tx) error { return s.raiseOnce(ctx, tx, d.ops) }
	return join, finish
}

// raiseOnce raises the signal of each engine instance of ops once, for the first of its
// operations, and marks the others as that raise found the signal: covered when this
// transaction raised it (the first one's caller creates the CR after the commit, and its
// reconcile retries until it has) or its CR existed; else each caller checks after the
// commit, as it would have in a transaction of its own.
func (s *Signaller) raiseOnce(ctx context.Context, tx bun.IDB, ops []*db.Operation) error {
	first := map[string]*db.Operation{}
	for _, op := range ops {
		raiser, seen := first[op.EngineInstanceID]
		if !seen {
			if _, err := s.Store.RaiseSignal(ctx, tx, op); err != nil {
				return fmt.Errorf("signalling %s operation: %w", op.ResourceType, err)
			}
			first[op.EngineInstanceID] = op
			continue
		}
		op.Signalled, op.CoveredBySignal = false, raiser.Signalled || raiser.CoveredBySignal
	}
	return nil
}

// CRs makes sure, after the transaction that wrote ops committed, that the signal of each
// of their engine instances has its CR: created when this transaction raised the signal,
// or when an earlier writer's creation failed (a retry passes the Waiting operations it
// finds). A signal already taken down needs none: the cluster-agent has the operations;
// nor does one whose CR the transaction saw (op.CoveredBySignal).
func (s *Signaller) CRs(ctx context.Context, ops ...*db.Operation) error {
	for engineID, op := range deciding(ops) {
		if op.CoveredBySignal {
			continue
		}
		if !op.Signalled {
			sig, err := s.Store.GetSignal(ctx, s.DB, engineID)
			if errors.Is(err, db.ErrNotFound) || (err == nil && sig.CRCreated) {
				continue
			}
			if err != nil {
				return err
			}
			op = &db.Operation{ID: sig.OperationID, EngineInstanceID: engineID}
		}
		engine, err := s.Store.GetEngineInstance(ctx, s.DB, engineID)
		if err != nil {
			return err
		}
		if err := s.CR(ctx, engine, op.ID); err != nil {
			return err
		}
	}
	return nil
}

// deciding picks, for each engine instance of ops, the operation that decides what its
// signal needs: the one whose transaction raised it, else one its transaction did not see
// covered by a CR, else any.
func deciding(ops []*db.Operation) map[string]*db.Operation {
	byEngine := map[string]*db.Operation{}
	for _, op := range ops {
		prev, seen := byEngine[op.EngineInstanceID]
		if !seen || (!prev.Signalled && (op.Signalled || (prev.CoveredBySignal && !op.CoveredBySignal))) {
			byEngine[op.EngineInstanceID] = op
		}
	}
	return byEngine
}

// +kubebuilder:rbac:groups=managed-gitops.redhat.com,resources=operations,verbs=create;delete

// CR creates the CR of the signal raised for operationID in the engine instance's
// namespace, on the instance's engine cluster, and records that it exists. It is
// idempotent, so a reconcile that crashed after commit creates it on its next run.
func (s *Signaller) CR(ctx context.Context, engine *db.EngineInstance, operationID string) error {
	return s.createCR(ctx, engine, operationID, false)
}

// createCR is CR; with replace, a CR of that name that exists is deleted and created
// again, since the cluster-agent acts on a CR's creation and the one that exists may be
// one it took before the database lost what it did.
func (s *Signaller) createCR(ctx context.Context, engine *db.EngineInstance, operationID string, replace bool) error {
	cl, err := s.Clusters.For(ctx, engine.EngineClusterID)
	if err != nil {
		return err
	}
	cr := &v1.Operation{
		ObjectMeta: metav1.ObjectMeta{Name: v1.OperationName(operationID), Namespace: engine.NamespaceName},
		Spec:       v1.OperationSpec{OperationID: operationID},
	}
	err = cl.Create(ctx, cr.DeepCopy())
	if apierrors.IsAlreadyExists(err) && replace {
		err = s.recreate(ctx, cl, cr)
	}
	if err != nil && !apierrors.IsAlreadyExists(err) {
		s.Clusters.Forget(engine.EngineClusterID)
		return fmt.Errorf("creating Operation CR %s/%s: %w", cr.Namespace, cr.Name, err)
	}
	return s.Store.MarkSignalCRCreated(ctx, s.DB, engine.ID, operationID)
}

// recreate deletes the Operation CR named as cr and creates cr. Without the right to
// delete it there (an engine cluster's stored credentials may allow only create), the CR
// that exists stays and the cluster-agent's sweep takes up the signal.
func (s *Signaller) recreate(ctx context.Context, cl client.Client, cr *v1.Operation) error {
	err := cl.Delete(ctx, cr.DeepCopy())
	switch {
	case apierrors.IsForbidden(err):
		ctrl.LoggerFrom(ctx).Info("Not allowed to replace an Operation CR; the cluster-agent's sweep takes up its signal",
			"namespace", cr.Namespace, "name", cr.Name)
		return nil
	case client.IgnoreNotFound(err) != nil:
		return err
	}
	return cl.Create(ctx, cr)
}

// PendingStore is the part of the database Outstanding uses.
type PendingStore interface {
	ListSignals(ctx context.Context, idb bun.IDB) ([]db.OperationSignal, error)
	ReviveSignal(ctx context.Context, idb bun.IDB, engineInstanceID string) (*db.Operation, error)
}

// Outstanding gives every signal that is up the CR of its instance's newest Waiting
// operation (db.ReviveSignal), replacing a CR of that name that exists. A backend killed
// between a transaction's commit and its CR leaves a signal without one, which no reconcile
// may create again (a deleted GitOpsDeployment is not reconciled again). A database that
// lost the cluster-agent's release of a signal (a crash with asynchronous commit, a
// failover to an asynchronous replica; either ends every connection) brings the signal back
// with its CR long taken, and the operations written under it since have none: without a
// new CR they would wait for the agent's sweep. When the agent is already taking the
// signal, the new CR costs it nothing.
//
// It is a controller of one item on the leader: it runs when it starts and when Wake is
// called (after the backend's notification listener reconnected), and a run that failed
// is retried with the workqueue's backoff.
type Outstanding struct {
	Signaller *Signaller
	Store     PendingStore
	// Queue hands the controller's workqueue to Wake.
	Queue queue.Handle[string]
}

// outstandingKey is Outstanding's only work item.
const outstandingKey = "signals"

// SetupWithManager adds Outstanding's controller.
func (o *Outstanding) SetupWithManager(mgr ctrl.Manager) error {
	return queue.OneItem(mgr, "outstanding-operations", outstandingKey, &o.Queue, o.Reconcile)
}

// Wake revives the signals that are up once more, soon.
func (o *Outstanding) Wake() { o.Queue.Add(outstandingKey) }

// Reconcile revives each signal that is up and returns the last error (the other signals
// are still revived).
func (o *Outstanding) Reconcile(ctx context.Context, _ string) (reconcile.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	sigs, err := o.Store.ListSignals(ctx, o.Signaller.DB)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("listing signals: %w", err)
	}
	created := 0
	var failed error
	for _, sig := range sigs {
		if err := o.revive(ctx, sig.EngineInstanceID); err != nil {
			log.Error(err, "Reviving a signal failed", "engineInstance", sig.EngineInstanceID)
			failed = err
			continue
		}
		created++
	}
	if created > 0 {
		log.Info("Signalled the unfinished operations", "signals", created)
	}
	return reconcile.Result{}, failed
}

func (o *Outstanding) revive(ctx context.Context, engineInstanceID string) error {
	newest, err := o.Store.ReviveSignal(ctx, o.Signaller.DB, engineInstanceID)
	if err != nil || newest == nil {
		return err // nil: taken down meanwhile, or nothing was Waiting
	}
	engine, err := o.Signaller.Store.GetEngineInstance(ctx, o.Signaller.DB, engineInstanceID)
	if err != nil {
		return err
	}
	return o.Signaller.createCR(ctx, engine, newest.ID, true)
}
