package opsignal

import (
	"testing"

	"github.com/gitops-service/gitops-service/backend-shared/db"
)

func TestDecidingPrefersTheRaiserThenAnOperationNotCovered(t *testing.T) {
	raiser := &db.Operation{ID: "raiser", EngineInstanceID: "a", Signalled: true}
	covered := &db.Operation{ID: "covered", EngineInstanceID: "a", CoveredBySignal: true}
	unknown := &db.Operation{ID: "unknown", EngineInstanceID: "a"}
	other := &db.Operation{ID: "other", EngineInstanceID: "b", CoveredBySignal: true}
	for _, tc := range []struct {
		name string
		ops  []*db.Operation
		want map[string]string
	}{
		{"none", nil, map[string]string{}},
		{"the raiser, first", []*db.Operation{raiser, unknown, covered}, map[string]string{"a": "raiser"}},
		{"the raiser, last", []*db.Operation{covered, unknown, raiser}, map[string]string{"a": "raiser"}},
		{"not covered over covered", []*db.Operation{covered, unknown}, map[string]string{"a": "unknown"}},
		{"not covered, first", []*db.Operation{unknown, covered}, map[string]string{"a": "unknown"}},
		{"only covered", []*db.Operation{covered}, map[string]string{"a": "covered"}},
		{"each instance its own", []*db.Operation{covered, other, unknown}, map[string]string{"a": "unknown", "b": "other"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := map[string]string{}
			for engine, op := range deciding(tc.ops) {
				got[engine] = op.ID
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for engine, id := range tc.want {
				if got[engine] != id {
					t.Errorf("engine %s: got %s, want %s", engine, got[engine], id)
				}
			}
		})
	}
}
