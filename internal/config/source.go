package config

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"unicode/utf8"

	toml "github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// Resolver bounds (REFERENCE §1.4).
const (
	maxFileBytes      = 1 << 20
	maxTotalBytes     = 8 << 20
	maxFileDepth      = 16
	maxFiles          = 64
	maxImportEdges    = 128
	maxImportsPerFile = 32
	maxNesting        = 32
	maxNodes          = 65536
	maxProfiles       = 64
	maxProfileDepth   = 16
	maxAncestors      = 64
	maxNamed          = 64
	maxArray          = 1024
	maxIdent          = 64
	maxPathBytes      = 4096
	maxStringBytes    = 65536
	maxInstructions   = 1 << 20
	maxLayers         = 64
	maxRulesPerDim    = 128
	maxRulesTotal     = 1024
	maxDiagnostics    = 32
)

// document is one parsed deployment file: its generic tree and where each key
// sits.
type document struct {
	name  string // display name (path relative to the config root when possible)
	path  string // absolute real path
	raw   []byte // original bytes (the digest is taken over these)
	tree  map[string]any
	lines map[string]int // JSON pointer → line
}

func (d *document) line(ptr string) int {
	for p := ptr; p != ""; {
		if l, ok := d.lines[p]; ok {
			return l
		}
		i := bytes.LastIndexByte([]byte(p), '/')
		if i <= 0 {
			break
		}
		p = p[:i]
	}
	return 0
}

func (d *document) errf(code Code, ptr, format string, args ...any) *Error {
	return &Error{Code: code, Option: ptr, Source: d.name, Line: d.line(ptr), Message: fmt.Sprintf(format, args...)}
}

// parseDocument checks the byte-level rules and parses TOML into a tree.
func parseDocument(name, path string, raw []byte) (*document, error) {
	d := &document{name: name, path: path, raw: raw}
	fail := func(code Code, line int, format string, args ...any) error {
		return &Error{Code: code, Source: name, Line: line, Message: fmt.Sprintf(format, args...)}
	}
	if len(raw) > maxFileBytes {
		return nil, fail(CodeLimit, 0, "file exceeds %d bytes", maxFileBytes)
	}
	if bytes.HasPrefix(raw, []byte("\xef\xbb\xbf")) {
		return nil, fail(CodeInvalidValue, 1, "a byte order mark is not allowed")
	}
	if !utf8.Valid(raw) {
		return nil, fail(CodeInvalidValue, 0, "file is not valid UTF-8")
	}
	if i := bytes.IndexByte(raw, 0); i >= 0 {
		return nil, fail(CodeInvalidValue, 1+bytes.Count(raw[:i], []byte("\n")), "NUL byte")
	}
	text := bytes.ReplaceAll(raw, []byte("\r\n"), []byte("\n"))
	// The decoder's work grows with the square of the keys; bound them
	// first, in linear time.
	if _, err := prescan(text); err != nil {
		err.Source = name
		return nil, err
	}
	var tree map[string]any
	if err := toml.Unmarshal(text, &tree); err != nil {
		line := 0
		var de *toml.DecodeError
		if errors.As(err, &de) {
			line, _ = de.Position()
		}
		return nil, fail(CodeInvalidValue, line, "TOML syntax: %s", tomlMessage(err))
	}
	if tree == nil {
		tree = map[string]any{}
	}
	d.tree = tree
	d.lines = lineIndex(text)
	nodes := 0
	if ptr, err := checkShape(tree, "", 0, &nodes); err != nil {
		err.Source, err.Line = name, d.line(ptr)
		return nil, err
	}
	return d, nil
}

func tomlMessage(err error) string {
	var de *toml.DecodeError
	if errors.As(err, &de) {
		return sanitize(de.Error(), 200)
	}
	return sanitize(err.Error(), 200)
}

// checkShape rejects floats, dates and times anywhere, and enforces the
// nesting and node bounds.
func checkShape(v any, ptr string, depth int, nodes *int) (string, *Error) {
	*nodes++
	if *nodes > maxNodes {
		return ptr, &Error{Code: CodeLimit, Option: ptr, Message: fmt.Sprintf("more than %d values", maxNodes)}
	}
	if depth > maxNesting {
		return ptr, &Error{Code: CodeLimit, Option: ptr, Message: fmt.Sprintf("nesting deeper than %d levels", maxNesting)}
	}
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if p, err := checkShape(x[k], ptr+pointer(k), depth+1, nodes); err != nil {
				return p, err
			}
		}
	case []any:
		for i, e := range x {
			if p, err := checkShape(e, ptr+"/"+strconv.Itoa(i), depth+1, nodes); err != nil {
				return p, err
			}
		}
	case string, bool, int64:
	case float64:
		return ptr, &Error{Code: CodeInvalidValue, Option: ptr, Message: "floating-point values are not allowed; use an integer or a decimal string"}
	default:
		return ptr, &Error{Code: CodeInvalidValue, Option: ptr, Message: fmt.Sprintf("%s values are not allowed", tomlTypeName(v))}
	}
	return "", nil
}

func tomlTypeName(v any) string {
	switch v.(type) {
	case toml.LocalDate:
		return "date"
	case toml.LocalTime:
		return "time"
	case toml.LocalDateTime:
		return "date-time"
	}
	return fmt.Sprintf("%T", v)
}

// lineIndex maps the JSON pointer of every key to the line it is written on.
func lineIndex(text []byte) map[string]int {
	starts := []int{0}
	for i, c := range text {
		if c == '\n' {
			starts = append(starts, i+1)
		}
	}
	lineOf := func(off int) int { return sort.SearchInts(starts, off+1) }
	lines := map[string]int{}
	var p unstable.Parser
	p.Reset(text)
	var table string
	arrays := map[string]int{}
	keyPath := func(it unstable.Iterator) (string, int) {
		path, line := "", 0
		for it.Next() {
			n := it.Node()
			path += pointer(string(n.Data))
			if line == 0 && n.Raw.Length > 0 {
				line = lineOf(int(n.Raw.Offset))
			}
		}
		return path, line
	}
	var walkValue func(base string, n *unstable.Node, line int)
	walkValue = func(base string, n *unstable.Node, line int) {
		switch n.Kind {
		case unstable.InlineTable:
			it := n.Children()
			for it.Next() {
				kv := it.Node()
				k, l := keyPath(kv.Key())
				if l == 0 {
					l = line
				}
				lines[base+k] = l
				walkValue(base+k, kv.Value(), l)
			}
		case unstable.Array:
			it := n.Children()
			for i := 0; it.Next(); i++ {
				ptr := base + "/" + strconv.Itoa(i)
				lines[ptr] = line
				walkValue(ptr, it.Node(), line)
			}
		}
	}
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table:
			k, l := keyPath(e.Key())
			table = withArrayIndexes(k, arrays)
			lines[table] = l
		case unstable.ArrayTable:
			k, l := keyPath(e.Key())
			k = withArrayIndexes(k, arrays)
			i := arrays[k]
			arrays[k] = i + 1
			table = k + "/" + strconv.Itoa(i)
			lines[table] = l
			if _, ok := lines[k]; !ok {
				lines[k] = l
			}
		case unstable.KeyValue:
			k, l := keyPath(e.Key())
			lines[table+k] = l
			walkValue(table+k, e.Value(), l)
		}
	}
	return lines
}

// withArrayIndexes rewrites a table header path so that every prefix naming
// an array of tables points at its latest element, as TOML defines:
// [authority.policy] after [[authority]] belongs to the last authority entry.
func withArrayIndexes(k string, arrays map[string]int) string {
	out := ""
	rest := k
	for rest != "" {
		i := bytes.IndexByte([]byte(rest[1:]), '/')
		var tok string
		if i < 0 {
			tok, rest = rest, ""
		} else {
			tok, rest = rest[:i+1], rest[i+1:]
		}
		out += tok
		if n, ok := arrays[out]; ok && rest != "" {
			out += "/" + strconv.Itoa(n-1)
		}
	}
	return out
}
