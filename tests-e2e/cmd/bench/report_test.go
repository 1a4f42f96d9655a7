package main

import (
	"reflect"
	"testing"
)

func TestRatioSpreads(t *testing.T) {
	run := func(n int, apps, statuses float64) Throughput {
		return Throughput{N: n, AppsRatio: apps, StatusRatio: statuses}
	}
	for _, tc := range []struct {
		name string
		tps  []Throughput
		want []ratioSpread
	}{
		{name: "none", tps: nil, want: nil},
		{name: "one run: its own ratios", tps: []Throughput{run(1000, 2.6, 2.5)},
			want: []ratioSpread{{N: 1000, Runs: 1, Apps: spread{2.6, 2.6, 2.6}, Status: spread{2.5, 2.5, 2.5}}}},
		{name: "odd runs: the middle one", tps: []Throughput{run(1000, 2.7, 2.6), run(1000, 2.4, 2.3), run(1000, 2.5, 2.4)},
			want: []ratioSpread{{N: 1000, Runs: 3, Apps: spread{2.5, 2.4, 2.7}, Status: spread{2.4, 2.3, 2.6}}}},
		{name: "even runs: the mean of the middle two", tps: []Throughput{run(1000, 2.8, 2.6), run(1000, 2.4, 2.2)},
			want: []ratioSpread{{N: 1000, Runs: 2, Apps: spread{2.6, 2.4, 2.8}, Status: spread{2.4, 2.2, 2.6}}}},
		{name: "by size; failed runs left out", tps: []Throughput{run(10000, 2.6, 2.6), {N: 1000, Error: "stalled"}, run(1000, 2.5, 2.4)},
			want: []ratioSpread{
				{N: 1000, Runs: 1, Apps: spread{2.5, 2.5, 2.5}, Status: spread{2.4, 2.4, 2.4}},
				{N: 10000, Runs: 1, Apps: spread{2.6, 2.6, 2.6}, Status: spread{2.6, 2.6, 2.6}},
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ratioSpreads(tc.tps)
			for i := range got { // compare at the precision the report prints
				for _, s := range []*spread{&got[i].Apps, &got[i].Status} {
					s.Median, s.Min, s.Max = round2(s.Median), round2(s.Min), round2(s.Max)
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func round2(v float64) float64 { return float64(int(v*100+0.5)) / 100 }
