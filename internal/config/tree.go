package config

import (
	"fmt"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// unsetValue is the normalized form of {unset = true}.
type unsetValue struct{}

// listOp is the normalized form of {mode = ..., items = [...]}.
type listOp struct {
	mode  string
	items []any
}

// normCtx carries what normalization of one document needs.
type normCtx struct {
	// dir is the declaring file's directory relative to the config root
	// ("." for the root itself); source paths are rebased onto it.
	dir string
}

// normalize validates v against s and returns its normalized form.
func normalize(s *spec, v any, ptr string, nc *normCtx) (any, *Error) {
	bad := func(code Code, format string, args ...any) (any, *Error) {
		return nil, &Error{Code: code, Option: ptr, Message: fmt.Sprintf(format, args...)}
	}
	if s.unsupported != "" {
		return bad(CodeUnsupportedFeature, "%s are not supported in this release", s.unsupported)
	}
	if m, ok := v.(map[string]any); ok && s.optional && len(m) == 1 {
		if u, has := m["unset"]; has {
			if u != true {
				return bad(CodeInvalidValue, "{unset = true} is the only way to clear an optional value")
			}
			return unsetValue{}, nil
		}
	}
	if m, ok := v.(map[string]any); ok && s.kind == sList && s.listOps {
		mode, _ := m["mode"].(string)
		items, ok := m["items"].([]any)
		if len(m) != 2 || !ok || (mode != "replace" && mode != "append" && mode != "prepend") {
			return bad(CodeInvalidValue, "list operations are {mode = \"replace\"|\"append\"|\"prepend\", items = [...]}")
		}
		out, err := normalize(&spec{kind: sList, max: s.max, elem: s.elem}, items, ptr+"/items", nc)
		if err != nil {
			return nil, err
		}
		return listOp{mode: mode, items: out.([]any)}, nil
	}
	switch s.kind {
	case sBool:
		if _, ok := v.(bool); !ok {
			return bad(CodeInvalidValue, "want true or false, got %s", typeName(v))
		}
	case sInt:
		n, ok := v.(int64)
		if !ok {
			return bad(CodeInvalidValue, "want an integer %d..%d, got %s", s.min, s.max, typeName(v))
		}
		if n < s.min || n > s.max {
			return bad(CodeInvalidValue, "%d is outside %d..%d", n, s.min, s.max)
		}
	case sString:
		str, ok := v.(string)
		if !ok {
			return bad(CodeInvalidValue, "want a string, got %s", typeName(v))
		}
		if int64(len(str)) < s.min || int64(len(str)) > s.max {
			code := CodeInvalidValue
			if int64(len(str)) > s.max && s.max >= maxStringBytes {
				code = CodeLimit
			}
			return bad(code, "string length %d is outside %d..%d bytes", len(str), s.min, s.max)
		}
		if strings.IndexByte(str, 0) >= 0 {
			return bad(CodeInvalidValue, "NUL is not allowed")
		}
	case sEnum:
		str, ok := v.(string)
		if !ok || !slices.Contains(s.enum, str) {
			return bad(CodeInvalidValue, "want one of %s", strings.Join(quoteAll(s.enum), ", "))
		}
	case sCount:
		switch x := v.(type) {
		case string:
			if x != "unlimited" {
				return bad(CodeInvalidValue, "want an integer 0..4294967295 or \"unlimited\"")
			}
		case int64:
			if x < 0 || x > 4294967295 {
				return bad(CodeInvalidValue, "%d is outside 0..4294967295", x)
			}
		default:
			return bad(CodeInvalidValue, "want an integer 0..4294967295 or \"unlimited\", got %s", typeName(v))
		}
	case sU64:
		str, ok := v.(string)
		if !ok {
			return bad(CodeInvalidValue, "want a decimal string such as \"1000\" or \"unlimited\" (64-bit counters are strings), got %s", typeName(v))
		}
		if str != "unlimited" {
			if !u64RE.MatchString(str) {
				return bad(CodeInvalidValue, "want a canonical decimal string or \"unlimited\"")
			}
			if _, err := strconv.ParseUint(str, 10, 64); err != nil {
				return bad(CodeLimit, "value overflows 64 bits")
			}
		}
	case sPath:
		if err := checkPathObject(v); err != nil {
			return bad(CodeInvalidValue, "%v", err)
		}
		v = normalizePath(v.(map[string]any), nc)
		if err, ok := v.(error); ok {
			return bad(CodeInvalidValue, "%v", err)
		}
	case sSchema:
		switch x := v.(type) {
		case string:
			if len(x) == 0 || len(x) > maxStringBytes {
				return bad(CodeInvalidValue, "inline schema must be 1..%d bytes", maxStringBytes)
			}
		case map[string]any:
			if err := checkPathObject(x); err != nil {
				return bad(CodeInvalidValue, "output.schema is an inline JSON string or a path object: %v", err)
			}
			v = normalizePath(x, nc)
			if err, ok := v.(error); ok {
				return bad(CodeInvalidValue, "%v", err)
			}
		default:
			return bad(CodeInvalidValue, "output.schema is an inline JSON string, a path object or {unset = true}")
		}
	case sTable:
		m, ok := v.(map[string]any)
		if !ok {
			return bad(CodeInvalidValue, "want a table, got %s", typeName(v))
		}
		out := make(map[string]any, len(m))
		for _, k := range sortedKeys(m) {
			f, known := s.fields[k]
			if !known {
				return nil, &Error{Code: CodeUnknownOption, Option: ptr + pointer(k), Message: fmt.Sprintf("unknown option %q", shown(k, 64))}
			}
			nv, err := normalize(f, m[k], ptr+pointer(k), nc)
			if err != nil {
				return nil, err
			}
			out[k] = nv
		}
		v = out
	case sMap:
		m, ok := v.(map[string]any)
		if !ok {
			return bad(CodeInvalidValue, "want a table, got %s", typeName(v))
		}
		if int64(len(m)) > s.max {
			return bad(CodeLimit, "%d entries exceed the limit of %d", len(m), s.max)
		}
		out := make(map[string]any, len(m))
		for _, k := range sortedKeys(m) {
			if err := s.key(k); err != nil {
				return nil, &Error{Code: CodeInvalidValue, Option: ptr + pointer(k), Message: err.Error()}
			}
			nv, err := normalize(s.elem, m[k], ptr+pointer(k), nc)
			if err != nil {
				return nil, err
			}
			out[k] = nv
		}
		v = out
	case sList:
		l, ok := v.([]any)
		if !ok {
			return bad(CodeInvalidValue, "want an array, got %s", typeName(v))
		}
		if int64(len(l)) > s.max {
			return bad(CodeLimit, "%d items exceed the limit of %d", len(l), s.max)
		}
		out := make([]any, len(l))
		for i, e := range l {
			nv, err := normalize(s.elem, e, ptr+"/"+strconv.Itoa(i), nc)
			if err != nil {
				return nil, err
			}
			out[i] = nv
		}
		v = out
	case sUnion:
	}
	if s.check != nil {
		if err := s.check(v); err != nil {
			return bad(CodeInvalidValue, "%v", err)
		}
	}
	return v, nil
}

// normalizePath rebases a source-relative path onto the config root.
func normalizePath(m map[string]any, nc *normCtx) any {
	out := map[string]any{"base": m["base"], "path": path.Clean(m["path"].(string))}
	if n, ok := m["name"]; ok {
		out["name"] = n
	}
	if m["base"] == "source" {
		dir := "."
		if nc != nil {
			dir = nc.dir
		}
		p := path.Clean(path.Join(dir, m["path"].(string)))
		if p == ".." || strings.HasPrefix(p, "../") {
			return fmt.Errorf("source path %q leaves the config root", shown(m["path"].(string), 80))
		}
		out["base"], out["path"] = "config", p
	}
	return out
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = strconv.Quote(v)
	}
	return out
}

func typeName(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64:
		return "an integer"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	}
	return fmt.Sprintf("%T", v)
}

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
