package argoapp

import "sync"

// tenantLocks serialises the work on each tenant's AppProjects. Application and AppProject
// operations of one tenant run on different workers; without it, an AppProject operation
// that read the database before an application row existed could delete the project an
// Application operation had just created for that row.
type tenantLocks struct {
	mu   sync.Mutex
	held map[string]*tenantLock
}

type tenantLock struct {
	sync.Mutex
	users int // callers holding or waiting for it; the entry goes when none is left
}

// lock blocks until the caller alone works on tenantID's projects, and returns the unlock.
func (l *tenantLocks) lock(tenantID string) (unlock func()) {
	l.mu.Lock()
	if l.held == nil {
		l.held = map[string]*tenantLock{}
	}
	entry := l.held[tenantID]
	if entry == nil {
		entry = &tenantLock{}
		l.held[tenantID] = entry
	}
	entry.users++
	l.mu.Unlock()

	entry.Lock()
	return func() {
		entry.Unlock()
		l.mu.Lock()
		entry.users--
		if entry.users == 0 {
			delete(l.held, tenantID)
		}
		l.mu.Unlock()
	}
}
