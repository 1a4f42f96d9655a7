package main

import (
	"testing"

	"github.com/google/pprof/profile"
)

// stackOf is a profile location list of the functions names, leaf first.
func stackOf(fn map[string]*profile.Function) func(names ...string) []*profile.Location {
	return func(names ...string) []*profile.Location {
		var out []*profile.Location
		for _, n := range names {
			if fn[n] == nil {
				fn[n] = &profile.Function{Name: n}
			}
			out = append(out, &profile.Location{Line: []profile.Line{{Function: fn[n]}}})
		}
		return out
	}
}

// sharesByName are a profile's areas and costs by name.
func sharesByName(p *CPUProfile) map[string]float64 {
	shares := map[string]float64{}
	for _, a := range append(p.Areas, p.Costs...) {
		shares[a.Name] = a.Share
	}
	return shares
}

func TestProfileSharesCountEveryFrameOfAStackOnce(t *testing.T) {
	loc := stackOf(map[string]*profile.Function{})
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
	got := summarizeProfile(p, apiServerKinds, 1)
	if got.CPU != 6 {
		t.Errorf("CPU = %v, want 6", got.CPU)
	}
	shares := sharesByName(got)
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

func TestServiceProfileSharesByWork(t *testing.T) {
	loc := stackOf(map[string]*profile.Function{})
	reconcileHandler := "sigs.k8s.io/controller-runtime/pkg/internal/controller.(*Controller[go.shape.struct { k8s.io/apimachinery/pkg/types.NamespacedName }]).reconcileHandler"
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples"}, {Type: "cpu", Unit: "nanoseconds"}},
		Sample: []*profile.Sample{
			// A reconcile reading a row: one kind of work, one cost.
			{Value: []int64{1, 2e9}, Location: loc("github.com/jackc/pgx/v5.(*Conn).Query", reconcileHandler)},
			// An informer decoding a watch event.
			{Value: []int64{1, 1e9}, Location: loc("sigs.k8s.io/json.UnmarshalCaseSensitivePreserveInts",
				"k8s.io/apimachinery/pkg/watch.(*StreamWatcher).receive")},
			// An idle worker looking for work.
			{Value: []int64{1, 1e9}, Location: loc("runtime.futex", "runtime.findRunnable", "runtime.schedule")},
		},
	}
	shares := sharesByName(summarizeProfile(p, serviceKinds, 1))
	for name, want := range map[string]float64{
		"reconciles":                                  0.5,
		"informers: decoding watch events":            0.25,
		"Go scheduler: parking and waking goroutines": 0.25,
		"other":                      0,
		"PostgreSQL client":          0.5,
		"JSON encoding and decoding": 0.25,
	} {
		if shares[name] != want {
			t.Errorf("%s = %v, want %v", name, shares[name], want)
		}
	}
}
