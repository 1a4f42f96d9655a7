package pipeline

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
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
// reconnected, what was written under that signal is deployed, long before the agent's
// sweep (10 minutes here) would find it.
func TestASignalTheDatabaseBroughtBackIsRevivedWhenTheBackendReconnects(t *testing.T) {
	t.Parallel()
	s := startService(t)
	database, store := dbtest.Open(t, s.database), db.NewStore(nil)
	first := s.deploy("first", v1.GitOpsDeploymentSpecTypeAutomated)
	s.application(first)
	s.g.Eventually(func() ([]db.OperationSignal, error) { return store.ListSignals(s.ctx, database) },
		eventually, poll).Should(BeEmpty(), "the cluster-agent took its signal down")

	ops, err := store.ListOperations(s.ctx, database, db.OperationFilter{Limit: 1})
	s.g.Expect(err).NotTo(HaveOccurred())
	s.g.Expect(ops).To(HaveLen(1))
	_, err = database.NewInsert().Model(&db.OperationSignal{
		EngineInstanceID: ops[0].EngineInstanceID, OperationID: ops[0].ID, CRCreated: true,
	}).Exec(s.ctx)
	s.g.Expect(err).NotTo(HaveOccurred(), "the signal is back, as the lost release leaves it")

	second := s.deploy("second", v1.GitOpsDeploymentSpecTypeAutomated)
	secondApp := func() error {
		return cp.Client.Get(s.ctx, client.ObjectKey{Namespace: s.engine, Name: argocd.ApplicationName(second.UID)}, &argov1alpha1.Application{})
	}
	s.g.Consistently(secondApp, 2*time.Second, poll).ShouldNot(Succeed(), "written under the signal that is back: nobody looks")

	var ended int
	s.g.Expect(database.NewRaw(`SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND query ILIKE 'LISTEN%'`).Scan(s.ctx, &ended)).To(Succeed())
	s.g.Expect(ended).To(BeNumerically(">=", 1), "the backend's notification listener was connected")
	s.g.Eventually(secondApp, eventually, poll).Should(Succeed())
	s.g.Eventually(func() ([]db.OperationSignal, error) { return store.ListSignals(s.ctx, database) },
		eventually, poll).Should(BeEmpty(), "and the signal is taken down again")
}
