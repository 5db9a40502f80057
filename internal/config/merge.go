package config

import (
	"slices"
	"strings"
)

// provenance records which source set each leaf, in order.
type provenance map[string][]Origin

// Origin is one contribution to a resolved value.
type Origin struct {
	Source    string `json:"source"`
	Operation string `json:"operation"`
}

// merger applies contributions onto an accumulated tree.
type merger struct {
	prov  provenance
	count int
}

func (mg *merger) record(ptr, source, op string) {
	if mg.count >= 65536 {
		return
	}
	mg.count++
	mg.prov[ptr] = append(mg.prov[ptr], Origin{Source: source, Operation: op})
}

// merge applies src onto dst under s and returns the result. dst is never
// modified in place when it is shared: tables are copied on write.
func (mg *merger) merge(s *spec, dst, src any, ptr, source string) any {
	if _, ok := src.(unsetValue); ok {
		mg.record(ptr, source, "unset")
		return nil
	}
	if op, ok := src.(listOp); ok {
		acc, _ := dst.([]any)
		switch op.mode {
		case "replace":
			acc = slices.Clone(op.items)
		case "append":
			acc = append(slices.Clone(acc), op.items...)
		case "prepend":
			acc = append(slices.Clone(op.items), acc...)
		}
		mg.record(ptr, source, op.mode)
		return acc
	}
	if !s.atomic && (s.kind == sTable || s.kind == sMap) {
		srcMap, ok := src.(map[string]any)
		if ok {
			out := map[string]any{}
			if d, ok := dst.(map[string]any); ok {
				for k, v := range d {
					out[k] = v
				}
			}
			for _, k := range sortedKeys(srcMap) {
				child := s.elem
				if s.kind == sTable {
					child = s.fields[k]
				}
				nv := mg.merge(child, out[k], srcMap[k], ptr+pointer(k), source)
				if nv == nil {
					delete(out, k)
				} else {
					out[k] = nv
				}
			}
			return out
		}
	}
	op := "set"
	if dst != nil {
		op = "replace"
	}
	if source == "source-0000" {
		op = "default"
	}
	mg.record(ptr, source, op)
	return src
}

// defaults builds the default tree of s (nil when s has no defaults).
func defaults(s *spec) any {
	switch s.kind {
	case sTable:
		if s.atomic {
			return nil // rule sets exist only where written
		}
		out := map[string]any{}
		for k, f := range s.fields {
			if d := defaults(f); d != nil {
				out[k] = d
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case sMap:
		return nil
	}
	return s.def
}

// lookup walks a dotted option path ("limits.max_tool_calls") in a spec.
func lookup(s *spec, dotted string) (*spec, bool) {
	for _, part := range strings.Split(dotted, ".") {
		if s.kind != sTable {
			return nil, false
		}
		f, ok := s.fields[part]
		if !ok {
			return nil, false
		}
		s = f
	}
	return s, true
}

// getPath reads a dotted path from a tree.
func getPath(tree map[string]any, dotted string) (any, bool) {
	var cur any = tree
	for _, part := range strings.Split(dotted, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		cur, ok = m[part]
		if !ok {
			return nil, false
		}
	}
	return cur, true
}
