package manageropts

import (
	"time"

	"golang.org/x/time/rate"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"
)

// Retry backoff of every controller's workqueue.
const (
	// FirstRetryDelay is the wait before the first retry of a failed reconcile; it doubles
	// with each further failure of the same item, up to MaxRetryDelay.
	FirstRetryDelay = 5 * time.Millisecond
	// MaxRetryDelay caps the per-item backoff. controller-runtime's default cap is 1000 s:
	// an item that kept failing through a few outages of PostgreSQL or the API server would
	// then wait many minutes after everything is back. At 30 s recovery stays prompt while an
	// item that keeps failing costs one attempt per 30 s.
	MaxRetryDelay = 30 * time.Second
	// RetryQPS and RetryBurst bound the retries of all items together (controller-runtime's
	// defaults), so that an outage's backlog does not retry all at once.
	RetryQPS   = 10
	RetryBurst = 100
)

// RetryRateLimiter is the workqueue rate limiter of the service's controllers: exponential
// per-item backoff from FirstRetryDelay to MaxRetryDelay, and an overall token bucket.
func RetryRateLimiter[T comparable]() workqueue.TypedRateLimiter[T] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[T](FirstRetryDelay, MaxRetryDelay),
		&workqueue.TypedBucketRateLimiter[T]{Limiter: rate.NewLimiter(rate.Limit(RetryQPS), RetryBurst)},
	)
}

// ControllerOptions are the options of a controller of reconcile.Requests: at most
// maxConcurrent reconciles at once (0: controller-runtime's default) and RetryRateLimiter.
func ControllerOptions(maxConcurrent int) controller.Options {
	return controller.Options{MaxConcurrentReconciles: maxConcurrent, RateLimiter: RetryRateLimiter[ctrl.Request]()}
}
