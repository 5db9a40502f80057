package config

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// jsonKeys lists the JSON key paths of t's fields, nested structs as
// "outer/inner".
func jsonKeys(t reflect.Type, prefix string) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Type.Kind() == reflect.Struct && f.Type.PkgPath() == "" {
			out = append(out, jsonKeys(f.Type, prefix+name+"/")...)
			continue
		}
		out = append(out, prefix+name)
	}
	return out
}

// TestLimitEntriesNameEveryLimit: the ceiling check walks every
// options.limits key, in key order, for the resolved limits and for a
// layer's ceilings alike: a limit added to either struct without an entry
// fails here.
func TestLimitEntriesNameEveryLimit(t *testing.T) {
	keys := limitKeys()
	if !slices.IsSorted(keys[:]) {
		t.Fatalf("limit keys are not in key order: %v", keys)
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[LimitOptions](), reflect.TypeFor[LimitCeilings]()} {
		got := jsonKeys(typ, "")
		slices.Sort(got)
		if !slices.Equal(got, keys[:]) {
			t.Errorf("%s has limits %v, the entries name %v", typ.Name(), got, keys)
		}
	}
}

// TestLimitEntriesReadTheirOwnField: a ceiling written at one key is the
// entry of that key and of no other.
func TestLimitEntriesReadTheirOwnField(t *testing.T) {
	for _, k := range limitKeys() {
		doc := `{"` + k + `":7}`
		if outer, inner, nested := strings.Cut(k, "/"); nested {
			doc = `{"` + outer + `":{"` + inner + `":7}}`
		}
		var c LimitCeilings
		if err := decodeInto(json.RawMessage(doc), &c); err != nil {
			t.Fatal(err)
		}
		for _, e := range c.entries() {
			if e.limit.IsSet() != (e.path == "/"+k) {
				t.Errorf("ceiling %s: entry %s is set = %v", k, e.path, e.limit.IsSet())
			}
		}
	}
}
