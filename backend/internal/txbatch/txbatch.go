// Package txbatch shares database transactions among concurrent callers. While one
// transaction is being written, the callers that arrive wait, and the next transaction
// holds the work of all of them: under a burst of reconciles the begin, the commit and
// whatever the work defers to the end (the signal to the cluster-agent) are paid once per
// batch instead of once per caller. A caller that arrives alone has a transaction to
// itself, as it would without the batcher.
package txbatch

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"

	"github.com/uptrace/bun"
)

// Work is one caller's part of a transaction. It may run more than once (when another
// caller's work fails, the transaction is rolled back and the others run again), so it
// must set, not accumulate, what it leaves for its caller.
type Work func(ctx context.Context, tx bun.Tx) error

// Batcher runs Work in shared transactions, one transaction at a time. The work runs in
// its callers' goroutines: the caller that finds no transaction being written writes the
// next one, with the work of every caller queued by then, and hands the writing of the
// one after to the first caller still queued.
type Batcher struct {
	DB *bun.DB
	// Shared, if set, is called once per transaction: join gives each caller's context
	// what the transaction's work shares, and finish runs in the transaction after all of
	// it, before the commit.
	Shared func() (join func(context.Context) context.Context, finish func(context.Context, bun.Tx) error)

	mu      sync.Mutex
	queue   []*call
	writing bool
}

type call struct {
	ctx  context.Context
	work Work
	// done receives the call's result, or its turn to write the queue.
	done chan outcome
}

type outcome struct {
	err  error
	lead bool
}

// Run runs work in a transaction, shared with the callers waiting at the same time, and
// returns once that transaction committed (nil) or work failed (its error, from a
// transaction of its own: another caller's failure is never this caller's).
func (b *Batcher) Run(ctx context.Context, work Work) error {
	c := &call{ctx: ctx, work: work, done: make(chan outcome, 1)}
	b.mu.Lock()
	b.queue = append(b.queue, c)
	lead := !b.writing
	b.writing = true
	b.mu.Unlock()
	for {
		if lead {
			b.writeNext()
		}
		o := <-c.done
		if !o.lead {
			return o.err
		}
		lead = true
	}
}

// writeNext writes the queued calls in one transaction, then hands the writing to the
// first call still queued (maybe the writer's own, put back after another's failure), or
// ends it.
func (b *Batcher) writeNext() {
	b.mu.Lock()
	batch := b.queue
	b.queue = nil
	b.mu.Unlock()
	b.write(batch)
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.queue) == 0 {
		b.writing = false
		return
	}
	b.queue[0].done <- outcome{lead: true}
}

// write commits batch in one transaction. When one call's work fails, that call runs again
// alone, so that it gets the error of its own work, and the others go back to the front of
// the queue; when the transaction itself fails, each call runs alone.
func (b *Batcher) write(batch []*call) {
	if len(batch) == 1 {
		_, err := b.transaction(batch)
		batch[0].done <- outcome{err: err}
		return
	}
	failed, err := b.transaction(batch)
	switch {
	case err == nil:
		for _, c := range batch {
			c.done <- outcome{}
		}
	case failed >= 0:
		b.requeue(append(batch[:failed:failed], batch[failed+1:]...))
		b.write(batch[failed : failed+1])
	default:
		for _, c := range batch {
			b.write([]*call{c})
		}
	}
}

// requeue puts calls back at the front of the queue.
func (b *Batcher) requeue(calls []*call) {
	b.mu.Lock()
	b.queue = append(calls, b.queue...)
	b.mu.Unlock()
}

// transaction runs the work of batch in one transaction. It returns the index of the call
// whose work failed (-1 when none did) and the error that rolled the transaction back.
func (b *Batcher) transaction(batch []*call) (failed int, err error) {
	failed = -1
	join := func(ctx context.Context) context.Context { return ctx }
	var finish func(context.Context, bun.Tx) error
	if b.Shared != nil {
		join, finish = b.Shared()
	}
	// The transaction outlives a caller that gives up: its context bounds its own work.
	txCtx := context.WithoutCancel(batch[0].ctx)
	err = b.DB.RunInTx(txCtx, nil, func(_ context.Context, tx bun.Tx) error {
		for i, c := range batch {
			if err := run(join(c.ctx), tx, c.work); err != nil {
				failed = i
				return err
			}
		}
		if finish == nil {
			return nil
		}
		return run(join(txCtx), tx, finish)
	})
	if err == nil {
		failed = -1
	}
	return failed, err
}

// errPanic marks a panic of a call's work, returned as its error.
var errPanic = errors.New("panic")

// run runs work, turning a panic into its error: the batch's other calls, and the process,
// go on, and the writing passes on to the next caller.
func run(ctx context.Context, tx bun.Tx, work Work) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v\n%s", errPanic, r, debug.Stack())
		}
	}()
	return work(ctx, tx)
}
