// Package queue hands a controller's workqueue to code outside the controller (a router
// of database notifications, a sweep), so that what it finds goes straight into the queue
// of the controller that owns it.
package queue

import (
	"context"
	"sync"

	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/gitops-service/gitops-service/backend-shared/manageropts"
)

// Handle is a controller's workqueue, handed over when the controller starts.
type Handle[T comparable] struct {
	mu    sync.Mutex
	queue workqueue.TypedRateLimitingInterface[T]
}

// Source is the controller source that hands the workqueue over; add it with
// WatchesRawSource.
func (h *Handle[T]) Source() source.TypedSource[T] {
	return source.TypedFunc[T](func(_ context.Context, queue workqueue.TypedRateLimitingInterface[T]) error {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.queue = queue
		return nil
	})
}

// Add enqueues item. Before the controller runs (or on a replica that is not the leader) it
// drops item: the controller's initial list covers everything then.
func (h *Handle[T]) Add(item T) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.queue != nil {
		h.queue.Add(item)
	}
}

// Initial is a controller source that adds item once, when the controller starts: the
// first run of a controller of one item (which Handle.Add then wakes).
func Initial[T comparable](item T) source.TypedSource[T] {
	return source.TypedFunc[T](func(_ context.Context, queue workqueue.TypedRateLimitingInterface[T]) error {
		queue.Add(item)
		return nil
	})
}

// OneItem adds to mgr a controller of the one item key, named name: run runs when the
// controller starts and whenever h.Add(key) wakes it, never twice at once, and a run that
// failed is retried with the service's backoff.
func OneItem(mgr ctrl.Manager, name, key string, h *Handle[string], run reconcile.TypedFunc[string]) error {
	return builder.TypedControllerManagedBy[string](mgr).
		Named(name).
		WatchesRawSource(Initial(key)).
		WatchesRawSource(h.Source()).
		WithOptions(controller.TypedOptions[string]{MaxConcurrentReconciles: 1, RateLimiter: manageropts.RetryRateLimiter[string]()}).
		Complete(run)
}
