package testenv

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// lowercase loses the case of what it decodes: a copy's field that does not keep a value.
type lowercase string

func (l *lowercase) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*l = lowercase(strings.ToLower(s))
	return nil
}

func (l lowercase) MarshalJSON() ([]byte, error) { return json.Marshal(string(l)) }

type item struct {
	Name  string    `json:"name"`
	Count int       `json:"count,omitempty"`
	Color lowercase `json:"color,omitempty"`
}

type Embedded struct {
	Kind string `json:"kind,omitempty"`
}

type partialCopy struct {
	Embedded `json:",inline"`
	Items    []item            `json:"items,omitempty"`
	Labels   map[string]string `json:"labels,omitempty"`
	Data     []byte            `json:"data,omitempty"`
}

func TestDecodeLoss(t *testing.T) {
	tests := []struct {
		name     string
		obj      map[string]any
		wantLost []string
		wantErr  bool
	}{
		{
			name: "fields the copy lacks are not compared; zero values omitempty drops are kept",
			obj: map[string]any{
				"kind":    "Thing",
				"items":   []any{map[string]any{"name": "a", "count": int64(2), "extra": "x"}, map[string]any{"name": "b", "count": 0}},
				"labels":  map[string]any{"x": "y"},
				"data":    "aGk=",
				"unknown": map[string]any{"deep": true},
			},
		},
		{
			name:     "a value the copy changes is lost",
			obj:      map[string]any{"items": []any{map[string]any{"name": "a", "color": "Red"}}},
			wantLost: []string{".items[0].color"},
		},
		{
			name:    "a value of another type does not decode",
			obj:     map[string]any{"items": []any{map[string]any{"name": "a", "count": "two"}}},
			wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lost, err := DecodeLoss(tt.obj, &partialCopy{})
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, want one: %v", err, tt.wantErr)
			}
			if !slices.Equal(lost, tt.wantLost) {
				t.Fatalf("lost %v, want %v", lost, tt.wantLost)
			}
		})
	}
}
