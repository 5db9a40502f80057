package memory

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Record is one graph record: a Markdown file whose YAML frontmatter names
// its ID and kind, its owner, repo and stack, its associations and typed
// edges to other records, and free fields.
type Record struct {
	ID           string         `json:"id"`
	Kind         string         `json:"kind"`
	Owner        string         `json:"owner,omitempty"`
	Repo         string         `json:"repo,omitempty"`
	Stack        string         `json:"stack,omitempty"`
	Associations []string       `json:"associations,omitempty"`
	Edges        []Edge         `json:"edges,omitempty"`
	Fields       map[string]any `json:"fields,omitempty"`
	Body         string         `json:"body,omitempty"`
	// Path and Blob say where the record was read: its repository path
	// and blob ID at the pinned commit.
	Path string `json:"path"`
	Blob string `json:"blob,omitempty"`
}

// Edge is a typed link from a record to another record's ID.
type Edge struct {
	Kind string `json:"kind"`
	To   string `json:"to"`
}

// known frontmatter keys; every other key is a free field.
var reservedKeys = map[string]bool{"id": true, "kind": true, "owner": true, "repo": true, "stack": true, "associations": true, "edges": true}

// ParseRecord reads a record file strictly (see doc.go). path names it in
// errors.
func ParseRecord(path string, content []byte, limits Limits) (*Record, error) {
	limits = limits.withDefaults()
	if !utf8.Valid(content) {
		return nil, errorf(ErrInvalidRecord, CodeEncoding, path, 0, "not valid UTF-8")
	}
	text := strings.ReplaceAll(string(content), "\r\n", "\n")
	rest, ok := strings.CutPrefix(text, "---\n")
	if !ok {
		return nil, errorf(ErrInvalidRecord, CodeMissingFrontmatter, path, 1, "a record starts with a `---` line, its YAML frontmatter, and a closing `---` line")
	}
	var fm, body string
	closed := false
	off := 0
	for _, l := range strings.SplitAfter(rest, "\n") {
		if strings.TrimSuffix(l, "\n") == "---" {
			fm, body, closed = rest[:off], rest[off+len(l):], true
			break
		}
		off += len(l)
	}
	if !closed {
		return nil, errorf(ErrInvalidRecord, CodeUnterminated, path, 1, "frontmatter is not closed; add a `---` line after it")
	}
	if len(fm) > limits.MaxFrontmatterBytes {
		return nil, errorf(ErrLimitExceeded, CodeFrontmatterSize, path, 2, "frontmatter is %d bytes, over the %d-byte bound", len(fm), limits.MaxFrontmatterBytes)
	}
	y := &yamlReader{path: path, limits: limits}
	root, err := y.parse(fm)
	if err != nil {
		return nil, err
	}
	r := &Record{Path: path, Body: body}
	if root == nil {
		return nil, errorf(ErrInvalidRecord, CodeMissingField, path, 2, "frontmatter has no id; every record has `id:` and `kind:`")
	}
	if root.Kind != yaml.MappingNode {
		return nil, errorf(ErrInvalidRecord, CodeFieldShape, path, root.Line+1, "frontmatter must be a mapping of `key: value` lines")
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		line := k.Line + 1
		switch k.Value {
		case "id", "kind", "owner", "repo", "stack":
			if v.Kind != yaml.ScalarNode {
				return nil, errorf(ErrInvalidRecord, CodeFieldShape, path, line, "%s must be a string", k.Value)
			}
			switch k.Value {
			case "id":
				r.ID = v.Value
			case "kind":
				r.Kind = v.Value
			case "owner":
				r.Owner = v.Value
			case "repo":
				r.Repo = v.Value
			case "stack":
				r.Stack = v.Value
			}
		case "associations":
			ids, err := stringList(path, "associations", v)
			if err != nil {
				return nil, err
			}
			r.Associations = ids
		case "edges":
			if v.Kind != yaml.MappingNode {
				return nil, errorf(ErrInvalidRecord, CodeFieldShape, path, line, "edges must map an edge kind to a record ID or a list of IDs")
			}
			for j := 0; j+1 < len(v.Content); j += 2 {
				ek, ev := v.Content[j], v.Content[j+1]
				ids, err := stringList(path, "edges."+ek.Value, ev)
				if err != nil {
					return nil, err
				}
				for _, id := range ids {
					r.Edges = append(r.Edges, Edge{Kind: ek.Value, To: id})
				}
			}
		default:
			if r.Fields == nil {
				r.Fields = map[string]any{}
			}
			r.Fields[k.Value] = plain(v)
		}
	}
	switch {
	case strings.TrimSpace(r.ID) == "":
		return nil, errorf(ErrInvalidRecord, CodeMissingField, path, 2, "frontmatter has no id; every record has `id:` and `kind:`")
	case strings.TrimSpace(r.Kind) == "":
		return nil, errorf(ErrInvalidRecord, CodeMissingField, path, 2, "record %q has no kind; every record has `id:` and `kind:`", r.ID)
	}
	return r, nil
}

// stringList reads a string or a list of strings.
func stringList(path, key string, v *yaml.Node) ([]string, error) {
	switch v.Kind {
	case yaml.ScalarNode:
		return []string{v.Value}, nil
	case yaml.SequenceNode:
		out := make([]string, 0, len(v.Content))
		for _, c := range v.Content {
			if c.Kind != yaml.ScalarNode {
				return nil, errorf(ErrInvalidRecord, CodeFieldShape, path, c.Line+1, "%s entries must be record IDs (strings)", key)
			}
			out = append(out, c.Value)
		}
		return out, nil
	}
	return nil, errorf(ErrInvalidRecord, CodeFieldShape, path, v.Line+1, "%s must be a record ID or a list of IDs", key)
}

// plain turns a checked node into strings, lists and maps: every scalar
// stays the text it is written as.
func plain(n *yaml.Node) any {
	switch n.Kind {
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			out = append(out, plain(c))
		}
		return out
	case yaml.MappingNode:
		out := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			out[n.Content[i].Value] = plain(n.Content[i+1])
		}
		return out
	}
	return n.Value
}

// yamlReader parses frontmatter into a Node tree and refuses, wherever they
// occur, what a record must not hold: anchors, aliases, tags, merge keys,
// complex and duplicate keys, directives and document markers; and bounds
// nodes and depth. Lines it reports are file lines (the frontmatter starts
// on line 2).
type yamlReader struct {
	path   string
	limits Limits
	nodes  int
	lines  []string
}

// startsWith reports whether the source text at n's position begins with
// prefix: the Node tree forgets a bare `!` tag, the source does not.
func (y *yamlReader) startsWith(n *yaml.Node, prefix string) bool {
	if n.Line < 1 || n.Line > len(y.lines) {
		return false
	}
	l := y.lines[n.Line-1]
	i := 0
	for col := 1; col < n.Column && i < len(l); col++ {
		_, size := utf8.DecodeRuneInString(l[i:])
		i += size
	}
	return strings.HasPrefix(l[i:], prefix)
}

func (y *yamlReader) parse(fm string) (*yaml.Node, error) {
	y.lines = strings.Split(fm, "\n")
	for i, l := range y.lines {
		if strings.HasPrefix(l, "%") {
			return nil, errorf(ErrInvalidRecord, CodeInvalidYAML, y.path, i+2, "YAML directives are not allowed in a record")
		}
		if strings.HasPrefix(l, "...") || strings.HasPrefix(l, "---") {
			return nil, errorf(ErrInvalidRecord, CodeInvalidYAML, y.path, i+2, "YAML document markers are not allowed inside frontmatter")
		}
	}
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader([]byte(fm))).Decode(&doc); err != nil {
		if err.Error() == "EOF" {
			return nil, nil
		}
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		line := 2
		if rest, ok := strings.CutPrefix(msg, "line "); ok {
			if n, after, ok := strings.Cut(rest, ": "); ok {
				if v, convErr := strconv.Atoi(n); convErr == nil {
					line, msg = v+1, after
				}
			}
		}
		code := CodeInvalidYAML
		switch {
		case strings.Contains(msg, "anchor"):
			code = CodeAlias
		case strings.Contains(msg, "tag"):
			code = CodeTag
		}
		e := errorf(ErrInvalidRecord, code, y.path, line, "invalid YAML (%s); fix the frontmatter", msg)
		return nil, e
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, nil
	}
	if err := y.check(doc.Content[0], 1); err != nil {
		return nil, err
	}
	return doc.Content[0], nil
}

func (y *yamlReader) check(n *yaml.Node, depth int) error {
	line := n.Line + 1
	y.nodes++
	switch {
	case y.nodes > y.limits.MaxFrontmatterNodes:
		return errorf(ErrLimitExceeded, CodeFrontmatterNodes, y.path, line, "frontmatter has more than %d YAML nodes", y.limits.MaxFrontmatterNodes)
	case depth > y.limits.MaxFrontmatterDepth:
		return errorf(ErrLimitExceeded, CodeFrontmatterDepth, y.path, line, "frontmatter nests deeper than %d levels", y.limits.MaxFrontmatterDepth)
	case n.Kind == yaml.AliasNode:
		return errorf(ErrInvalidRecord, CodeAlias, y.path, line, "YAML aliases are not allowed in a record")
	case n.Anchor != "" || y.startsWith(n, "&"):
		return errorf(ErrInvalidRecord, CodeAnchor, y.path, line, "YAML anchors are not allowed in a record")
	case n.Style&yaml.TaggedStyle != 0 || y.startsWith(n, "!"):
		return errorf(ErrInvalidRecord, CodeTag, y.path, line, "YAML tags are not allowed in a record; every scalar is a string")
	}
	if n.Kind == yaml.MappingNode {
		seen := make(map[string]bool, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			switch {
			case k.Kind != yaml.ScalarNode:
				return errorf(ErrInvalidRecord, CodeInvalidYAML, y.path, k.Line+1, "YAML complex keys are not allowed; write `key: value`")
			case k.Tag == "!!merge":
				return errorf(ErrInvalidRecord, CodeMergeKey, y.path, k.Line+1, "YAML merge keys (<<) are not allowed in a record")
			case seen[k.Value]:
				return errorf(ErrInvalidRecord, CodeDuplicateKey, y.path, k.Line+1, "duplicate key %q", k.Value)
			}
			seen[k.Value] = true
		}
	}
	for _, c := range n.Content {
		if err := y.check(c, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// Render writes r back as a record file: frontmatter in a fixed key order,
// then the body. ParseRecord(Render(r)) gives r back.
func Render(r *Record) ([]byte, error) {
	fm := yaml.Node{Kind: yaml.MappingNode}
	add := func(k string, v *yaml.Node) {
		fm.Content = append(fm.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: k}, v)
	}
	str := func(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: s, Tag: "!!str"} }
	list := func(ss []string) *yaml.Node {
		n := &yaml.Node{Kind: yaml.SequenceNode}
		for _, s := range ss {
			n.Content = append(n.Content, str(s))
		}
		return n
	}
	add("id", str(r.ID))
	add("kind", str(r.Kind))
	for _, f := range []struct{ k, v string }{{"owner", r.Owner}, {"repo", r.Repo}, {"stack", r.Stack}} {
		if f.v != "" {
			add(f.k, str(f.v))
		}
	}
	if len(r.Associations) > 0 {
		add("associations", list(r.Associations))
	}
	if len(r.Edges) > 0 {
		em := &yaml.Node{Kind: yaml.MappingNode}
		var order []string
		byKind := map[string][]string{}
		for _, e := range r.Edges {
			if _, ok := byKind[e.Kind]; !ok {
				order = append(order, e.Kind)
			}
			byKind[e.Kind] = append(byKind[e.Kind], e.To)
		}
		for _, k := range order {
			em.Content = append(em.Content, str(k), list(byKind[k]))
		}
		add("edges", em)
	}
	keys := make([]string, 0, len(r.Fields))
	for k := range r.Fields {
		if reservedKeys[k] {
			return nil, errorf(ErrInvalidArguments, CodeBadProposal, r.Path, 0, "field %q is a reserved key; set it directly", k)
		}
		keys = append(keys, k)
	}
	sortStrings(keys)
	for _, k := range keys {
		v, err := fieldNode(r.Fields[k], 1)
		if err != nil {
			return nil, errorf(ErrInvalidArguments, CodeBadProposal, r.Path, 0, "field %q: %v", k, err)
		}
		add(k, v)
	}
	var b bytes.Buffer
	b.WriteString("---\n")
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&fm); err != nil {
		return nil, err
	}
	_ = enc.Close()
	b.WriteString("---\n")
	b.WriteString(r.Body)
	if r.Body != "" && !strings.HasSuffix(r.Body, "\n") {
		b.WriteByte('\n')
	}
	return b.Bytes(), nil
}

func fieldNode(v any, depth int) (*yaml.Node, error) {
	if depth > 6 {
		return nil, fmt.Errorf("nests too deep")
	}
	switch x := v.(type) {
	case string:
		return &yaml.Node{Kind: yaml.ScalarNode, Value: x, Tag: "!!str"}, nil
	case []any:
		n := &yaml.Node{Kind: yaml.SequenceNode}
		for _, c := range x {
			cn, err := fieldNode(c, depth+1)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, cn)
		}
		return n, nil
	case map[string]any:
		n := &yaml.Node{Kind: yaml.MappingNode}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sortStrings(keys)
		for _, k := range keys {
			cn, err := fieldNode(x[k], depth+1)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: k}, cn)
		}
		return n, nil
	}
	return nil, fmt.Errorf("values are strings, lists or mappings, got %T", v)
}
