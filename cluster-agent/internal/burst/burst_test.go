package burst

import (
	"testing"
	"time"
)

func TestDefer(t *testing.T) {
	const maxHold = 400 * time.Millisecond
	// tick is well under maxHold and well over the scheduling delays of a busy machine.
	const tick = 100 * time.Millisecond
	tests := []struct {
		name string
		hold *Hold
		// before runs before Defer; during, tick after it (nil: nothing).
		before, during step
		// id is the resource deferred ("a" if empty).
		id string
		// held: Defer keeps the resume, which must run at least min and less than below
		// after Defer.
		held       bool
		min, below time.Duration
	}{
		{name: "no hold", hold: nil},
		{name: "no burst", hold: &Hold{Max: maxHold}},
		{name: "deferring disabled", hold: &Hold{}, before: queue("a")},
		{name: "a resource outside the burst", hold: &Hold{Max: maxHold}, before: queue("a"), id: "x"},
		{name: "the burst is carried out", hold: &Hold{Max: maxHold}, before: queue("a", "b"),
			during: steps(quiet, done("a", "b")), held: true, min: tick, below: maxHold},
		{name: "more is coming", hold: &Hold{Max: maxHold}, before: queue("a"),
			during: done("a"), held: true, min: maxHold - tick, below: maxHold + tick},
		{name: "some is not worked on yet", hold: &Hold{Max: maxHold}, before: queue("a", "b"),
			during: steps(quiet, done("a")), held: true, min: maxHold - tick, below: maxHold + tick},
		{name: "work the burst did not queue", hold: &Hold{Max: maxHold}, before: steps(queue("a"), quiet),
			during: done("x"), held: true, min: maxHold - tick, below: maxHold + tick},
		{name: "a burst over before", hold: &Hold{Max: maxHold}, before: steps(queue("a"), done("a"), quiet)},
		{name: "a burst on for Max defers no more", hold: &Hold{Max: maxHold}, before: steps(queue("a"), sleep(maxHold+tick))},
		{name: "more queued keeps the burst's start", hold: &Hold{Max: maxHold},
			before: steps(queue("a"), sleep(maxHold-2*tick), queue("b")), held: true, min: tick, below: 3 * tick},
		{name: "the next burst defers again", hold: &Hold{Max: maxHold}, before: steps(queue("a"), done("a"), quiet, queue("b")),
			during: steps(quiet, done("b")), id: "b", held: true, min: tick, below: maxHold},
		{name: "the next burst defers only its own", hold: &Hold{Max: maxHold}, before: steps(queue("a"), done("a"), quiet, queue("b"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.before != nil {
				tt.before(tt.hold)
			}
			id := tt.id
			if id == "" {
				id = "a"
			}
			resumed := make(chan time.Time, 1)
			start := time.Now()
			held := tt.hold.Defer(id, func() { resumed <- time.Now() })
			if held != tt.held {
				t.Fatalf("Defer = %v, want %v", held, tt.held)
			}
			if tt.during != nil {
				time.Sleep(tick)
				tt.during(tt.hold)
			}
			if !held {
				select {
				case <-resumed:
					t.Fatal("resumed what was not deferred")
				case <-time.After(tick):
				}
				return
			}
			select {
			case at := <-resumed:
				if after := at.Sub(start); after < tt.min || after >= tt.below {
					t.Errorf("resumed %v after Defer, want at least %v and under %v", after, tt.min, tt.below)
				}
			case <-time.After(tt.below + tick):
				t.Fatalf("not resumed within %v", tt.below+tick)
			}
		})
	}
}

func TestDeferResumesTheLastDeferralOfAResourceOnce(t *testing.T) {
	h := &Hold{Max: time.Minute}
	h.Queued("a")
	var calls []string
	for _, name := range []string{"first", "second"} {
		if !h.Defer("a", func() { calls = append(calls, name) }) {
			t.Fatalf("%s deferral not kept", name)
		}
	}
	h.Quiet()
	h.Done("a")
	h.Done("a")
	if len(calls) != 1 || calls[0] != "second" {
		t.Errorf("resumed %v, want [second]", calls)
	}
}

type step = func(*Hold)

func queue(ids ...string) step {
	return func(h *Hold) {
		for _, id := range ids {
			h.Queued(id)
		}
	}
}

func done(ids ...string) step {
	return func(h *Hold) {
		for _, id := range ids {
			h.Done(id)
		}
	}
}

func quiet(h *Hold) { h.Quiet() }

func sleep(d time.Duration) step { return func(*Hold) { time.Sleep(d) } }

func steps(ss ...step) step {
	return func(h *Hold) {
		for _, s := range ss {
			s(h)
		}
	}
}
