package db_test

import (
	"context"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/uptrace/bun"

	"github.com/gitops-service/gitops-service/backend-shared/db"
	"github.com/gitops-service/gitops-service/backend-shared/db/notify"
)

// writeSignalled writes an operation of instance and raises its signal in one transaction,
// as the backend does; hold keeps the transaction open after the raise.
func (f *fixture) writeSignalled(t testing.TB, instanceID string, hold time.Duration) (*db.Operation, bool) {
	t.Helper()
	op := &db.Operation{EngineInstanceID: instanceID, ResourceType: db.OperationResourceApplication, ResourceID: newUID()}
	var raised bool
	err := f.db.RunInTx(f.ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if err := f.store.CreateOperation(ctx, tx, op); err != nil {
			return err
		}
		var err error
		raised, err = f.store.RaiseSignal(ctx, tx, op)
		time.Sleep(hold)
		return err
	})
	if err != nil {
		t.Error(err)
	}
	return op, raised
}

func TestOneSignalStandsForEveryOperationUntilAllAreTaken(t *testing.T) {
	t.Parallel()
	g, f := g(t), newFixture(t)
	other := f.newInstance(t)

	first, raised := f.writeSignalled(t, f.instance.ID, 0)
	g.Expect(raised).To(BeTrue(), "the first operation raises the signal")
	second, raised := f.writeSignalled(t, f.instance.ID, 0)
	g.Expect(raised).To(BeFalse(), "the signal is up: its CR stands for the second operation too")
	g.Expect(first.CoveredBySignal || second.CoveredBySignal).To(BeFalse(), "the signal's CR is not known to exist yet")
	_, raised = f.writeSignalled(t, other.ID, 0)
	g.Expect(raised).To(BeTrue(), "each instance has its own signal")

	sig, err := f.store.GetSignal(f.ctx, f.db, f.instance.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sig.OperationID).To(Equal(first.ID))
	g.Expect(sig.CRCreated).To(BeFalse())
	g.Expect(f.store.MarkSignalCRCreated(f.ctx, f.db, f.instance.ID, first.ID)).To(Succeed())
	sig, err = f.store.GetSignal(f.ctx, f.db, f.instance.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sig.CRCreated).To(BeTrue())
	third, raised := f.writeSignalled(t, f.instance.ID, 0)
	g.Expect(raised).To(BeFalse())
	g.Expect(third.CoveredBySignal).To(BeTrue(), "written under a signal whose CR exists: nothing to check after the commit")

	// Not released while a Waiting operation is not taken.
	taken := map[string]bool{first.ID: true, third.ID: true}
	untaken, err := f.store.ReleaseSignal(f.ctx, f.db, f.instance.ID, func(id string) bool { return taken[id] })
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(untaken).To(HaveLen(1))
	g.Expect(untaken[0].ID).To(Equal(second.ID))
	_, err = f.store.GetSignal(f.ctx, f.db, f.instance.ID)
	g.Expect(err).NotTo(HaveOccurred(), "still up")

	// A finished operation needs no taking.
	_, err = f.store.UpdateOperationStates(f.ctx, f.db, f.instance.ID, []string{second.ID}, db.OperationCompleted, "done", notify.OperationChanged)
	g.Expect(err).NotTo(HaveOccurred())
	untaken, err = f.store.ReleaseSignal(f.ctx, f.db, f.instance.ID, func(id string) bool { return taken[id] })
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(untaken).To(BeEmpty())
	_, err = f.store.GetSignal(f.ctx, f.db, f.instance.ID)
	g.Expect(err).To(MatchError(db.ErrNotFound))
	sigs, err := f.store.ListSignals(f.ctx, f.db)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sigs).To(HaveLen(1))
	g.Expect(sigs[0].EngineInstanceID).To(Equal(other.ID))

	_, raised = f.writeSignalled(t, f.instance.ID, 0)
	g.Expect(raised).To(BeTrue(), "once released, the next operation raises it again")
}

// A signal the database brought back (its release lost, its CR long taken) is revived for
// the newest Waiting operation, whose CR the backend then creates; one with nothing Waiting
// is taken down, and none is raised where none was up.
func TestReviveSignal(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		signalUp   bool
		waiting    int // operations still Waiting, of three written
		wantNewest bool
	}{
		{name: "up, operations waiting: it stands for the newest", signalUp: true, waiting: 2, wantNewest: true},
		{name: "up, nothing waiting: taken down", signalUp: true, waiting: 0},
		{name: "down, an operation waiting: none raised", signalUp: false, waiting: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			g, f := g(t), newFixture(t)
			var ops []*db.Operation
			for range 3 {
				op, _ := f.writeSignalled(t, f.instance.ID, 0)
				ops = append(ops, op)
			}
			g.Expect(f.store.MarkSignalCRCreated(f.ctx, f.db, f.instance.ID, ops[0].ID)).To(Succeed())
			for _, op := range ops[:3-c.waiting] {
				_, err := f.store.UpdateOperationStates(f.ctx, f.db, f.instance.ID, []string{op.ID}, db.OperationCompleted, "done", notify.OperationChanged)
				g.Expect(err).NotTo(HaveOccurred())
			}
			if !c.signalUp {
				_, err := f.db.NewDelete().Model((*db.OperationSignal)(nil)).Where("engine_instance_id = ?", f.instance.ID).Exec(f.ctx)
				g.Expect(err).NotTo(HaveOccurred())
			}

			newest, err := f.store.ReviveSignal(f.ctx, f.db, f.instance.ID)
			g.Expect(err).NotTo(HaveOccurred())
			sig, sigErr := f.store.GetSignal(f.ctx, f.db, f.instance.ID)
			if !c.wantNewest {
				g.Expect(newest).To(BeNil())
				g.Expect(sigErr).To(MatchError(db.ErrNotFound), "no signal left up")
				return
			}
			g.Expect(newest).NotTo(BeNil())
			g.Expect(newest.ID).To(Equal(ops[2].ID))
			g.Expect(sigErr).NotTo(HaveOccurred())
			g.Expect(sig.OperationID).To(Equal(ops[2].ID))
			g.Expect(sig.CRCreated).To(BeFalse(), "its CR is yet to be created")
		})
	}
}

// TestNoOperationIsLeftWithoutASignal races writers against an agent that only wakes when
// a writer raised the signal (as it only wakes on a CR): whatever the interleaving, every
// operation is taken and no signal is left up.
func TestNoOperationIsLeftWithoutASignal(t *testing.T) {
	t.Parallel()
	g, f := g(t), newFixture(t)
	const writers, perWriter = 4, 60
	wake := make(chan struct{}, writers*perWriter)
	var wg sync.WaitGroup
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				// Some transactions stay open after the raise, so releases meet them.
				if _, raised := f.writeSignalled(t, f.instance.ID, time.Duration(i%3)*time.Millisecond); raised {
					wake <- struct{}{}
				}
				// Pauses let the agent catch up and release between operations.
				time.Sleep(time.Duration(i%4) * 3 * time.Millisecond)
			}
		}()
	}
	writersDone := make(chan struct{})
	go func() { wg.Wait(); close(writersDone) }()

	taken := map[string]bool{}
	take := func(ops []db.Operation) {
		for _, op := range ops {
			taken[op.ID] = true
			_, err := f.store.UpdateOperationStates(f.ctx, f.db, f.instance.ID, []string{op.ID}, db.OperationCompleted, "done", notify.OperationChanged)
			g.Expect(err).NotTo(HaveOccurred())
		}
	}
	signals := 0
loop:
	for {
		select {
		case <-wake:
		case <-writersDone:
			if len(wake) == 0 {
				break loop
			}
			continue
		}
		signals++
		for {
			waiting, err := f.store.ListWaitingOperations(f.ctx, f.db, f.instance.ID)
			g.Expect(err).NotTo(HaveOccurred())
			take(waiting)
			untaken, err := f.store.ReleaseSignal(f.ctx, f.db, f.instance.ID, func(id string) bool { return taken[id] })
			g.Expect(err).NotTo(HaveOccurred())
			if len(untaken) == 0 {
				break
			}
		}
	}
	g.Expect(wake).To(BeEmpty(), "every raised signal was answered")
	waiting, err := f.store.ListWaitingOperations(f.ctx, f.db, f.instance.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(waiting).To(BeEmpty(), "an operation was committed while its signal was released unseen")
	g.Expect(taken).To(HaveLen(writers * perWriter))
	_, err = f.store.GetSignal(f.ctx, f.db, f.instance.ID)
	g.Expect(err).To(MatchError(db.ErrNotFound))
	t.Logf("%d operations, %d signals", len(taken), signals)
}

func TestListWaitingOperationsSince(t *testing.T) {
	t.Parallel()
	g, f := g(t), newFixture(t)
	old, _ := f.writeSignalled(t, f.instance.ID, 0)
	_, err := f.db.NewUpdate().Table("operations").Set("created_at = now() - interval '1 hour'").Where("id = ?", old.ID).Exec(f.ctx)
	g.Expect(err).NotTo(HaveOccurred())
	recent, _ := f.writeSignalled(t, f.instance.ID, 0)
	done, _ := f.writeSignalled(t, f.instance.ID, 0)
	_, err = f.store.UpdateOperationStates(f.ctx, f.db, f.instance.ID, []string{done.ID}, db.OperationInProgress, "taken", notify.OperationChanged)
	g.Expect(err).NotTo(HaveOccurred())
	f.writeSignalled(t, f.newInstance(t).ID, 0)

	ops, err := f.store.ListWaitingOperationsSince(f.ctx, f.db, f.instance.ID, time.Now().Add(-time.Minute))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ops).To(HaveLen(1), "only the recent Waiting operation of this instance")
	g.Expect(ops[0].ID).To(Equal(recent.ID))
	all, err := f.store.ListWaitingOperations(f.ctx, f.db, f.instance.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(all).To(HaveLen(2))
	g.Expect(all[0].ID).To(Equal(old.ID), "oldest first")
}

// A raise that waited for the lock while the signal was taken down and raised again, for
// another operation whose CR is not known yet, does not count the old signal's CR: its
// operation is not covered, so its writer looks at the new signal after the commit.
func TestARaiseThatWaitedIsNotCoveredByASignalTakenDownMeanwhile(t *testing.T) {
	t.Parallel()
	g, f := g(t), newFixture(t)
	first, raised := f.writeSignalled(t, f.instance.ID, 0)
	g.Expect(raised).To(BeTrue())
	g.Expect(f.store.MarkSignalCRCreated(f.ctx, f.db, f.instance.ID, first.ID)).To(Succeed())

	// Another session holds the lock as the cluster-agent's release does, takes the signal
	// down, and raises it again as another writer would.
	other, err := f.db.BeginTx(f.ctx, nil)
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = other.Rollback() }()
	const signalLockClass = 0x6f7073 // db's
	_, err = other.ExecContext(f.ctx, "SELECT pg_advisory_xact_lock(?, hashtext(?))", signalLockClass, f.instance.ID)
	g.Expect(err).NotTo(HaveOccurred())
	second := &db.Operation{EngineInstanceID: f.instance.ID, ResourceType: db.OperationResourceApplication, ResourceID: newUID()}
	g.Expect(f.store.CreateOperation(f.ctx, other, second)).To(Succeed())
	_, err = other.ExecContext(f.ctx, "DELETE FROM operation_signals WHERE engine_instance_id = ?", f.instance.ID)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = other.ExecContext(f.ctx, "INSERT INTO operation_signals (engine_instance_id, operation_id) VALUES (?, ?)", f.instance.ID, second.ID)
	g.Expect(err).NotTo(HaveOccurred())

	type result struct {
		op     *db.Operation
		raised bool
	}
	done := make(chan result, 1)
	go func() {
		op, raised := f.writeSignalled(t, f.instance.ID, 0)
		done <- result{op, raised}
	}()
	g.Eventually(func() (int, error) {
		var waiting int
		err := f.db.NewRaw(`SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'advisory'`).Scan(f.ctx, &waiting)
		return waiting, err
	}, 5*time.Second, 10*time.Millisecond).Should(Equal(1), "the raise waits for the lock")
	g.Expect(other.Commit()).To(Succeed())

	var got result
	g.Eventually(done, 5*time.Second).Should(Receive(&got))
	g.Expect(got.raised).To(BeFalse(), "the signal raised again stands for it")
	g.Expect(got.op.CoveredBySignal).To(BeFalse(), "the CR it saw belonged to the signal taken down")
}
