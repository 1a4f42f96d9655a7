package tenantcap

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func TestPerTenant(t *testing.T) {
	for workers, want := range map[int]int{0: 1, 1: 1, 4: 1, 8: 2, 9: 2, 16: 4} {
		if got := PerTenant(workers); got != want {
			t.Errorf("PerTenant(%d) = %d, want %d", workers, got, want)
		}
	}
}

func req(ns, name string) ctrl.Request {
	return ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}
}

// A namespace that has used its share waits without running; other namespaces run; a
// freed slot goes to the namespace's first waiting object, ahead of later ones.
func TestLimit(t *testing.T) {
	ctx := context.Background()
	running := map[ctrl.Request]chan struct{}{} // closed to end the reconcile
	started := make(chan ctrl.Request, 10)
	inner := reconcile.Func(func(_ context.Context, r ctrl.Request) (ctrl.Result, error) {
		started <- r
		<-running[r]
		return ctrl.Result{}, nil
	})
	for _, r := range []ctrl.Request{req("a", "x"), req("a", "y"), req("a", "z"), req("a", "late"), req("b", "x")} {
		running[r] = make(chan struct{})
	}
	l := Limit(inner, 1)
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[ctrl.Request]())
	defer q.ShutDown()
	if err := l.Source().Start(ctx, q); err != nil {
		t.Fatal(err)
	}
	reconcileAsync := func(r ctrl.Request) chan ctrl.Result {
		done := make(chan ctrl.Result, 1)
		go func() { res, _ := l.Reconcile(ctx, r); done <- res }()
		return done
	}
	expectStarted := func(want ctrl.Request) {
		t.Helper()
		select {
		case got := <-started:
			if got != want {
				t.Fatalf("started %v, want %v", got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%v did not start", want)
		}
	}

	ax := reconcileAsync(req("a", "x"))
	expectStarted(req("a", "x"))
	for _, r := range []ctrl.Request{req("a", "y"), req("a", "z")} {
		if res := <-reconcileAsync(r); res != (ctrl.Result{}) {
			t.Fatalf("waiting %v returned %+v", r, res)
		}
	}
	select {
	case r := <-started:
		t.Fatalf("%v ran past its namespace's share", r)
	default:
	}
	reconcileAsync(req("b", "x"))
	expectStarted(req("b", "x"))

	// a/x ends: a/y, first in line, is put back in the queue and keeps the slot.
	close(running[req("a", "x")])
	<-ax
	next, _ := q.Get()
	if next != req("a", "y") {
		t.Fatalf("queued %v, want a/y", next)
	}
	q.Done(next)
	if res := <-reconcileAsync(req("a", "late")); res != (ctrl.Result{}) {
		t.Fatalf("a/late returned %+v", res)
	}
	select {
	case r := <-started:
		t.Fatalf("%v took the slot kept for a/y", r)
	default:
	}
	ay := reconcileAsync(req("a", "y"))
	expectStarted(req("a", "y"))
	close(running[req("a", "y")])
	<-ay
	if next, _ := q.Get(); next != req("a", "z") {
		t.Fatalf("queued %v, want a/z", next)
	}
}
