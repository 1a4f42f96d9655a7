package pipeline

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/uptrace/bun"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/argocd"
	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/dbtest"
)

// A database that lost the cluster-agent's release of its signal (a crash with asynchronous
// commit, a failover to an asynchronous replica) brings the signal back with its CR long
// taken, so the backend creates no CR for what it writes next and the agent does not look.
// Either event ends the backend's connections; once its notification listener has
// reconnected, what was written under that signal is deployed, without the agent's sweep
// (off here).
func TestASignalTheDatabaseBroughtBackIsRevivedWhenTheBackendReconnects(t *testing.T) {
	t.Parallel()
	s, lost := startLosingSignal(t)
	lost.bringSignalBack(lost.operation())

	second := s.deploy("second", v1.GitOpsDeploymentSpecTypeAutomated)
	secondApp := func() error {
		return cp.Client.Get(s.ctx, client.ObjectKey{Namespace: s.engine, Name: argocd.ApplicationName(second.UID)}, &argov1alpha1.Application{})
	}
	s.g.Consistently(secondApp, 2*time.Second, poll).ShouldNot(Succeed(), "written under the signal that is back: nobody looks")

	lost.endListener()
	s.g.Eventually(secondApp, eventually, poll).Should(Succeed())
	lost.signalTakenDown()
}

// The same loss can take the agent's work on the operation that raised the signal with it:
// that operation is Waiting again and its CR still exists, which wakes nobody, so the
// backend replaces the CR.
func TestAnOperationWhoseCRExistsIsRevivedWhenTheBackendReconnects(t *testing.T) {
	t.Parallel()
	s, lost := startLosingSignal(t)
	op := lost.operation()
	s.g.Expect(cp.Client.Get(s.ctx, client.ObjectKey{Namespace: s.engine, Name: v1.OperationName(op.ID)}, &v1.Operation{})).
		To(Succeed(), "the CR the agent took is still there")
	_, err := lost.database.NewUpdate().Model((*db.Operation)(nil)).Set("state = ?, gc_expires_at = NULL", db.OperationWaiting).Where("id = ?", op.ID).Exec(s.ctx)
	s.g.Expect(err).NotTo(HaveOccurred())
	lost.bringSignalBack(op)
	state := func() (db.OperationState, error) {
		got, err := lost.store.GetOperation(s.ctx, lost.database, op.ID)
		if err != nil {
			return "", err
		}
		return got.State, nil
	}
	s.g.Consistently(state, 2*time.Second, poll).Should(Equal(db.OperationWaiting), "nobody looks")

	lost.endListener()
	s.g.Eventually(state, eventually, poll).Should(Equal(db.OperationCompleted))
	lost.signalTakenDown()
}

// lostSignal is the database side of a service whose first deployment is done.
type lostSignal struct {
	s        *service
	database *bun.DB
	store    *db.Store
}

// startLosingSignal starts the service and deploys once, until the agent took its signal
// down.
func startLosingSignal(t *testing.T) (*service, *lostSignal) {
	s := startService(t)
	l := &lostSignal{s: s, database: dbtest.Open(t, s.database), store: db.NewStore(nil)}
	s.application(s.deploy("first", v1.GitOpsDeploymentSpecTypeAutomated))
	l.signalTakenDown()
	return s, l
}

func (l *lostSignal) signalTakenDown() {
	l.s.g.Eventually(func() ([]db.OperationSignal, error) { return l.store.ListSignals(l.s.ctx, l.database) },
		eventually, poll).Should(BeEmpty(), "the cluster-agent took its signal down")
}

// operation is the newest operation.
func (l *lostSignal) operation() db.Operation {
	ops, err := l.store.ListOperations(l.s.ctx, l.database, db.OperationFilter{Limit: 1})
	l.s.g.Expect(err).NotTo(HaveOccurred())
	l.s.g.Expect(ops).To(HaveLen(1))
	return ops[0]
}

// bringSignalBack puts back the signal raised for op, as the lost release leaves it.
func (l *lostSignal) bringSignalBack(op db.Operation) {
	_, err := l.database.NewInsert().Model(&db.OperationSignal{EngineInstanceID: op.EngineInstanceID, OperationID: op.ID, CRCreated: true}).
		On("CONFLICT (engine_instance_id) DO UPDATE").Set("operation_id = EXCLUDED.operation_id, cr_created = true").Exec(l.s.ctx)
	l.s.g.Expect(err).NotTo(HaveOccurred())
}

// endListener ends the connection of the backend's notification listener, as a database
// restart or failover does.
func (l *lostSignal) endListener() {
	var ended int
	l.s.g.Expect(l.database.NewRaw(`SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND query ILIKE 'LISTEN%'`).Scan(l.s.ctx, &ended)).To(Succeed())
	l.s.g.Expect(ended).To(BeNumerically(">=", 1), "the backend's notification listener was connected")
}
