package skills

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// This file holds the strict layer between SKILL.md frontmatter and a
// general YAML parser. go.yaml.in/yaml/v3 parses the text into a Node tree;
// the walk here then refuses everything the portable format leaves out, so
// that a Skill means the same in every reader: anchors, aliases, tags
// (explicit or the bare `!`), merge keys, explicit `? ` keys, duplicate
// keys, document markers, directives and multiple documents are errors, and
// a frontmatter may produce at most maxParserEvents parser events. Every
// scalar stays the string it is written as: the walk reads Node.Value and
// never the type a tag would resolve (`true`, `1.0` and `~` are text).
//
// The Node tree keeps each node's Kind, Style, Tag, Anchor, Line and Column;
// what it does not keep (a bare `!`, a `? ` before a key) the walk reads from
// the source line at the node's position. Which shapes a value may take
// (a string, a block mapping of strings, a list) is decided per key by the
// caller (fields.go).

// maxParserEvents bounds the events (stream, document, mapping, sequence and
// scalar starts and ends) one frontmatter may produce, as the reference does.
const maxParserEvents = 256

// yamlError is a failure at a line of SKILL.md.
type yamlError struct {
	Line int
	Code Code
	Msg  string
}

func (e *yamlError) Error() string {
	return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
}

// entry is one `key: value` of a block mapping.
type entry struct {
	Key   string
	Line  int // SKILL.md line of the key
	Value *yaml.Node
}

// yamlSource is the frontmatter text between the delimiters, kept beside
// its Node tree for positions and errors.
type yamlSource struct {
	lines     []string
	firstLine int // SKILL.md line number of lines[0]
}

// fileLine turns a 1-based line of the YAML text into a SKILL.md line.
func (s *yamlSource) fileLine(line int) int {
	return s.firstLine + max(line, 1) - 1
}

func (s *yamlSource) errAt(line int, code Code, format string, args ...any) *yamlError {
	return &yamlError{Line: s.fileLine(line), Code: code, Msg: fmt.Sprintf(format, args...)}
}

// line returns the 1-based line of the YAML text, or "".
func (s *yamlSource) line(n int) string {
	if n < 1 || n > len(s.lines) {
		return ""
	}
	return s.lines[n-1]
}

// textAt returns the source line of n from its column on (columns count
// characters, as the parser counts them), and the text before it.
func (s *yamlSource) textAt(n *yaml.Node) (before, from string) {
	l := s.line(n.Line)
	i := 0
	for col := 1; col < n.Column && i < len(l); col++ {
		_, size := utf8.DecodeRuneInString(l[i:])
		i += size
	}
	return l[:i], l[i:]
}

// parseYAML parses the frontmatter content (between the delimiters, LF line
// endings), whose first line is line firstLine of SKILL.md, into the entries
// of its top-level block mapping. known says whether a top-level key is
// accepted. An empty content (or only comments) has no entries.
func parseYAML(content string, firstLine int, known func(string) bool) (*yamlSource, []entry, error) {
	s := &yamlSource{firstLine: firstLine}
	if content != "" {
		s.lines = strings.Split(strings.TrimSuffix(content, "\n"), "\n")
	}
	for i, l := range s.lines {
		if err := checkPrintable(l); err != nil {
			return nil, nil, s.errAt(i+1, CodeInvalidYAML, "%v", err)
		}
		// At column 0 these are document markers and directives wherever
		// they occur: a value's continuation lines are always indented.
		if isDocumentMarker(l) {
			return nil, nil, s.errAt(i+1, CodeUnsupportedYAML, "multiple YAML documents or document markers are not supported")
		}
		if strings.HasPrefix(l, "%") {
			return nil, nil, s.errAt(i+1, CodeUnsupportedYAML, "YAML directives are not supported")
		}
	}
	root, err := s.decode(content)
	if err != nil || root == nil {
		return s, nil, err
	}
	events := 4 // stream and document, start and end
	if err := s.countEvents(root, &events); err != nil {
		return nil, nil, err
	}
	if err := s.check(root); err != nil {
		return nil, nil, err
	}
	switch {
	case root.Kind == yaml.SequenceNode:
		return nil, nil, s.errAt(root.Line, CodeUnsupportedYAML, "YAML sequences are not supported here; the frontmatter is a mapping of `key: value` lines")
	case root.Kind != yaml.MappingNode:
		return nil, nil, s.errAt(root.Line, CodeInvalidYAML, "expected `key: value`; the frontmatter is a mapping of keys to values")
	case root.Style&yaml.FlowStyle != 0:
		return nil, nil, s.errAt(root.Line, CodeUnsupportedYAML, "YAML flow collections are not supported; write one `key: value` per line")
	}
	entries, err := s.mapping(root, func(e entry, key *yaml.Node) error {
		if key.Column != 1 {
			return s.errAt(key.Line, CodeInvalidYAML, "unexpected indentation of %d spaces; expected 0", key.Column-1)
		}
		if !known(e.Key) {
			return s.errAt(key.Line, CodeUnknownKey, "%s", unknownKeyReason(e.Key))
		}
		return nil
	})
	return s, entries, err
}

// isDocumentMarker reports a `---` or `...` line (alone or followed by
// whitespace), which starts or ends a YAML document.
func isDocumentMarker(l string) bool {
	if !strings.HasPrefix(l, "---") && !strings.HasPrefix(l, "...") {
		return false
	}
	return len(l) == 3 || l[3] == ' ' || l[3] == '\t'
}

// decode parses the one document of content; it returns nil for no
// document at all. parseYAML has refused every document marker and
// directive, so content cannot hold a second document and Unmarshal,
// which reads the first, reads it all.
func (s *yamlSource) decode(content string) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(content), &doc); err != nil {
		return nil, s.syntaxError(err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, nil
	}
	return doc.Content[0], nil
}

// countEvents charges n and its descendants, in document order, to events
// and fails at the node that crosses maxParserEvents.
func (s *yamlSource) countEvents(n *yaml.Node, events *int) error {
	switch n.Kind {
	case yaml.MappingNode, yaml.SequenceNode:
		*events += 2
	default:
		*events++
	}
	if *events > maxParserEvents {
		return s.errAt(n.Line, CodeTooManyEvents, "frontmatter produces more than %d YAML parser events; remove keys or metadata entries", maxParserEvents)
	}
	for _, c := range n.Content {
		if err := s.countEvents(c, events); err != nil {
			return err
		}
	}
	return nil
}

// check refuses the node properties outside the portable format: anchors,
// aliases and tags.
func (s *yamlSource) check(n *yaml.Node) error {
	_, from := s.textAt(n)
	switch {
	case n.Kind == yaml.AliasNode:
		return s.errAt(n.Line, CodeUnsupportedYAML, "YAML aliases are not supported")
	case n.Anchor != "" || strings.HasPrefix(from, "&"):
		return s.errAt(n.Line, CodeUnsupportedYAML, "YAML anchors are not supported")
	case n.Style&yaml.TaggedStyle != 0 || strings.HasPrefix(from, "!"):
		return s.errAt(n.Line, CodeUnsupportedYAML, "YAML tags are not supported; every scalar is a string")
	}
	return nil
}

// mapping returns the entries of the block mapping n in written order. Each
// key must be a plain or quoted string, written without `? `, not `<<` and
// not repeated; accept is asked about each key before its value is read.
func (s *yamlSource) mapping(n *yaml.Node, accept func(entry, *yaml.Node) error) ([]entry, error) {
	entries := make([]entry, 0, len(n.Content)/2)
	seen := make(map[string]bool, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, value := n.Content[i], n.Content[i+1]
		if err := s.check(key); err != nil {
			return nil, err
		}
		before, _ := s.textAt(key)
		switch {
		case key.Kind != yaml.ScalarNode || strings.HasSuffix(strings.TrimRight(before, " \t"), "?"):
			return nil, s.errAt(key.Line, CodeUnsupportedYAML, "YAML complex keys are not supported; write `key: value`")
		case key.Tag == "!!merge":
			return nil, s.errAt(key.Line, CodeUnsupportedYAML, "YAML merge keys (<<) are not supported")
		}
		e := entry{Key: key.Value, Line: s.fileLine(key.Line), Value: value}
		if accept != nil {
			if err := accept(e, key); err != nil {
				return nil, err
			}
		}
		if seen[e.Key] {
			return nil, s.errAt(key.Line, CodeDuplicateKey, "duplicate key %s", strconv.Quote(e.Key))
		}
		seen[e.Key] = true
		if err := s.check(value); err != nil {
			return nil, err
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// scalar returns the string value of key, or why it is not one. what names
// the shapes the key accepts ("a string", "a string or a list of strings").
func (s *yamlSource) scalar(key string, n *yaml.Node, what string) (string, error) {
	if err := s.check(n); err != nil {
		return "", err
	}
	switch {
	case n.Kind == yaml.ScalarNode:
		return n.Value, nil
	case n.Style&yaml.FlowStyle != 0:
		return "", s.errAt(n.Line, CodeUnsupportedYAML, "YAML flow collections are not supported for %s; it is %s", key, what)
	case n.Kind == yaml.SequenceNode:
		return "", s.errAt(n.Line, CodeUnsupportedYAML, "YAML sequences are not supported for %s; it is %s", key, what)
	default:
		return "", s.errAt(n.Line, CodeUnsupportedYAML, "%s is %s: nested mappings are only supported under metadata", key, what)
	}
}

// item is one string of a list value.
type item struct {
	Text string
	Line int // SKILL.md line
}

// list returns the strings of a block or flow sequence value of key.
func (s *yamlSource) list(key string, n *yaml.Node) ([]item, error) {
	items := make([]item, 0, len(n.Content))
	for _, c := range n.Content {
		v, err := s.scalar(key+" entry", c, "a string")
		if err != nil {
			return nil, err
		}
		items = append(items, item{Text: v, Line: s.fileLine(c.Line)})
	}
	return items, nil
}

// syntaxError turns a parse failure of go.yaml.in/yaml/v3 into an error at a
// SKILL.md line that says what to change. The parser's message names the
// symptom; the source line at the position tells which mistake it was.
func (s *yamlSource) syntaxError(err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 1
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if n, after, ok := strings.Cut(rest, ": "); ok {
			if v, convErr := strconv.Atoi(n); convErr == nil {
				line, msg = v, after
			}
		}
	}
	// The parser (not the scanner) counts its lines from 0.
	if strings.HasPrefix(msg, "did not find expected") {
		line++
	}
	text := strings.TrimLeft(s.line(line), " ")
	tabbed := strings.Contains(leadingSpace(s.line(line)), "\t")
	switch {
	case strings.HasPrefix(msg, "unknown anchor"):
		return s.errAt(s.lineContaining("*"), CodeUnsupportedYAML, "YAML aliases are not supported")
	case strings.Contains(msg, "tag handle"):
		return s.errAt(line, CodeUnsupportedYAML, "YAML tags are not supported; every scalar is a string")
	case strings.Contains(msg, "tab character"), tabbed && strings.Contains(msg, "cannot start any token"):
		return s.errAt(line, CodeInvalidYAML, "tabs are not allowed for indentation; use spaces")
	case strings.Contains(msg, "cannot start any token"):
		return s.errAt(line, CodeInvalidYAML, "a value cannot start with @ or ` (reserved YAML indicators); quote the value")
	case strings.HasPrefix(msg, "mapping values are not allowed"):
		return s.errAt(line, CodeInvalidYAML, "unexpected `key:` or `: `; put a value that contains `: ` in quotes, or fix the indentation of the key")
	case strings.Contains(msg, "end of stream") || strings.Contains(msg, "document indicator"):
		return s.errAt(line, CodeInvalidYAML, "unterminated quoted string; close the quoted key or value on an indented line")
	case strings.Contains(msg, "escape"):
		return s.errAt(line, CodeInvalidYAML, "invalid escape in double-quoted string; write \\\\ for a backslash or use single quotes")
	case strings.HasPrefix(msg, "did not find expected ',' or"):
		return s.errAt(line, CodeInvalidYAML, "unterminated flow collection; close it with ] or }")
	case strings.HasPrefix(msg, "did not find expected key") && afterClosingQuote(text):
		return s.errAt(line, CodeInvalidYAML, "unexpected text after the closing quote; quote the whole value")
	case strings.HasPrefix(msg, "did not find expected key"), strings.HasPrefix(msg, "could not find expected ':'"):
		return s.errAt(line, CodeInvalidYAML, "expected `key: value` at the indentation of the enclosing mapping; fix the indentation, or quote a value that a comment would cut")
	case strings.HasPrefix(msg, "block sequence entries are not allowed"):
		return s.errAt(line, CodeInvalidYAML, "a `- ` list entry cannot follow a value on the same line; put each entry on its own indented line")
	}
	return s.errAt(line, CodeInvalidYAML, "invalid YAML (%s); fix the syntax at this line", msg)
}

// lineContaining returns the first 1-based line holding sub, or 1.
func (s *yamlSource) lineContaining(sub string) int {
	for i, l := range s.lines {
		if strings.Contains(l, sub) {
			return i + 1
		}
	}
	return 1
}

func leadingSpace(l string) string {
	return l[:len(l)-len(strings.TrimLeft(l, " \t"))]
}

// afterClosingQuote reports a `key: "quoted" text` line.
func afterClosingQuote(l string) bool {
	_, v, ok := strings.Cut(l, ": ")
	v = strings.TrimLeft(v, " ")
	return ok && v != "" && (v[0] == '"' || v[0] == '\'')
}

// checkPrintable enforces YAML's printable character set on one line.
func checkPrintable(l string) error {
	for _, r := range l {
		switch {
		case r == '\t', r >= 0x20 && r <= 0x7e, r == 0x85, r >= 0xa0 && r <= 0xd7ff,
			r >= 0xe000 && r <= 0xfffd && r != 0xfeff, r >= 0x10000 && r <= 0x10ffff:
		case r == utf8.RuneError:
			return fmt.Errorf("invalid UTF-8")
		case r == 0xfeff:
			return fmt.Errorf("byte order mark inside frontmatter is not allowed")
		default:
			return fmt.Errorf("control character %U is not allowed in frontmatter", r)
		}
	}
	return nil
}
