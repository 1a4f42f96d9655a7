package tenantlock

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestLocksSerialiseOneTenantOnly(t *testing.T) {
	var locks Locks
	unlockA := locks.Lock("a")

	// Another tenant is not held up.
	done := make(chan struct{})
	go func() {
		locks.Lock("b")()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("tenant b waited for tenant a's lock")
	}

	// The same tenant is.
	acquired := make(chan struct{})
	go func() {
		unlock := locks.Lock("a")
		close(acquired)
		unlock()
	}()
	select {
	case <-acquired:
		t.Fatal("tenant a was locked twice at once")
	case <-time.After(200 * time.Millisecond):
	}
	unlockA()
	select {
	case <-acquired:
	case <-time.After(5 * time.Second):
		t.Fatal("tenant a's lock was not handed on after unlock")
	}
}

func TestLocksExcludeConcurrentCallersAndLeaveNothingBehind(t *testing.T) {
	var locks Locks
	var inside, overlaps atomic.Int32
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			unlock := locks.Lock("tenant")
			if inside.Add(1) > 1 {
				overlaps.Add(1)
			}
			time.Sleep(time.Millisecond)
			inside.Add(-1)
			unlock()
		}()
	}
	wg.Wait()
	if n := overlaps.Load(); n != 0 {
		t.Fatalf("%d callers held the tenant's lock together", n)
	}
	if n := len(locks.held); n != 0 {
		t.Fatalf("%d lock entries left after every caller unlocked", n)
	}
}
