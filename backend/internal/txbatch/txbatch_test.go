package txbatch

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/uptrace/bun"

	"github.com/gitops-service/gitops-service/backend-shared/db/dbtest"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// fixture is a Batcher on a database of its own with a table of the rows each caller
// writes, and a first caller that holds the transaction open until released.
type fixture struct {
	t        *testing.T
	g        *WithT
	ctx      context.Context
	db       *bun.DB
	b        *Batcher
	finishes []int // rows visible to each transaction's finish
	release  chan struct{}
	results  sync.Map // caller → error
	wg       sync.WaitGroup
}

func newFixture(t *testing.T) *fixture {
	f := &fixture{t: t, g: NewWithT(t), ctx: context.Background(), db: dbtest.NewDB(t), release: make(chan struct{})}
	_, err := f.db.ExecContext(f.ctx, "CREATE TABLE written (caller text PRIMARY KEY, tx bigint NOT NULL)")
	f.g.Expect(err).NotTo(HaveOccurred())
	f.b = &Batcher{DB: f.db, Shared: func() (func(context.Context) context.Context, func(context.Context, bun.Tx) error) {
		return func(ctx context.Context) context.Context { return ctx }, func(ctx context.Context, tx bun.Tx) error {
			var n int
			err := tx.NewRaw("SELECT count(*) FROM written WHERE tx = txid_current()").Scan(ctx, &n)
			f.finishes = append(f.finishes, n)
			return err
		}
	}}
	return f
}

// write is a caller's work: its row, with the id of the transaction it ran in.
func write(caller string) Work {
	return func(ctx context.Context, tx bun.Tx) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO written VALUES (?, txid_current())", caller)
		return err
	}
}

// run starts a caller.
func (f *fixture) run(caller string, work Work) {
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		f.results.Store(caller, f.b.Run(f.ctx, work))
	}()
}

// holdFirst starts a first caller whose work waits for release, then callers, and waits
// until they all queue behind it.
func (f *fixture) holdFirst(callers map[string]Work) {
	f.run("first", func(ctx context.Context, tx bun.Tx) error {
		<-f.release
		return write("first")(ctx, tx)
	})
	f.g.Eventually(func() bool { f.b.mu.Lock(); defer f.b.mu.Unlock(); return f.b.writing && len(f.b.queue) == 0 }, 5*time.Second).Should(BeTrue())
	for caller, work := range callers {
		f.run(caller, work)
	}
	f.g.Eventually(func() int { f.b.mu.Lock(); defer f.b.mu.Unlock(); return len(f.b.queue) }, 5*time.Second).Should(Equal(len(callers)))
	close(f.release)
	f.wg.Wait()
}

func (f *fixture) result(caller string) error {
	err, ok := f.results.Load(caller)
	f.g.Expect(ok).To(BeTrue(), caller)
	if err == nil {
		return nil
	}
	return err.(error)
}

// rows returns the transaction each caller's row was committed in.
func (f *fixture) rows() map[string]int64 {
	var rows []struct {
		Caller string
		Tx     int64
	}
	f.g.Expect(f.db.NewRaw("SELECT caller, tx FROM written").Scan(f.ctx, &rows)).To(Succeed())
	got := map[string]int64{}
	for _, r := range rows {
		got[r.Caller] = r.Tx
	}
	return got
}

func TestCallersThatWaitShareOneTransaction(t *testing.T) {
	f := newFixture(t)
	f.holdFirst(map[string]Work{"a": write("a"), "b": write("b"), "c": write("c")})
	for _, caller := range []string{"first", "a", "b", "c"} {
		f.g.Expect(f.result(caller)).To(Succeed(), caller)
	}
	rows := f.rows()
	f.g.Expect(rows).To(HaveLen(4))
	f.g.Expect(rows["a"]).To(Equal(rows["b"]))
	f.g.Expect(rows["b"]).To(Equal(rows["c"]))
	f.g.Expect(rows["first"]).NotTo(Equal(rows["a"]), "the first caller had a transaction to itself")
	f.g.Expect(f.finishes).To(Equal([]int{1, 3}), "finish runs once per transaction, after all its work")
}

func TestAFailingWorkFailsAloneAndTheOthersCommit(t *testing.T) {
	f := newFixture(t)
	runs := map[string]int{}
	var mu sync.Mutex
	counted := func(caller string, work Work) Work {
		return func(ctx context.Context, tx bun.Tx) error {
			mu.Lock()
			runs[caller]++
			mu.Unlock()
			return work(ctx, tx)
		}
	}
	refused := errors.New("refused")
	f.holdFirst(map[string]Work{
		"a": counted("a", write("a")),
		"bad": counted("bad", func(ctx context.Context, tx bun.Tx) error {
			if err := write("bad")(ctx, tx); err != nil {
				return err
			}
			return refused
		}),
		"panics": counted("panics", func(context.Context, bun.Tx) error { panic("boom") }),
		"c":      counted("c", write("c")),
	})
	f.g.Expect(f.result("a")).To(Succeed())
	f.g.Expect(f.result("c")).To(Succeed())
	f.g.Expect(f.result("bad")).To(MatchError(refused), "its own error, from its own transaction")
	f.g.Expect(f.result("panics")).To(MatchError(errPanic))
	f.g.Expect(f.result("panics").Error()).To(ContainSubstring("boom"))
	rows := f.rows()
	f.g.Expect(rows).To(HaveKey("a"))
	f.g.Expect(rows).To(HaveKey("c"))
	f.g.Expect(rows).NotTo(HaveKey("bad"), "a failed work's writes are rolled back")
	f.g.Expect(rows["a"]).To(Equal(rows["c"]), "the others still share a transaction")
	f.g.Expect(runs["bad"]).To(BeNumerically(">=", 2), "it failed in the batch, then alone")
	f.g.Expect(runs["panics"]).To(BeNumerically(">=", 2))
}

func TestAFailedSharedPartRunsEachCallerAlone(t *testing.T) {
	for name, fail := range map[string]func() error{
		"an error": func() error { return errors.New("the shared part failed") },
		"a panic":  func() error { panic("the shared part panicked") },
	} {
		t.Run(name, func(t *testing.T) { testFailedSharedPart(t, fail) })
	}
}

func testFailedSharedPart(t *testing.T, fail func() error) {
	f := newFixture(t)
	finishes := 0
	f.b.Shared = func() (func(context.Context) context.Context, func(context.Context, bun.Tx) error) {
		return func(ctx context.Context) context.Context { return ctx }, func(context.Context, bun.Tx) error {
			finishes++
			if finishes == 2 {
				return fail()
			}
			return nil
		}
	}
	f.holdFirst(map[string]Work{"a": write("a"), "b": write("b")})
	f.g.Expect(f.result("a")).To(Succeed())
	f.g.Expect(f.result("b")).To(Succeed())
	rows := f.rows()
	f.g.Expect(rows).To(HaveLen(3))
	f.g.Expect(rows["a"]).NotTo(Equal(rows["b"]), "each ran alone after the shared transaction failed")
}
