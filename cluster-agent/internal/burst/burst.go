// Package burst puts a burst of operations before the recording of its Applications'
// status. When many changes arrive at once (a tenant applies hundreds of GitOpsDeployments,
// a namespace is restored), creating their Applications and recording the status of the
// first ones compete for the same API server, database and cores: recording as they come
// delays the last Application by the whole cost of the statuses before it. Deferring the
// burst's own recording until the burst is carried out lets Argo CD start on every
// Application sooner; the records then catch up, each Application read once however often
// its status changed, and the last status arrives no later. The status of everything else
// is recorded as it comes.
package burst

import (
	"sync"
	"time"
)

// DefaultMax is how long a burst defers the recording at most, by default: longer than
// this service takes to create 10,000 Applications on a small control plane.
const DefaultMax = 2 * time.Minute

// Hold defers work on the resources of a burst while the burst is on: from the first
// resource queued until no more are coming (Quiet) and every one queued was worked on.
// Resources are named by their ids. A nil Hold, or one with Max 0, defers nothing.
type Hold struct {
	// Max bounds how long one burst defers: after Max what it deferred is resumed, and
	// nothing more is deferred until the burst ends, so a status is never more than Max
	// late because of a burst, however long it lasts.
	Max time.Duration

	mu sync.Mutex
	// queued holds the resources of the burst that is on, the burst-th (nil: none);
	// pending those not worked on yet; deferred what to resume when it ends, by resource.
	queued, pending map[string]struct{}
	deferred        map[string]func()
	burst           int
	// coming: more may be queued; expired: the burst has been on for Max (expiry fires then).
	coming, expired bool
	expiry          *time.Timer
}

// Queued notes the resource id queued, beginning a burst when none is on, and that more
// may be coming.
func (h *Hold) Queued(id string) {
	if h == nil || h.Max <= 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.queued == nil {
		h.expired = false
		h.burst++
		h.queued, h.pending, h.deferred = map[string]struct{}{}, map[string]struct{}{}, map[string]func(){}
		burst := h.burst
		h.expiry = time.AfterFunc(h.Max, func() { h.expire(burst) })
	}
	h.coming = true
	h.queued[id] = struct{}{}
	h.pending[id] = struct{}{}
}

// Done notes the resource id worked on (carried out, or left to a retry); a resource the
// burst did not queue is ignored.
func (h *Hold) Done(id string) {
	if h == nil {
		return
	}
	h.mu.Lock()
	delete(h.pending, id)
	resume := h.endIfOverLocked()
	h.mu.Unlock()
	run(resume)
}

// Quiet notes that no more is coming: the burst ends once what it queued was worked on.
func (h *Hold) Quiet() {
	if h == nil {
		return
	}
	h.mu.Lock()
	h.coming = false
	resume := h.endIfOverLocked()
	h.mu.Unlock()
	run(resume)
}

// Defer keeps resume, to be called when the burst ends or has been on for Max, if the
// resource id belongs to a burst that is on and defers still; it reports whether it kept
// it. Of several deferrals of one resource, the last one's resume is called.
func (h *Hold) Defer(id string, resume func()) bool {
	if h == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, member := h.queued[id]; h.expired || !member {
		return false
	}
	h.deferred[id] = resume
	return true
}

func (h *Hold) endIfOverLocked() map[string]func() {
	if h.queued == nil || h.coming || len(h.pending) > 0 {
		return nil
	}
	h.expiry.Stop()
	resume := h.deferred
	h.queued, h.pending, h.deferred = nil, nil, nil
	return resume
}

// expire resumes what the burst-th burst deferred once it has been on for Max, if it is
// still on.
func (h *Hold) expire(burst int) {
	h.mu.Lock()
	var resume map[string]func()
	if h.queued != nil && !h.expired && h.burst == burst {
		h.expired = true
		resume, h.deferred = h.deferred, map[string]func(){}
	}
	h.mu.Unlock()
	run(resume)
}

func run(resume map[string]func()) {
	for _, f := range resume {
		f()
	}
}
