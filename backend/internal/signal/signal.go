// Package signal tells a cluster-agent that Argo CD must change: an Operation row (written in
// the caller's transaction, together with the rows it is about) and an Operation CR holding
// only the row's id, created after the transaction commits.
package signal

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	managedgitopsv1alpha1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
)

// OperationStore is the part of the database the signaller uses.
type OperationStore interface {
	CreateOperation(ctx context.Context, idb bun.IDB, op *db.Operation) error
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

// Row inserts an Operation row for (resourceType, resourceID) on engine; call it inside the
// transaction that changes the resource, then CR after commit.
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
	return op, nil
}

// CRs creates the Operation CRs of ops (after the transaction that wrote them committed),
// each in the namespace of its own engine instance.
func (s *Signaller) CRs(ctx context.Context, ops ...*db.Operation) error {
	engines := map[string]*db.EngineInstance{}
	for _, op := range ops {
		engine, ok := engines[op.EngineInstanceID]
		if !ok {
			var err error
			if engine, err = s.Store.GetEngineInstance(ctx, s.DB, op.EngineInstanceID); err != nil {
				return err
			}
			engines[op.EngineInstanceID] = engine
		}
		if err := s.CR(ctx, engine, op); err != nil {
			return err
		}
	}
	return nil
}

// +kubebuilder:rbac:groups=managed-gitops.redhat.com,resources=operations,verbs=create

// CR creates the Operation CR of op in the engine instance's namespace, on the instance's
// engine cluster. It is idempotent, so a reconcile that crashed after commit creates it on
// its next run.
func (s *Signaller) CR(ctx context.Context, engine *db.EngineInstance, op *db.Operation) error {
	cl, err := s.Clusters.For(ctx, engine.EngineClusterID)
	if err != nil {
		return err
	}
	cr := &managedgitopsv1alpha1.Operation{
		ObjectMeta: metav1.ObjectMeta{Name: CRName(op.ID), Namespace: engine.NamespaceName},
		Spec:       managedgitopsv1alpha1.OperationSpec{OperationID: op.ID},
	}
	if err := cl.Create(ctx, cr); err != nil && !apierrors.IsAlreadyExists(err) {
		s.Clusters.Forget(engine.EngineClusterID)
		return fmt.Errorf("creating Operation CR %s/%s: %w", cr.Namespace, cr.Name, err)
	}
	return nil
}

// CRName is the name of an operation's CR.
func CRName(operationID string) string { return "operation-" + operationID }

// PendingStore is the part of the database Outstanding reads.
type PendingStore interface {
	ListEngineInstances(ctx context.Context, idb bun.IDB) ([]db.EngineInstance, error)
	ListPendingOperations(ctx context.Context, idb bun.IDB, engineInstanceID string) ([]db.Operation, error)
}

// Outstanding is a leader-elected Runnable that, once when the backend starts, creates the
// Operation CRs of every unfinished operation. A backend killed between a transaction's
// commit and its CRs leaves operations that no reconcile may signal again (a deleted
// GitOpsDeployment is not reconciled again); creating a CR that exists is a no-op.
type Outstanding struct {
	Signaller *Signaller
	Store     PendingStore
}

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (o *Outstanding) NeedLeaderElection() bool { return true }

// Start implements manager.Runnable; it returns once done, logging what failed (the
// agents' sweeps re-create missing CRs too).
func (o *Outstanding) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("outstanding-operations")
	engines, err := o.Store.ListEngineInstances(ctx, o.Signaller.DB)
	if err != nil {
		log.Error(err, "Listing engine instances failed")
		return nil
	}
	created := 0
	for i := range engines {
		ops, err := o.Store.ListPendingOperations(ctx, o.Signaller.DB, engines[i].ID)
		if err != nil {
			log.Error(err, "Listing unfinished operations failed", "engineInstance", engines[i].ID)
			continue
		}
		for j := range ops {
			if err := o.Signaller.CR(ctx, &engines[i], &ops[j]); err != nil {
				// Most likely the engine's cluster cannot be reached: trying its other
				// operations would only wait out the same error (the agent's sweep and
				// resync cover them).
				log.Error(err, "Creating the CR of an unfinished operation failed; skipping the instance's others",
					"operation", ops[j].ID, "engineInstance", engines[i].ID, "skipped", len(ops)-j-1)
				break
			}
			created++
		}
	}
	if created > 0 {
		log.Info("Signalled the unfinished operations", "operations", created)
	}
	return nil
}
