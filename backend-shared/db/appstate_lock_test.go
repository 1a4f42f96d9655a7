package db_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/uptrace/bun"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/notify"
)

// TestLockApplicationOperationState: the operation state last written, nil without a
// state or an operation, and the row locked until the transaction ends.
func TestLockApplicationOperationState(t *testing.T) {
	t.Parallel()
	g, f := g(t), newFixture(t)
	tenant := f.newTenant(t)
	app, _ := f.newApp(t, tenant.ID, "")

	op, err := f.store.LockApplicationOperationState(f.ctx, f.db, app.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(op).To(BeNil(), "no state yet")

	st := &db.ApplicationState{ApplicationID: app.ID, EngineInstanceID: f.instance.ID, Health: db.HealthHealthy}
	_, err = f.store.RecordApplicationState(f.ctx, f.db, st, notify.ApplicationStateChanged)
	g.Expect(err).NotTo(HaveOccurred())
	op, err = f.store.LockApplicationOperationState(f.ctx, f.db, app.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(op).To(BeNil(), "no operation yet")

	started := metav1.NewTime(time.Now().UTC().Truncate(time.Second))
	finished := metav1.NewTime(started.Add(3 * time.Second))
	st.OperationState = &argov1alpha1.OperationState{Phase: argov1alpha1.OperationSucceeded, StartedAt: started, FinishedAt: &finished}
	_, err = f.store.RecordApplicationState(f.ctx, f.db, st, notify.ApplicationStateChanged)
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(f.db.RunInTx(f.ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		op, err := f.store.LockApplicationOperationState(ctx, tx, app.ID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(op).NotTo(BeNil())
		g.Expect(op.Phase).To(Equal(argov1alpha1.OperationSucceeded))
		g.Expect(op.StartedAt.Equal(&started)).To(BeTrue())
		g.Expect(op.FinishedAt.Equal(&finished)).To(BeTrue())
		// Another transaction cannot lock the row meanwhile.
		other, err := f.db.BeginTx(ctx, &sql.TxOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		defer func() { _ = other.Rollback() }()
		_, err = other.ExecContext(ctx, "SELECT 1 FROM application_states WHERE application_id = ? FOR UPDATE NOWAIT", app.ID)
		g.Expect(err).To(MatchError(ContainSubstring("could not obtain lock")))
		return nil
	})).To(Succeed())
}
