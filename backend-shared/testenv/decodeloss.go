package testenv

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// DecodeLoss decodes obj (an object as the API server returns it) into into, a pointer to
// a typed value, and returns the JSON paths of the values obj holds at fields into's type
// has that the decoded value does not give back: a field renamed, retyped or dropped by a
// copy of an API's types that should follow the original. Fields the type does not have
// are not compared: a copy may leave out what it never reads. Sorted.
func DecodeLoss(obj map[string]any, into any) ([]string, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var want any
	if err := json.Unmarshal(data, &want); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, into); err != nil {
		return nil, fmt.Errorf("decoding into %T: %w", into, err)
	}
	back, err := json.Marshal(into)
	if err != nil {
		return nil, err
	}
	var got any
	if err := json.Unmarshal(back, &got); err != nil {
		return nil, err
	}
	var lost []string
	compareJSON(want, got, reflect.TypeOf(into), "", &lost)
	slices.Sort(lost)
	return lost, nil
}

var jsonMarshaler = reflect.TypeFor[json.Marshaler]()

// compareJSON walks want along the Go type t and records the paths where got differs.
func compareJSON(want, got any, t reflect.Type, path string, lost *[]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	leaf := t.Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(jsonMarshaler) ||
		(t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8)
	switch {
	case leaf || (t.Kind() != reflect.Struct && t.Kind() != reflect.Slice && t.Kind() != reflect.Map):
		if !reflect.DeepEqual(want, got) && (got != nil || !zeroJSON(want)) {
			*lost = append(*lost, path)
		}
	case t.Kind() == reflect.Struct || t.Kind() == reflect.Map:
		w, _ := want.(map[string]any)
		g, _ := got.(map[string]any)
		for key, wv := range w {
			var ft reflect.Type
			if t.Kind() == reflect.Map {
				ft = t.Elem()
			} else {
				var ok bool
				if ft, ok = fieldType(t, key); !ok {
					continue
				}
			}
			compareJSON(wv, g[key], ft, path+"."+key, lost)
		}
	default: // a slice
		w, _ := want.([]any)
		g, _ := got.([]any)
		if len(w) != len(g) {
			*lost = append(*lost, path)
			return
		}
		for i := range w {
			compareJSON(w[i], g[i], t.Elem(), fmt.Sprintf("%s[%d]", path, i), lost)
		}
	}
}

// fieldType is the type of the field of struct t that JSON names name, looking into
// embedded structs without a name of their own.
func fieldType(t reflect.Type, name string) (reflect.Type, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "-" || !f.IsExported() {
			continue
		}
		if f.Anonymous && tag == "" {
			inner := f.Type
			for inner.Kind() == reflect.Pointer {
				inner = inner.Elem()
			}
			if inner.Kind() == reflect.Struct {
				if ft, ok := fieldType(inner, name); ok {
					return ft, true
				}
			}
			continue
		}
		if tag == "" {
			tag = f.Name
		}
		if tag == name {
			return f.Type, true
		}
	}
	return nil, false
}

// zeroJSON: a value that omitempty leaves out.
func zeroJSON(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case bool:
		return !v
	case float64:
		return v == 0
	case string:
		return v == ""
	case []any:
		return len(v) == 0
	case map[string]any:
		return len(v) == 0
	}
	return false
}
