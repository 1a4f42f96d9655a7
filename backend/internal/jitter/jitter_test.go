package jitter

import (
	"testing"
	"time"
)

func TestSpread(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    time.Duration
		u    float64
		want time.Duration
	}{
		{"zero stays zero", 0, 0.9, 0},
		{"negative stays", -time.Second, 0.1, -time.Second},
		{"lowest", 100 * time.Second, 0, 85 * time.Second},
		{"middle", 100 * time.Second, 0.5, 100 * time.Second},
		{"near highest", 100 * time.Second, 0.999999, 115 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := spread(tc.d, tc.u)
			if diff := got - tc.want; diff < -time.Millisecond || diff > time.Millisecond {
				t.Fatalf("spread(%v, %v) = %v, want %v", tc.d, tc.u, got, tc.want)
			}
		})
	}
	d := 5 * time.Minute
	lo, hi := d-time.Duration(Fraction*float64(d)), d+time.Duration(Fraction*float64(d))
	seen := map[time.Duration]bool{}
	for range 1000 {
		got := Spread(d)
		if got < lo || got > hi {
			t.Fatalf("Spread(%v) = %v, outside [%v, %v]", d, got, lo, hi)
		}
		seen[got] = true
	}
	if len(seen) < 100 {
		t.Fatalf("Spread gave only %d different values in 1000 calls", len(seen))
	}
}
