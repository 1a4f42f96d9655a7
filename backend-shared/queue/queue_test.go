package queue

import (
	"context"
	"testing"

	"k8s.io/client-go/util/workqueue"
)

func newQueue(t *testing.T) workqueue.TypedRateLimitingInterface[string] {
	t.Helper()
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	t.Cleanup(q.ShutDown)
	return q
}

func TestAddBeforeTheControllerRunsIsDropped(t *testing.T) {
	var h Handle[string]
	// The controller's initial list covers everything found before it started.
	h.Add("early")
	q := newQueue(t)
	if err := h.Source().Start(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	if n := q.Len(); n != 0 {
		t.Fatalf("queue length %d, want the early item dropped", n)
	}
}

func TestAddAfterTheControllerStartedEnqueues(t *testing.T) {
	var h Handle[string]
	q := newQueue(t)
	if err := h.Source().Start(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	h.Add("a")
	h.Add("b")
	h.Add("a") // the workqueue keeps one of each pending item
	if n := q.Len(); n != 2 {
		t.Fatalf("queue length %d, want 2", n)
	}
	got := map[string]bool{}
	for range 2 {
		item, shutdown := q.Get()
		if shutdown {
			t.Fatal("queue shut down")
		}
		got[item] = true
		q.Done(item)
	}
	if !got["a"] || !got["b"] {
		t.Errorf("items %v, want a and b", got)
	}
}

func TestTheLatestStartedQueueReceives(t *testing.T) {
	// A controller that restarts (a new leader term in the same process) hands over its new queue.
	var h Handle[string]
	first, second := newQueue(t), newQueue(t)
	for _, q := range []workqueue.TypedRateLimitingInterface[string]{first, second} {
		if err := h.Source().Start(context.Background(), q); err != nil {
			t.Fatal(err)
		}
	}
	h.Add("x")
	if first.Len() != 0 || second.Len() != 1 {
		t.Errorf("lengths %d and %d, want the item in the latest queue only", first.Len(), second.Len())
	}
}

func TestConcurrentAddsAreSafe(t *testing.T) {
	var h Handle[int]
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[int]())
	t.Cleanup(q.ShutDown)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 1000 {
			h.Add(i)
		}
	}()
	if err := h.Source().Start(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	<-done
	h.Add(-1)
	// Items added before the hand-over were dropped; one added after it is always there.
	found := false
	for q.Len() > 0 {
		item, _ := q.Get()
		found = found || item == -1
		q.Done(item)
	}
	if !found {
		t.Error("an item added after the hand-over is missing")
	}
}

func TestInitialAddsItsItemWhenTheControllerStarts(t *testing.T) {
	q := newQueue(t)
	if err := Initial("run").Start(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	if item, _ := q.Get(); q.Len() != 0 || item != "run" {
		t.Fatalf("got %q and %d more, want just run", item, q.Len())
	}
}
