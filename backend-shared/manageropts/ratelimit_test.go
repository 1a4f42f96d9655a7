package manageropts

import (
	"testing"
	"time"
)

func TestRetryRateLimiterCapsTheBackoff(t *testing.T) {
	rl := RetryRateLimiter[string]()
	if d := rl.When("a"); d > FirstRetryDelay {
		t.Fatalf("first retry after %s, want at most %s", d, FirstRetryDelay)
	}
	// Thirty failures would be 5 ms × 2^29 (about 31 days) uncapped.
	var last time.Duration
	for range 30 {
		last = rl.When("a")
	}
	if last != MaxRetryDelay {
		t.Fatalf("retry after 30 failures in %s, want the cap %s", last, MaxRetryDelay)
	}
	// Forgetting an item (after a successful reconcile) resets its backoff.
	rl.Forget("a")
	if d := rl.When("a"); d > FirstRetryDelay {
		t.Fatalf("retry after Forget in %s, want at most %s", d, FirstRetryDelay)
	}
}
