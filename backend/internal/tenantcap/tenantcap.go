// Package tenantcap keeps one tenant from taking every worker of a controller. The checks of
// ManagedEnvironments and RepositoryCredentials call the tenants' own clusters and Git
// servers, which may hang until their timeout: a tenant with as many hanging objects as
// there are workers would otherwise hold them all, and every other tenant would wait.
package tenantcap

import (
	"context"
	"slices"
	"sync"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/gitops-service/gitops-service/backend-shared/queue"
)

// PerTenant is the share of workers one tenant (namespace) may hold: a quarter, at least one.
func PerTenant(workers int) int { return max(1, workers/4) }

// Limiter runs at most its share of reconciles at once for the objects of one namespace.
// An object of a namespace that has used its share waits, without holding a worker, and
// is handed the next free slot of its namespace in the order it came.
type Limiter struct {
	next  reconcile.Reconciler
	max   int
	queue queue.Handle[ctrl.Request]

	mu      sync.Mutex
	tenants map[string]*tenant
}

type tenant struct {
	running int            // reconciles under way, and slots handed over
	waiting []ctrl.Request // in the order they came
	handed  []ctrl.Request // handed a slot, back in the workqueue
}

// Limit wraps r; the controller must also watch the Limiter's Source.
func Limit(r reconcile.Reconciler, perTenant int) *Limiter {
	return &Limiter{next: r, max: max(1, perTenant), tenants: map[string]*tenant{}}
}

// Source hands the controller's workqueue to the Limiter, which puts waiting objects back
// in it; add it with WatchesRawSource.
func (l *Limiter) Source() source.TypedSource[ctrl.Request] { return l.queue.Source() }

func (l *Limiter) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if !l.acquire(req) {
		return ctrl.Result{}, nil // it waits its turn; release puts it back in the queue
	}
	defer l.release(req.Namespace)
	return l.next.Reconcile(ctx, req)
}

func (l *Limiter) acquire(req ctrl.Request) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.tenants[req.Namespace]
	if t == nil {
		t = &tenant{}
		l.tenants[req.Namespace] = t
	}
	if i := slices.Index(t.handed, req); i >= 0 {
		t.handed = slices.Delete(t.handed, i, i+1)
		return true // the slot was kept for it
	}
	if t.running < l.max {
		t.running++
		return true
	}
	if !slices.Contains(t.waiting, req) {
		t.waiting = append(t.waiting, req)
	}
	return false
}

// release passes the slot to the namespace's first waiting object, or frees it.
func (l *Limiter) release(ns string) {
	l.mu.Lock()
	t := l.tenants[ns]
	if len(t.waiting) == 0 {
		if t.running--; t.running == 0 && len(t.handed) == 0 {
			delete(l.tenants, ns)
		}
		l.mu.Unlock()
		return
	}
	next := t.waiting[0]
	t.waiting = t.waiting[1:]
	t.handed = append(t.handed, next)
	l.mu.Unlock()
	l.queue.Add(next)
}
