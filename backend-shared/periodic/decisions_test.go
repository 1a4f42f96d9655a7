package periodic

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestRunNowCallsAtOnce(t *testing.T) {
	// A zero interval disables the periodic calls, but RunNow's first call still happens,
	// and at once: nothing here waits for an interval.
	var calls int
	RunNow(context.Background(), "test", 0, func(context.Context) error { calls++; return nil })
	if calls != 1 {
		t.Fatalf("calls = %d, want exactly the immediate one", calls)
	}
}

func TestRunNowSurvivesAFailingFirstCall(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int32
	RunNow(ctx, "test", time.Millisecond, func(context.Context) error {
		if calls.Add(1) == 2 {
			cancel()
		}
		return errors.New("fails")
	})
	if got := calls.Load(); got != 2 {
		t.Fatalf("calls = %d, want the failed first call and one periodic call", got)
	}
}

func TestRunWithAnEndedContextCallsNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	called := false
	Run(ctx, "test", time.Millisecond, func(context.Context) error { called = true; return nil })
	if called {
		t.Fatal("Run called fn after its context ended")
	}
}

func TestRunDisabledByANegativeInterval(t *testing.T) {
	called := false
	Run(context.Background(), "test", -time.Second, func(context.Context) error { called = true; return nil })
	if called {
		t.Fatal("a negative interval must not run anything")
	}
}

func TestRunPassesItsContextOn(t *testing.T) {
	type key struct{}
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
	var got any
	Run(ctx, "test", time.Millisecond, func(c context.Context) error {
		got = c.Value(key{})
		cancel()
		return nil
	})
	if got != "v" {
		t.Fatalf("fn's context lost the caller's values: %v", got)
	}
}

func TestJitteredBounds(t *testing.T) {
	tests := []struct {
		interval time.Duration
		lo, hi   time.Duration
	}{
		{0, 0, 0},
		{10 * time.Millisecond, 8 * time.Millisecond, 12 * time.Millisecond},
		{time.Minute, 48 * time.Second, 72 * time.Second},
		{time.Hour, 48 * time.Minute, 72 * time.Minute},
	}
	for _, tt := range tests {
		lo, hi := tt.hi, tt.lo
		for range 500 {
			d := Jittered(tt.interval)
			if d < tt.lo || d > tt.hi {
				t.Fatalf("Jittered(%s) = %s, outside [%s, %s]", tt.interval, d, tt.lo, tt.hi)
			}
			lo, hi = min(lo, d), max(hi, d)
		}
		// Spread out, not a constant: replicas must not line up. 500 draws cover more than
		// half the range except with negligible probability.
		if tt.interval > 0 && hi-lo < (tt.hi-tt.lo)/2 {
			t.Errorf("Jittered(%s) stayed within [%s, %s]", tt.interval, lo, hi)
		}
	}
}

func TestTaskWithoutIntervalReturnsAtOnce(t *testing.T) {
	called := false
	task := &Task{Name: "disabled", Run: func(context.Context) error { called = true; return nil }}
	if err := task.Start(context.Background()); err != nil || called {
		t.Fatalf("Start = %v, called %v; want a disabled task to return without running", err, called)
	}
}
