package children

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
)

// TestChildMemoryScopeOnlyNarrows defends the rule that a spawn can narrow
// the memory tools' kinds and paths and never widen them: each request
// inside the parent's scope is kept exactly, each one outside it fails
// capability_not_inherited, and nothing is granted on failure.
func TestChildMemoryScopeOnlyNarrows(t *testing.T) {
	t.Parallel()
	parent := &MemoryScope{Kinds: []string{"service", "team"}, Paths: []string{"records/services/", "handbook"}}
	narrower := []struct {
		name    string
		request *MemoryScope
		want    MemoryScope
	}{
		{"null inherits", nil, *parent},
		{"fewer kinds", &MemoryScope{Kinds: []string{"team"}}, MemoryScope{Kinds: []string{"team"}, Paths: parent.Paths}},
		{"no kind at all", &MemoryScope{Kinds: []string{}}, MemoryScope{Kinds: []string{}, Paths: parent.Paths}},
		{"a directory under a directory", &MemoryScope{Paths: []string{"records/services/billing/"}}, MemoryScope{Kinds: parent.Kinds, Paths: []string{"records/services/billing/"}}},
		{"a file under a directory", &MemoryScope{Paths: []string{"records/services/billing.md"}}, MemoryScope{Kinds: parent.Kinds, Paths: []string{"records/services/billing.md"}}},
		{"the same directory", &MemoryScope{Paths: []string{"records/services/"}}, MemoryScope{Kinds: parent.Kinds, Paths: []string{"records/services/"}}},
		{"under a path without a slash", &MemoryScope{Paths: []string{"handbook/oncall.md"}}, MemoryScope{Kinds: parent.Kinds, Paths: []string{"handbook/oncall.md"}}},
	}
	for _, c := range narrower {
		got, err := narrowMemory(parent, c.request)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !slices.Equal(got.Kinds, c.want.Kinds) || !slices.Equal(got.Paths, c.want.Paths) {
			t.Errorf("%s: got %+v, want %+v", c.name, *got, c.want)
		}
	}
	wider := []struct {
		name    string
		parent  *MemoryScope
		request *MemoryScope
		field   string
	}{
		{"a kind the parent lacks", parent, &MemoryScope{Kinds: []string{"secret"}}, "capabilities.memory.kinds"},
		{"every kind", parent, &MemoryScope{Kinds: []string{"*"}}, "capabilities.memory.kinds"},
		{"every path", parent, &MemoryScope{Paths: []string{"*"}}, "capabilities.memory.paths"},
		{"the directory above", parent, &MemoryScope{Paths: []string{"records/"}}, "capabilities.memory.paths"},
		{"a sibling sharing a prefix", parent, &MemoryScope{Paths: []string{"records/services-secret/"}}, "capabilities.memory.paths"},
		{"a dotdot escape", parent, &MemoryScope{Paths: []string{"records/services/../secrets/"}}, "capabilities.memory.paths"},
		{"a file beside a directory", &MemoryScope{Kinds: []string{"*"}, Paths: []string{"records/"}}, &MemoryScope{Paths: []string{"records"}}, "capabilities.memory.paths"},
		{"any scope under a parent without memory tools", nil, &MemoryScope{Kinds: []string{}}, "capabilities.memory"},
	}
	for _, c := range wider {
		got, err := narrowMemory(c.parent, c.request)
		var e *Error
		if !errors.As(err, &e) || e.Field != c.field {
			t.Errorf("%s: got %+v, %v; want a refusal at %s", c.name, got, err, c.field)
		}
	}
	// Through Narrow and the spawn arguments, as a model writes them.
	args := json.RawMessage(`{"action":"spawn","request":{"input":"x","capabilities":{"memory":{"kinds":["secret"]}}}}`)
	a, err := ParseArguments(args, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := parentScope()
	p.Capabilities.Memory = parent
	if _, err := Narrow(p, Scope{Capabilities: a.Request.Capabilities}); !isCode(err, CodeNotInherited) {
		t.Errorf("a spawn widening the memory kinds = %v, want %s", err, CodeNotInherited)
	}
	a, _ = ParseArguments(json.RawMessage(`{"action":"spawn","request":{"input":"x","capabilities":{"memory":{"paths":["records/services/billing.md"]}}}}`), nil)
	s, err := Narrow(p, Scope{Capabilities: a.Request.Capabilities})
	if err != nil || !slices.Equal(s.Capabilities.Memory.Paths, []string{"records/services/billing.md"}) || !slices.Equal(s.Capabilities.Memory.Kinds, parent.Kinds) {
		t.Errorf("a narrowing spawn = %+v, %v", s.Capabilities.Memory, err)
	}
	if _, err := ParseArguments(json.RawMessage(`{"action":"spawn","request":{"input":"x","capabilities":{"memory":{"owners":["a"]}}}}`), nil); err == nil {
		t.Errorf("an unknown memory field is accepted")
	}
}

func isCode(err error, code Code) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}
