package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"

	argov1alpha1 "github.com/gitops-service/gitops-service/backend-shared/argocd/v1alpha1"
)

// writerRevision is the revision the status writer reports as synced.
const writerRevision = "0123456789abcdef0123456789abcdef01234567"

// statusWriter plays Argo CD's application controller, the part that matters here: it
// writes a status (Synced at writerRevision, Healthy) once on every Application of its
// namespaces as the Application appears, with a fixed number of parallel writers. The
// floor's Applications and the pipeline's get the same writer, so that the two "statuses
// populated" times compare.
type statusWriter struct {
	c client.WithWatch
	// queue has no bound, so that a watch never waits for the writes: the API server ends
	// a watcher that falls behind.
	queue workqueue.TypedInterface[client.ObjectKey]

	mu      sync.Mutex
	seen    map[client.ObjectKey]bool
	arrived map[string]*arrivals // by namespace: when the writer saw its Applications appear
	written map[string]int       // by namespace
	last    map[string]time.Time // by namespace: when the latest write completed
	changed chan struct{}        // closed (and replaced) on every write
	err     error                // the first error that stopped the writer
	watches []*resumingWatch

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// the status written, as a merge patch (Argo CD's Application has no status subresource).
var writerPatch = []byte(fmt.Sprintf(`{"status":{"sync":{"status":%q,"revision":%q},"health":{"status":"Healthy"}}}`,
	argov1alpha1.SyncStatusCodeSynced, writerRevision))

func startStatusWriter(ctx context.Context, c client.WithWatch, namespaces []string, concurrency int) *statusWriter {
	ctx, cancel := context.WithCancel(ctx)
	w := &statusWriter{c: c, queue: workqueue.NewTyped[client.ObjectKey](), seen: map[client.ObjectKey]bool{},
		arrived: map[string]*arrivals{},
		written: map[string]int{}, last: map[string]time.Time{}, changed: make(chan struct{}), cancel: cancel}
	for _, ns := range namespaces {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			w.watch(ctx, ns)
		}()
	}
	for range concurrency {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			w.work(ctx)
		}()
	}
	return w
}

func (w *statusWriter) stop() {
	w.cancel()
	w.queue.ShutDown()
	w.wg.Wait()
}

// watch queues every Application of namespace once: those listed, then those added.
func (w *statusWriter) watch(ctx context.Context, namespace string) {
	list := &argov1alpha1.ApplicationList{}
	for {
		err := w.c.List(ctx, list, client.InNamespace(namespace))
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return
		}
		progress("status writer: %v (retrying)", err)
		sleep(ctx)
	}
	for i := range list.Items {
		w.enqueue(client.ObjectKeyFromObject(&list.Items[i]))
	}
	wi := watchFrom(ctx, w.c, &argov1alpha1.ApplicationList{}, list.ResourceVersion, client.InNamespace(namespace))
	w.mu.Lock()
	w.watches = append(w.watches, wi)
	w.mu.Unlock()
	for ev := range wi.events {
		if o, ok := ev.Object.(client.Object); ok && (ev.Type == watch.Added || ev.Type == watch.Modified) {
			w.enqueue(client.ObjectKeyFromObject(o))
		}
	}
}

// watchRestarts is how often the API server ended the writer's watches.
func (w *statusWriter) watchRestarts() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	var n int64
	for _, wi := range w.watches {
		n += wi.restarts.Load()
	}
	return n
}

// arrivals counts the Applications of one namespace as the writer sees them appear.
type arrivals struct {
	n           int
	first, last time.Time
}

func (w *statusWriter) enqueue(key client.ObjectKey) {
	now := time.Now()
	w.mu.Lock()
	dup := w.seen[key]
	w.seen[key] = true
	if !dup {
		a := w.arrived[key.Namespace]
		if a == nil {
			a = &arrivals{first: now}
			w.arrived[key.Namespace] = a
		}
		a.n++
		a.last = now
	}
	w.mu.Unlock()
	if !dup {
		w.queue.Add(key)
	}
}

// arrivalsIn is how many Applications of namespace the writer saw appear, the first and the
// last when.
func (w *statusWriter) arrivalsIn(namespace string) arrivals {
	w.mu.Lock()
	defer w.mu.Unlock()
	if a := w.arrived[namespace]; a != nil {
		return *a
	}
	return arrivals{}
}

func (w *statusWriter) work(ctx context.Context) {
	for {
		key, shutdown := w.queue.Get()
		if shutdown {
			return
		}
		app := &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
		var err error
		for attempt := range 5 {
			if err = w.c.Patch(ctx, app, client.RawPatch(types.MergePatchType, writerPatch)); err == nil || apierrors.IsNotFound(err) || ctx.Err() != nil {
				break
			}
			time.Sleep(time.Duration(attempt+1) * 200 * time.Millisecond)
		}
		w.mu.Lock()
		switch {
		case err == nil:
			w.written[key.Namespace]++
			w.last[key.Namespace] = time.Now()
		case !apierrors.IsNotFound(err) && ctx.Err() == nil && w.err == nil:
			w.err = fmt.Errorf("status writer: %s: %w", key, err)
		}
		close(w.changed)
		w.changed = make(chan struct{})
		w.mu.Unlock()
		w.queue.Done(key)
	}
}

// waitWritten waits until n Applications of namespace have their status, and returns when
// the last of those writes completed.
func (w *statusWriter) waitWritten(ctx context.Context, namespace string, n int, timeout time.Duration) (time.Time, error) {
	deadline := time.After(timeout)
	for {
		w.mu.Lock()
		written, last, changed, err := w.written[namespace], w.last[namespace], w.changed, w.err
		w.mu.Unlock()
		switch {
		case err != nil:
			return time.Time{}, err
		case written >= n:
			return last, nil
		}
		select {
		case <-changed:
		case <-deadline:
			return time.Time{}, fmt.Errorf("status writer: only %d of %d Applications in %s have a status after %s", written, n, namespace, timeout)
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		}
	}
}

// failed returns the error that stopped the writer, if any.
func (w *statusWriter) failed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}
