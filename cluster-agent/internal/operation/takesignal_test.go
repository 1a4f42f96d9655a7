package operation

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"

	"github.com/gitops-service/gitops-service/backend-shared/db"
)

func TestTakeWaitingQueuesEachOperationOnce(t *testing.T) {
	r := &Reconciler{}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[Request]())
	defer q.ShutDown()
	if err := r.queue.Source().Start(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	op := func(id string, created int) db.Operation {
		return db.Operation{ID: id, ResourceType: db.OperationResourceApplication, ResourceID: "res-" + id, CreatedAt: t0.Add(time.Duration(created) * time.Second)}
	}
	steps := []struct {
		name      string
		waiting   []db.Operation
		full      bool
		fresh     int
		taken     []string
		newest    int
		quiet     int
		queueSize int
	}{
		{"first full look", []db.Operation{op("a", 1), op("b", 2)}, true, 2, []string{"a", "b"}, 2, 0, 2},
		{"a partial look adds", []db.Operation{op("b", 2), op("c", 3)}, false, 1, []string{"a", "b", "c"}, 3, 0, 3},
		{"nothing new", []db.Operation{op("c", 3)}, false, 0, []string{"a", "b", "c"}, 3, 1, 3},
		{"a full look forgets what is no longer Waiting", []db.Operation{op("c", 3)}, true, 0, []string{"c"}, 3, 2, 3},
		{"an older one a partial look missed", []db.Operation{op("c", 3), op("z", 0)}, true, 1, []string{"c", "z"}, 3, 0, 4},
	}
	for _, s := range steps {
		if got := r.takeWaiting(s.waiting, s.full); got != s.fresh {
			t.Errorf("%s: fresh = %d, want %d", s.name, got, s.fresh)
		}
		if len(r.taken) != len(s.taken) {
			t.Errorf("%s: taken = %v, want %v", s.name, r.taken, s.taken)
		}
		for _, id := range s.taken {
			if !r.taken[id] {
				t.Errorf("%s: %s not taken", s.name, id)
			}
		}
		if want := t0.Add(time.Duration(s.newest) * time.Second); !r.newest.Equal(want) {
			t.Errorf("%s: newest = %v, want %v", s.name, r.newest, want)
		}
		if r.quiet != s.quiet {
			t.Errorf("%s: quiet = %d, want %d", s.name, r.quiet, s.quiet)
		}
		if q.Len() != s.queueSize {
			t.Errorf("%s: queued %d resources, want %d", s.name, q.Len(), s.queueSize)
		}
	}
}
