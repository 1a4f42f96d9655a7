package main

import (
	"testing"

	"github.com/google/pprof/profile"
)

func TestProfileSharesCountEveryFrameOfAStackOnce(t *testing.T) {
	fn := map[string]*profile.Function{}
	loc := func(names ...string) []*profile.Location {
		var out []*profile.Location
		for _, n := range names {
			if fn[n] == nil {
				fn[n] = &profile.Function{Name: n}
			}
			out = append(out, &profile.Location{Line: []profile.Line{{Function: fn[n]}}})
		}
		return out
	}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples"}, {Type: "cpu", Unit: "nanoseconds"}},
		Sample: []*profile.Sample{
			// A watch event encoded to JSON: one kind of work, one cost.
			{Value: []int64{1, 3e9}, Location: loc("encoding/json.(*encodeState).marshal", "k8s.io/apiserver/pkg/storage/cacher.(*cacheWatcher).process")},
			// A patch whose stack also decodes JSON: the first kind of work that matches.
			{Value: []int64{1, 1e9}, Location: loc("sigs.k8s.io/json.Unmarshal", "k8s.io/apiserver/pkg/storage/cacher.dispatchEvent",
				"k8s.io/apiserver/pkg/endpoints/handlers.(*patcher).patchResource")},
		},
	}
	got := summarizeProfile(p, 1)
	if got.CPU != 4 {
		t.Errorf("CPU = %v, want 4", got.CPU)
	}
	shares := map[string]float64{}
	for _, a := range append(got.Areas, got.Costs...) {
		shares[a.Name] = a.Share
	}
	for area, want := range map[string]float64{
		"watches: sending events to watchers":  0.75,
		"PATCH and server-side apply requests": 0.25,
		"other":                                0,
		"JSON encoding and decoding":           1,
		"managed fields":                       0,
	} {
		if shares[area] != want {
			t.Errorf("%s = %v, want %v", area, shares[area], want)
		}
	}
	if len(got.Top) != 1 || got.Top[0].Name != "encoding/json.(*encodeState).marshal" || got.Top[0].Share != 0.75 {
		t.Errorf("top = %+v", got.Top)
	}
}
