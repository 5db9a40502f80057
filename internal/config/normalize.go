package config

import (
	"fmt"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/pabloagent/pablo/internal/suggest"
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
	// layer names the preference file (user, workspace) being read,
	// whose directory need not lie in the config root; empty for the
	// entry tree.
	layer string
}

// normalize validates v against s and returns its normalized form: the
// unset marker, a list operation, or the value checked by its kind and
// then by the spec's own check.
func normalize(s *spec, v any, ptr string, nc *normCtx) (any, *Error) {
	if s.unsupported != "" {
		return nil, badAt(ptr, CodeUnsupportedFeature, "%s are not supported in this release", s.unsupported)
	}
	if str, ok := v.(string); ok && s.refused[str] != "" {
		return nil, badAt(ptr, CodeUnsupportedFeature, "%q is %s, not supported in this release", str, s.refused[str])
	}
	if m, ok := v.(map[string]any); ok {
		if u, has := m["unset"]; has && s.optional && len(m) == 1 {
			if u != true {
				return nil, badAt(ptr, CodeInvalidValue, "{unset = true} is the only way to clear an optional value")
			}
			return unsetValue{}, nil
		}
		if s.kind == sList && s.listOps {
			return normListOp(s, m, ptr, nc)
		}
	}
	nv, err := normKind(s.kind)(s, v, ptr, nc)
	if err != nil {
		return nil, err
	}
	if s.check != nil {
		if err := s.check(nv); err != nil {
			return nil, badAt(ptr, CodeInvalidValue, "%v", err)
		}
	}
	return nv, nil
}

// badAt is a diagnostic at ptr.
func badAt(ptr string, code Code, format string, args ...any) *Error {
	return &Error{Code: code, Option: ptr, Message: fmt.Sprintf(format, args...)}
}

// normFunc normalizes a value of one spec kind.
type normFunc func(s *spec, v any, ptr string, nc *normCtx) (any, *Error)

// normKind returns the normalizer of a spec kind.
func normKind(k specKind) normFunc {
	switch k {
	case sBool:
		return normBool
	case sInt:
		return normInt
	case sString:
		return normString
	case sEnum:
		return normEnum
	case sPath:
		return normPath
	case sTable:
		return normTable
	case sMap:
		return normMap
	case sList:
		return normList
	case sCount:
		return normCount
	case sU64:
		return normU64
	case sSchema:
		return normSchema
	}
	return normUnion
}

// normListOp normalizes {mode = "replace"|"append"|"prepend", items = [...]}.
func normListOp(s *spec, m map[string]any, ptr string, nc *normCtx) (any, *Error) {
	mode, _ := m["mode"].(string)
	items, ok := m["items"].([]any)
	if len(m) != 2 || !ok || (mode != "replace" && mode != "append" && mode != "prepend") {
		return nil, badAt(ptr, CodeInvalidValue, "list operations are {mode = \"replace\"|\"append\"|\"prepend\", items = [...]}")
	}
	out, err := normalize(&spec{kind: sList, max: s.max, elem: s.elem}, items, ptr+"/items", nc)
	if err != nil {
		return nil, err
	}
	return listOp{mode: mode, items: out.([]any)}, nil
}

func normBool(_ *spec, v any, ptr string, _ *normCtx) (any, *Error) {
	if _, ok := v.(bool); !ok {
		return nil, badAt(ptr, CodeInvalidValue, "want true or false, got %s", typeName(v))
	}
	return v, nil
}

func normInt(s *spec, v any, ptr string, _ *normCtx) (any, *Error) {
	n, ok := v.(int64)
	if !ok {
		return nil, badAt(ptr, CodeInvalidValue, "want an integer %d..%d, got %s", s.min, s.max, typeName(v))
	}
	if n < s.min || n > s.max {
		return nil, badAt(ptr, CodeInvalidValue, "%d is outside %d..%d", n, s.min, s.max)
	}
	return v, nil
}

// normString bounds a string's bytes; past a long-text bound it is a
// config_limit, past a short one an invalid value.
func normString(s *spec, v any, ptr string, _ *normCtx) (any, *Error) {
	str, ok := v.(string)
	if !ok {
		return nil, badAt(ptr, CodeInvalidValue, "want a string, got %s", typeName(v))
	}
	if n := int64(len(str)); n < s.min || n > s.max {
		code := CodeInvalidValue
		if n > s.max && s.max >= maxStringBytes {
			code = CodeLimit
		}
		return nil, badAt(ptr, code, "string length %d is outside %d..%d bytes", len(str), s.min, s.max)
	}
	if strings.IndexByte(str, 0) >= 0 {
		return nil, badAt(ptr, CodeInvalidValue, "NUL is not allowed")
	}
	return v, nil
}

func normEnum(s *spec, v any, ptr string, _ *normCtx) (any, *Error) {
	if str, ok := v.(string); !ok || !slices.Contains(s.enum, str) {
		return nil, badAt(ptr, CodeInvalidValue, "want one of %s", strings.Join(quoteAll(s.enum), ", "))
	}
	return v, nil
}

// normCount accepts a 32-bit count or "unlimited".
func normCount(_ *spec, v any, ptr string, _ *normCtx) (any, *Error) {
	switch x := v.(type) {
	case string:
		if x != "unlimited" {
			return nil, badAt(ptr, CodeInvalidValue, "want an integer 0..4294967295 or \"unlimited\"")
		}
	case int64:
		if x < 0 || x > 4294967295 {
			return nil, badAt(ptr, CodeInvalidValue, "%d is outside 0..4294967295", x)
		}
	default:
		return nil, badAt(ptr, CodeInvalidValue, "want an integer 0..4294967295 or \"unlimited\", got %s", typeName(v))
	}
	return v, nil
}

// normU64 accepts a 64-bit counter, written as a canonical decimal string,
// or "unlimited".
func normU64(_ *spec, v any, ptr string, _ *normCtx) (any, *Error) {
	str, ok := v.(string)
	if !ok {
		return nil, badAt(ptr, CodeInvalidValue, "want a decimal string such as \"1000\" or \"unlimited\" (64-bit counters are strings), got %s", typeName(v))
	}
	if str == "unlimited" {
		return v, nil
	}
	if !u64RE.MatchString(str) {
		return nil, badAt(ptr, CodeInvalidValue, "want a canonical decimal string or \"unlimited\"")
	}
	if _, err := strconv.ParseUint(str, 10, 64); err != nil {
		return nil, badAt(ptr, CodeLimit, "value overflows 64 bits")
	}
	return v, nil
}

// normUnion leaves the value to the spec's own check.
func normUnion(_ *spec, v any, _ string, _ *normCtx) (any, *Error) { return v, nil }

// normPath checks a typed path object and rebases a source path.
func normPath(_ *spec, v any, ptr string, nc *normCtx) (any, *Error) {
	if err := checkPathObject(v); err != nil {
		return nil, badAt(ptr, CodeInvalidValue, "%v", err)
	}
	return rebased(v.(map[string]any), ptr, nc)
}

// rebased is normalizePath's result, or its error at ptr.
func rebased(m map[string]any, ptr string, nc *normCtx) (any, *Error) {
	v := normalizePath(m, nc)
	if err, ok := v.(error); ok {
		return nil, badAt(ptr, CodeInvalidValue, "%v", err)
	}
	return v, nil
}

// normSchema accepts output.schema: inline JSON text or a path object.
func normSchema(_ *spec, v any, ptr string, nc *normCtx) (any, *Error) {
	switch x := v.(type) {
	case string:
		if len(x) == 0 || len(x) > maxStringBytes {
			return nil, badAt(ptr, CodeInvalidValue, "inline schema must be 1..%d bytes", maxStringBytes)
		}
		return v, nil
	case map[string]any:
		if err := checkPathObject(x); err != nil {
			return nil, badAt(ptr, CodeInvalidValue, "output.schema is an inline JSON string or a path object: %v", err)
		}
		return rebased(x, ptr, nc)
	}
	return nil, badAt(ptr, CodeInvalidValue, "output.schema is an inline JSON string, a path object or {unset = true}")
}

// normTable normalizes a table's fields; an unknown key fails at its own
// pointer.
func normTable(s *spec, v any, ptr string, nc *normCtx) (any, *Error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, badAt(ptr, CodeInvalidValue, "want a table, got %s", typeName(v))
	}
	out := make(map[string]any, len(m))
	for _, k := range sortedKeys(m) {
		f, known := s.fields[k]
		if !known {
			return nil, badAt(ptr+pointer(k), CodeUnknownOption, "unknown option %q%s", shown(k, 64), suggest.DidYouMean(k, sortedKeysOf(s.fields)))
		}
		nv, err := normalize(f, m[k], ptr+pointer(k), nc)
		if err != nil {
			return nil, err
		}
		out[k] = nv
	}
	return out, nil
}

// normMap normalizes a named map: bounded entries, checked keys.
func normMap(s *spec, v any, ptr string, nc *normCtx) (any, *Error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, badAt(ptr, CodeInvalidValue, "want a table, got %s", typeName(v))
	}
	if int64(len(m)) > s.max {
		return nil, badAt(ptr, CodeLimit, "%d entries exceed the limit of %d", len(m), s.max)
	}
	out := make(map[string]any, len(m))
	for _, k := range sortedKeys(m) {
		if err := s.key(k); err != nil {
			return nil, badAt(ptr+pointer(k), CodeInvalidValue, "%s", err.Error())
		}
		nv, err := normalize(s.elem, m[k], ptr+pointer(k), nc)
		if err != nil {
			return nil, err
		}
		out[k] = nv
	}
	return out, nil
}

// normList normalizes a bounded list element by element.
func normList(s *spec, v any, ptr string, nc *normCtx) (any, *Error) {
	l, ok := v.([]any)
	if !ok {
		return nil, badAt(ptr, CodeInvalidValue, "want an array, got %s", typeName(v))
	}
	if int64(len(l)) > s.max {
		return nil, badAt(ptr, CodeLimit, "%d items exceed the limit of %d", len(l), s.max)
	}
	out := make([]any, len(l))
	for i, e := range l {
		nv, err := normalize(s.elem, e, ptr+"/"+strconv.Itoa(i), nc)
		if err != nil {
			return nil, err
		}
		out[i] = nv
	}
	return out, nil
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
			if nc != nil && nc.layer != "" && (nc.dir == ".." || strings.HasPrefix(nc.dir, "../")) {
				// A source path becomes a config path (REFERENCE §1.5),
				// which no ".." may leave: only a file inside the root
				// can name its neighbours so.
				return fmt.Errorf("source path %q: this %s configuration file lies outside the config root, and a source path stands for a path inside it (it becomes a config path); name the directory with a binding ({ base = \"binding\", name = \"NAME\", path = ... } and --bind NAME=DIR), or write a workspace or config path",
					shown(m["path"].(string), 80), nc.layer)
			}
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
