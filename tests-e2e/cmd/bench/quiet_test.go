package main

import (
	"math"
	"testing"
	"time"
)

func TestBusyCores(t *testing.T) {
	for _, tc := range []struct {
		name          string
		before, after map[string]float64
		d             time.Duration
		want          float64
	}{
		{name: "idle", before: map[string]float64{"etcd": 3}, after: map[string]float64{"etcd": 3}, d: time.Second, want: 0},
		{name: "summed over the programs", before: map[string]float64{"etcd": 1, "kube-apiserver": 10},
			after: map[string]float64{"etcd": 1.5, "kube-apiserver": 11.5}, d: 2 * time.Second, want: 1},
		{name: "a program started between the readings counts from zero", before: map[string]float64{"etcd": 1},
			after: map[string]float64{"etcd": 1.1, "postgres": 0.1}, d: time.Second, want: 0.2},
		{name: "a program gone since counts nothing", before: map[string]float64{"etcd": 1, "postgres": 5},
			after: map[string]float64{"etcd": 1}, d: time.Second, want: 0},
		{name: "a program whose processes ended takes nothing from the others", before: map[string]float64{"etcd": 1, "postgres": 5},
			after: map[string]float64{"etcd": 1.3, "postgres": 4.9}, d: time.Second, want: 0.3},
		{name: "no time passed", before: nil, after: map[string]float64{"etcd": 1}, d: 0, want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := busyCores(tc.before, tc.after, tc.d); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("busyCores = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestQuietWaits(t *testing.T) {
	got := quietWaits(Quiet{Seconds: 4.04, Cores: 0.05}, Quiet{Seconds: 120, Cores: 0.62})
	if want := "4.0 s / 120.0 s (not quiet: 0.62 cores)"; got != want {
		t.Errorf("quietWaits = %q, want %q", got, want)
	}
}
