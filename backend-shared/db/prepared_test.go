package db_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/uptrace/bun"

	"github.com/gitops-service/gitops-service/backend-shared/db"
)

// The statements sent prepared work wherever a Store method may run: on the pool, in a
// transaction (seeing its own writes) and on a connection, again and again on the same
// connection (where each statement is prepared once), and say when nothing is found.
func TestPreparedStatementsRunOnThePoolATransactionAndAConnection(t *testing.T) {
	t.Parallel()
	g, f := g(t), newFixture(t)
	op := &db.Operation{EngineInstanceID: f.instance.ID, ResourceType: db.OperationResourceApplication, ResourceID: newUID()}
	g.Expect(f.store.CreateOperation(f.ctx, f.db, op)).To(Succeed())
	read := func(idb bun.IDB) {
		t.Helper()
		for range 3 {
			got, err := f.store.GetOperation(f.ctx, idb, op.ID)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.ResourceID).To(Equal(op.ResourceID))
			ops, err := f.store.ListOperationsForResource(f.ctx, idb, db.OperationResourceApplication, op.ResourceID)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ops).To(HaveLen(1))
		}
		_, err := f.store.GetOperation(f.ctx, idb, newUID())
		g.Expect(err).To(MatchError(db.ErrNotFound))
		ops, err := f.store.ListOperationsForResource(f.ctx, idb, db.OperationResourceApplication, newUID())
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ops).To(BeEmpty())
	}
	read(f.db)
	conn, err := f.db.Conn(f.ctx)
	g.Expect(err).NotTo(HaveOccurred())
	defer conn.Close()
	read(conn)
	for range 3 {
		again := &db.Operation{EngineInstanceID: f.instance.ID, ResourceType: db.OperationResourceApplication, ResourceID: newUID()}
		g.Expect(f.store.CreateOperation(f.ctx, conn, again)).To(Succeed())
		g.Expect(again.ID).NotTo(BeEmpty())
		g.Expect(again.State).To(Equal(db.OperationWaiting), "the column bun leaves to its default")
	}
	var reads, writes int
	g.Expect(conn.QueryRowContext(f.ctx, `SELECT count(*) FILTER (WHERE statement LIKE 'SELECT%'),
		count(*) FILTER (WHERE statement LIKE 'INSERT%') FROM pg_prepared_statements`).Scan(&reads, &writes)).To(Succeed())
	g.Expect(reads).To(Equal(2), "each read prepared once on the connection, however often it ran")
	g.Expect(writes).To(Equal(1), "the insert prepared once on the connection")
	g.Expect(f.db.RunInTx(f.ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		read(tx)
		second := &db.Operation{EngineInstanceID: f.instance.ID, ResourceType: db.OperationResourceApplication, ResourceID: op.ResourceID}
		g.Expect(f.store.CreateOperation(ctx, tx, second)).To(Succeed())
		ops, err := f.store.ListOperationsForResource(ctx, tx, db.OperationResourceApplication, op.ResourceID)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ops).To(HaveLen(2), "the transaction's own write")
		return nil
	})).To(Succeed())
}
