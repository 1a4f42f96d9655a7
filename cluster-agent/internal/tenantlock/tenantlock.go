// Package tenantlock serialises the work on each tenant's Argo CD objects. Operations on
// one tenant's applications, AppProjects, cluster and repository Secrets run on different
// workers, and each decides from a database read whether to write or delete: without a
// lock, one that read before another's change could undo it (an AppProject operation that
// read before a new application row existed deleting the AppProject the Application
// operation had just created for it).
package tenantlock

import "sync"

// Locks holds one lock per tenant in use; its zero value is ready.
type Locks struct {
	mu   sync.Mutex
	held map[string]*entry
}

type entry struct {
	sync.Mutex
	users int // callers holding or waiting for it; the entry goes when none is left
}

// Lock blocks until the caller alone works on tenantID's objects, and returns the unlock.
func (l *Locks) Lock(tenantID string) (unlock func()) {
	l.mu.Lock()
	if l.held == nil {
		l.held = map[string]*entry{}
	}
	e := l.held[tenantID]
	if e == nil {
		e = &entry{}
		l.held[tenantID] = e
	}
	e.users++
	l.mu.Unlock()

	e.Lock()
	return func() {
		e.Unlock()
		l.mu.Lock()
		e.users--
		if e.users == 0 {
			delete(l.held, tenantID)
		}
		l.mu.Unlock()
	}
}
