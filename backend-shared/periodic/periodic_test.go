package periodic

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestRunCallsUntilCanceledAndSurvivesErrors(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int32
	done := make(chan struct{})
	go func() {
		Run(ctx, "test", 10*time.Millisecond, func(context.Context) error {
			if calls.Add(1) >= 3 {
				cancel()
			}
			return errors.New("fails every time")
		})
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after the context ended")
	}
	if got := calls.Load(); got < 3 {
		t.Fatalf("calls = %d, want at least 3 despite errors", got)
	}
}

func TestRunDisabledByZeroInterval(t *testing.T) {
	called := false
	Run(context.Background(), "test", 0, func(context.Context) error { called = true; return nil })
	if called {
		t.Fatal("a zero interval must not run anything")
	}
}

func TestJitterStaysWithinTwentyPercent(t *testing.T) {
	for range 1000 {
		d := Jittered(time.Second)
		if d < 800*time.Millisecond || d > 1200*time.Millisecond {
			t.Fatalf("Jittered(1s) = %s, outside ±20%%", d)
		}
	}
}

func TestTaskRunsOnTheLeaderUntilCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int32
	task := &Task{Name: "test", Interval: 10 * time.Millisecond, Run: func(context.Context) error {
		if calls.Add(1) == 2 {
			cancel()
		}
		return nil
	}}
	if !task.NeedLeaderElection() {
		t.Fatal("a periodic task must run on the leader only")
	}
	if err := task.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if got := calls.Load(); got != 2 {
		t.Fatalf("calls = %d, want 2 before the context ended", got)
	}
}
