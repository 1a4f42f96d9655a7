package manageropts

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
)

// APIServerPollInterval is how often the caches' list and watch requests are tried again
// while nothing listens at the API server's address.
const APIServerPollInterval = 500 * time.Millisecond

// NewInformer builds the manager cache's informers (controller-runtime's cache.Options
// NewInformer) on a ListerWatcher that waits out an API server that is not listening.
//
// client-go's reflector backs off exponentially after every failed list or watch, up to
// 30 s plus as much jitter, and resets only after two minutes without a failure: after a
// few API server restarts in a row, a cache would stay up to a minute behind the server
// once it is back, and every reconcile in between would read stale objects. A refused
// connection costs the API server nothing, so it is retried here every
// APIServerPollInterval instead, and the reflector never sees it. Every other error (the
// server answering 429 or 5xx included) still goes to the reflector and its backoff.
func NewInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	return toolscache.NewSharedIndexInformer(newPatientListerWatcher(lw), obj, resync, indexers)
}

// patientListerWatcher retries list and watch requests while the connection is refused.
// The reflector uses the context forms only; List and Watch come unchanged from the
// wrapped ListerWatcher.
type patientListerWatcher struct {
	toolscache.ListerWatcher
	lw toolscache.ListerWatcherWithContext
}

func (p *patientListerWatcher) ListWithContext(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
	return whileRefused(ctx, func() (runtime.Object, error) { return p.lw.ListWithContext(ctx, options) })
}

func (p *patientListerWatcher) WatchWithContext(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	return whileRefused(ctx, func() (watch.Interface, error) { return p.lw.WatchWithContext(ctx, options) })
}

func newPatientListerWatcher(lw toolscache.ListerWatcher) *patientListerWatcher {
	return &patientListerWatcher{ListerWatcher: lw, lw: toolscache.ToListerWatcherWithContext(lw)}
}

// whileRefused calls request until it returns anything but a refused connection, or ctx
// ends (then the last error is returned).
func whileRefused[T any](ctx context.Context, request func() (T, error)) (T, error) {
	for {
		out, err := request()
		if err == nil || !utilnet.IsConnectionRefused(err) {
			return out, err
		}
		t := time.NewTimer(APIServerPollInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return out, err
		case <-t.C:
		}
	}
}
