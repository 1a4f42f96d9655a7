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
			// A watch, which the API server serves under its LIST handler: a watch, not a LIST.
			{Value: []int64{1, 2e9}, Location: loc("k8s.io/apiserver/pkg/endpoints/handlers.(*WatchServer).HandleHTTP",
				"k8s.io/apiserver/pkg/endpoints/handlers.handleWatch", "k8s.io/apiextensions-apiserver/pkg/apiserver.(*crdHandler).serveResource.ListResource.func3")},
		},
	}
	got := summarizeProfile(p, 1)
	if got.CPU != 6 {
		t.Errorf("CPU = %v, want 6", got.CPU)
	}
	shares := map[string]float64{}
	for _, a := range append(got.Areas, got.Costs...) {
		shares[a.Name] = a.Share
	}
	for area, want := range map[string]float64{
		"watches: sending events to watchers":  5.0 / 6,
		"PATCH and server-side apply requests": 1.0 / 6,
		"GET and LIST requests":                0,
		"other":                                0,
		"JSON encoding and decoding":           4.0 / 6,
		"managed fields":                       0,
	} {
		if shares[area] != want {
			t.Errorf("%s = %v, want %v", area, shares[area], want)
		}
	}
	if len(got.Top) != 1 || got.Top[0].Name != "encoding/json.(*encodeState).marshal" || got.Top[0].Share != 0.5 {
		t.Errorf("top = %+v", got.Top)
	}
}
