package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/uptrace/bun"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	agent "github.com/gitops-service/gitops-service/cluster-agent/app"
	agentmetrics "github.com/gitops-service/gitops-service/cluster-agent/internal/metrics"
)

// TestABurstIsCarriedOutBeforeItsStatusIsRecorded: Argo CD's status of an Application of a
// burst, written while the burst is being carried out, is recorded once every Application
// of the burst was applied, not in between; the status of an Application outside the burst
// is recorded at once.
func TestABurstIsCarriedOutBeforeItsStatusIsRecorded(t *testing.T) {
	e := startAgent(t, true, func(o *agent.Options) { o.StatusHold = time.Minute })
	g := e.g()
	tenant := e.tenant()
	outside := e.application(tenant, uuid.NewString(), repoURL, "apps/outside", "team-a", true)
	e.completed(e.signal(db.OperationResourceApplication, outside.ID, tenant.ID).ID)
	heldBefore := testutil.ToFloat64(agentmetrics.StatusHeld)

	// A burst, as the backend writes one: many operations, one signal, one CR.
	const size = 300
	ops := make([]*db.Operation, size)
	rows := map[string]*db.Application{}
	for i := range ops {
		row := e.application(tenant, uuid.NewString(), repoURL, "apps/burst", "team-a", true)
		rows[row.ID] = row
		ops[i] = &db.Operation{
			EngineInstanceID: e.id.InstanceID, ResourceType: db.OperationResourceApplication, ResourceID: row.ID,
			OwnerTenantID: tenant.ID, HumanReadableState: "waiting for the cluster-agent", GCExpirationSeconds: 3600,
		}
	}
	signalled := false
	g.Expect(e.db.RunInTx(e.ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		for _, op := range ops {
			if err := e.store.CreateOperation(ctx, tx, op); err != nil {
				return err
			}
		}
		var err error
		signalled, err = e.store.RaiseSignal(ctx, tx, ops[0])
		return err
	})).To(Succeed())
	g.Expect(signalled).To(BeTrue())
	e.createCR(ops[0].ID)

	// Once the burst is under way, Argo CD reports on one of its Applications, and on the
	// one outside it.
	var member *db.Application
	g.Eventually(func(g Gomega) {
		done := finishedResources(e, ops)
		g.Expect(done).NotTo(BeEmpty())
		member = rows[done[0]]
	}, timeout, 10*time.Millisecond).Should(Succeed())
	healthy := func(a *argov1alpha1.Application) {
		a.Status.Health = argov1alpha1.AppHealthStatus{Status: argov1alpha1.HealthStatusHealthy}
		a.Status.Sync = argov1alpha1.SyncStatus{Status: argov1alpha1.SyncStatusCodeSynced, Revision: "0123456789abcdef"}
	}
	e.argoUpdate(member.Name, healthy)
	e.argoUpdate(outside.Name, healthy)

	// The one outside is recorded while the burst is still being carried out.
	g.Eventually(func(g Gomega) {
		st, err := e.store.GetApplicationState(e.ctx, e.db, tenant.ID, outside.ID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(st.Health).To(Equal(db.HealthHealthy))
	}, 2*time.Second, 10*time.Millisecond).Should(Succeed())
	g.Expect(len(finishedResources(e, ops))).To(BeNumerically("<", size), "the burst was over before the status outside it was recorded")

	// The burst's own once the burst is carried out.
	var st *db.ApplicationState
	g.Eventually(func(g Gomega) {
		var err error
		st, err = e.store.GetApplicationState(e.ctx, e.db, tenant.ID, member.ID)
		g.Expect(err).NotTo(HaveOccurred())
	}, timeout, interval).Should(Succeed())
	g.Expect(st.Health).To(Equal(db.HealthHealthy))
	for _, op := range ops {
		op = e.operation(op.ID)
		g.Expect(op.State).To(Equal(db.OperationCompleted), op.HumanReadableState)
		g.Expect(op.UpdatedAt).To(BeTemporally("<", st.UpdatedAt), "operation %s was carried out after the status was recorded", op.ID)
	}
	g.Expect(testutil.ToFloat64(agentmetrics.StatusHeld)).To(BeNumerically(">", heldBefore))
	for _, row := range rows {
		g.Expect(e.argoApp(row.Name).Spec.Source.Path).To(Equal("apps/burst"))
	}

	// After the burst, its Applications' status is recorded at once.
	now := metav1.Now()
	e.argoUpdate(member.Name, func(a *argov1alpha1.Application) {
		a.Status.Health = argov1alpha1.AppHealthStatus{Status: argov1alpha1.HealthStatusDegraded, LastTransitionTime: &now}
	})
	g.Eventually(func(g Gomega) {
		st, err := e.store.GetApplicationState(e.ctx, e.db, tenant.ID, member.ID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(st.Health).To(Equal(db.HealthDegraded))
	}, 2*time.Second, 10*time.Millisecond).Should(Succeed())
}

// finishedResources returns the resource ids of the operations of ops that are Completed or Failed.
func finishedResources(e *env, ops []*db.Operation) []string {
	ids := make([]string, len(ops))
	for i, op := range ops {
		ids[i] = op.ID
	}
	var done []string
	err := e.db.NewSelect().Model((*db.Operation)(nil)).Column("resource_id").
		Where("id IN (?)", bun.List(ids)).
		Where("state IN (?)", bun.List([]db.OperationState{db.OperationCompleted, db.OperationFailed})).
		Scan(e.ctx, &done)
	e.g().Expect(err).NotTo(HaveOccurred())
	return done
}
