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
	"time"

	"github.com/go-logr/logr"
	"github.com/uptrace/bun"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
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
	raised, err := s.Store.RaiseSignal(ctx, idb, op)
	if err != nil {
		return nil, fmt.Errorf("signalling %s operation: %w", resourceType, err)
	}
	op.Signalled = raised
	return op, nil
}

// CRs makes sure, after the transaction that wrote ops committed, that the signal of each
// of their engine instances has its CR: created when this transaction raised the signal,
// or when an earlier writer's creation failed (a retry passes the Waiting operations it
// finds). A signal already taken down needs none: the cluster-agent has the operations.
func (s *Signaller) CRs(ctx context.Context, ops ...*db.Operation) error {
	raisedBy := map[string]*db.Operation{}
	for _, op := range ops {
		if _, seen := raisedBy[op.EngineInstanceID]; !seen || op.Signalled {
			raisedBy[op.EngineInstanceID] = op
		}
	}
	for engineID, op := range raisedBy {
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

// Outstanding is a leader-elected Runnable that gives every signal that is up the CR of
// its instance's newest Waiting operation (db.ReviveSignal): once when the backend starts,
// and again whenever Again is called, as it is after the backend's connection to the
// database was lost. A backend killed between a transaction's commit and its CR leaves a
// signal without one, which no reconcile may create again (a deleted GitOpsDeployment is
// not reconciled again). A database that lost the cluster-agent's release of a signal (a
// crash with asynchronous commit, a failover to an asynchronous replica; either ends every
// connection) brings the signal back with its CR long taken, and the operations written
// under it since have none: without a new CR they would wait for the agent's sweep. When
// the agent is already taking the signal, the new CR costs it nothing.
type Outstanding struct {
	signaller *Signaller
	store     PendingStore
	again     chan struct{}
}

// NewOutstanding returns an Outstanding that creates CRs with signaller.
func NewOutstanding(signaller *Signaller, store PendingStore) *Outstanding {
	return &Outstanding{signaller: signaller, store: store, again: make(chan struct{}, 1)}
}

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (o *Outstanding) NeedLeaderElection() bool { return true }

// Again has the leader revive the signals that are up once more; it never blocks. On a
// replica that is not the leader it is remembered until the replica leads.
func (o *Outstanding) Again() {
	select {
	case o.again <- struct{}{}:
	default:
	}
}

// Start implements manager.Runnable: it revives the signals, then again on each call of
// Again, until ctx ends. A pass that failed (the database or an engine cluster not
// answering yet) is logged and tried again with backoff; a later reconcile that finds its
// operations Waiting creates a missing CR too, and the agents' sweeps take up a signal.
func (o *Outstanding) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("outstanding-operations")
	backoff := reviveMinBackoff
	for {
		var retry <-chan time.Time
		if err := o.revive(ctx, log); err != nil {
			retry = time.After(backoff)
			backoff = min(2*backoff, reviveMaxBackoff)
		} else {
			backoff = reviveMinBackoff
		}
		select {
		case <-ctx.Done():
			return nil
		case <-o.again:
		case <-retry:
		}
	}
}

// The wait before a failed pass of Outstanding is tried again.
const (
	reviveMinBackoff = time.Second
	reviveMaxBackoff = time.Minute
)

// revive gives each signal that is up the CR of its newest Waiting operation, and returns
// the last error (the other signals are still revived).
func (o *Outstanding) revive(ctx context.Context, log logr.Logger) error {
	sigs, err := o.store.ListSignals(ctx, o.signaller.DB)
	if err != nil {
		log.Error(err, "Listing signals failed")
		return err
	}
	created := 0
	var failed error
	for _, sig := range sigs {
		if err := o.reviveOne(ctx, sig.EngineInstanceID); err != nil {
			log.Error(err, "Reviving a signal failed", "engineInstance", sig.EngineInstanceID)
			failed = err
			continue
		}
		created++
	}
	if created > 0 {
		log.Info("Signalled the unfinished operations", "signals", created)
	}
	return failed
}

func (o *Outstanding) reviveOne(ctx context.Context, engineInstanceID string) error {
	newest, err := o.store.ReviveSignal(ctx, o.signaller.DB, engineInstanceID)
	if err != nil || newest == nil {
		return err // nil: taken down meanwhile, or nothing was Waiting
	}
	engine, err := o.signaller.Store.GetEngineInstance(ctx, o.signaller.DB, engineInstanceID)
	if err != nil {
		return err
	}
	return o.signaller.createCR(ctx, engine, newest.ID, true)
}
