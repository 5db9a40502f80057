package skills

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file holds a small strict parser for the flat YAML subset SKILL.md
// frontmatter may use. It exists instead of a general YAML library because
// the reference's subset is defined by what it rejects: every scalar stays a
// string (no booleans, numbers or nulls), and anchors, aliases, tags,
// sequences, flow collections, nested mappings (except the one level under
// `metadata`), duplicate keys and multiple documents are errors, with at
// most maxParserEvents parser events. A general decoder would accept all of
// these silently.
//
// Supported: `key: value` lines at column 0; plain scalars (also folded over
// more-indented continuation lines); single- and double-quoted scalars (also
// multi-line); literal `|` and folded `>` block scalars with chomping and
// indentation indicators; comments; and one indented block mapping of scalar
// values under `metadata`.

// maxParserEvents bounds the events (stream, document, mapping and scalar
// starts and ends) one frontmatter may produce, as the reference does.
const maxParserEvents = 256

// yamlPair is one `key: value` entry. Exactly one of Scalar and Map applies:
// IsMap says which.
type yamlPair struct {
	Key    string
	Line   int
	Scalar string
	IsMap  bool
	Map    []yamlPair
}

// yamlError is a parse failure at a line of SKILL.md.
type yamlError struct {
	Line int
	Code Code
	Msg  string
}

func (e *yamlError) Error() string {
	return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
}

type yamlParser struct {
	lines     []string
	pos       int
	firstLine int // SKILL.md line number of lines[0]
	events    int
	mapKey    string // the one top-level key whose value may be a mapping
}

// parseYAMLSubset parses the frontmatter content src (between the
// delimiters, LF line endings) whose first line is line firstLine of the
// file. topKeys lists the accepted top-level keys; mapKey names the one key
// whose value may be a block mapping of scalars.
func parseYAMLSubset(src string, firstLine int, topKeys map[string]bool, mapKey string) ([]yamlPair, error) {
	p := &yamlParser{firstLine: firstLine, mapKey: mapKey}
	if src != "" {
		p.lines = strings.Split(strings.TrimSuffix(src, "\n"), "\n")
	}
	for i, l := range p.lines {
		if err := checkPrintable(l); err != nil {
			return nil, p.errAt(i, CodeInvalidYAML, "%v", err)
		}
	}
	// StreamStart, DocumentStart, MappingStart.
	if err := p.event(3); err != nil {
		return nil, err
	}
	pairs, err := p.mapping(0, true, topKeys)
	if err != nil {
		return nil, err
	}
	// MappingEnd, DocumentEnd, StreamEnd.
	if err := p.event(3); err != nil {
		return nil, err
	}
	return pairs, nil
}

func (p *yamlParser) errAt(i int, code Code, format string, args ...any) *yamlError {
	return &yamlError{Line: p.firstLine + i, Code: code, Msg: fmt.Sprintf(format, args...)}
}

func (p *yamlParser) event(n int) error {
	p.events += n
	if p.events > maxParserEvents {
		return p.errAt(min(p.pos, max(len(p.lines)-1, 0)), CodeTooManyEvents,
			"frontmatter produces more than %d YAML parser events; remove keys or metadata entries", maxParserEvents)
	}
	return nil
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

// indentOf counts leading spaces and reports whether a tab occurs in the
// leading whitespace.
func indentOf(l string) (n int, tab bool) {
	for n < len(l) {
		switch l[n] {
		case ' ':
			n++
		case '\t':
			return n, true
		default:
			return n, false
		}
	}
	return n, false
}

// isBlankOrComment reports lines that carry no content.
func isBlankOrComment(l string) bool {
	t := strings.TrimLeft(l, " \t")
	return t == "" || t[0] == '#'
}

// mapping parses block mapping entries at exactly indent. top selects the
// top-level rules (known keys, document markers).
func (p *yamlParser) mapping(indent int, top bool, keys map[string]bool) ([]yamlPair, error) {
	var pairs []yamlPair
	seen := map[string]bool{}
	for p.pos < len(p.lines) {
		l := p.lines[p.pos]
		if isBlankOrComment(l) {
			p.pos++
			continue
		}
		n, tab := indentOf(l)
		if tab && n <= indent {
			return nil, p.errAt(p.pos, CodeInvalidYAML, "tabs are not allowed for indentation; use spaces")
		}
		if n < indent {
			return pairs, nil // the enclosing mapping continues
		}
		if n > indent {
			return nil, p.errAt(p.pos, CodeInvalidYAML, "unexpected indentation of %d spaces; expected %d", n, indent)
		}
		if top {
			if l == "..." || l == "---" || strings.HasPrefix(l, "--- ") || strings.HasPrefix(l, "... ") {
				return nil, p.errAt(p.pos, CodeUnsupportedYAML, "multiple YAML documents or document markers are not supported")
			}
			if l[0] == '%' {
				return nil, p.errAt(p.pos, CodeUnsupportedYAML, "YAML directives are not supported")
			}
		}
		key, rest, err := p.key(l, n)
		if err != nil {
			return nil, err
		}
		if top && !keys[key] {
			return nil, p.errAt(p.pos, CodeUnknownKey, "unknown top-level key %s; allowed keys are name, description, license, compatibility, metadata and allowed-tools", strconv.Quote(key))
		}
		if seen[key] {
			return nil, p.errAt(p.pos, CodeDuplicateKey, "duplicate key %s", strconv.Quote(key))
		}
		seen[key] = true
		pair := yamlPair{Key: key, Line: p.firstLine + p.pos}
		if err := p.event(1); err != nil { // key scalar
			return nil, err
		}
		allowMap := top && key == p.mapKey
		if err := p.value(&pair, rest, n, allowMap, top); err != nil {
			return nil, err
		}
		pairs = append(pairs, pair)
	}
	return pairs, nil
}

// key parses the key at column col of line l and returns it with the text
// after the colon.
func (p *yamlParser) key(l string, col int) (key, rest string, err error) {
	s := l[col:]
	switch s[0] {
	case '"', '\'':
		v, after, closed, _, err := scanQuotedLine(s)
		if err != nil {
			return "", "", p.errAt(p.pos, CodeInvalidYAML, "%v", err)
		}
		if !closed {
			return "", "", p.errAt(p.pos, CodeInvalidYAML, "quoted key must be closed on the same line")
		}
		after = strings.TrimLeft(after, " \t")
		if !strings.HasPrefix(after, ":") || (len(after) > 1 && after[1] != ' ' && after[1] != '\t') {
			return "", "", p.errAt(p.pos, CodeInvalidYAML, "expected `:` after the quoted key")
		}
		return v, after[1:], nil
	}
	if err := p.indicator(s, "key"); err != nil {
		return "", "", err
	}
	for i := 0; i < len(s); i++ {
		if s[i] == '#' && i > 0 && (s[i-1] == ' ' || s[i-1] == '\t') {
			break
		}
		if s[i] == ':' && (i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\t') {
			k := strings.TrimRight(s[:i], " \t")
			if k == "" {
				return "", "", p.errAt(p.pos, CodeInvalidYAML, "empty key")
			}
			return k, s[i+1:], nil
		}
	}
	return "", "", p.errAt(p.pos, CodeInvalidYAML, "expected `key: value`")
}

// indicator rejects the YAML constructs outside the subset that a node
// starting with s would introduce.
func (p *yamlParser) indicator(s, what string) error {
	if s == "" {
		return nil
	}
	next := byte(' ')
	if len(s) > 1 {
		next = s[1]
	}
	sep := next == ' ' || next == '\t'
	switch s[0] {
	case '&':
		return p.errAt(p.pos, CodeUnsupportedYAML, "YAML anchors are not supported")
	case '*':
		return p.errAt(p.pos, CodeUnsupportedYAML, "YAML aliases are not supported")
	case '!':
		return p.errAt(p.pos, CodeUnsupportedYAML, "YAML tags are not supported; every scalar is a string")
	case '[', '{':
		return p.errAt(p.pos, CodeUnsupportedYAML, "YAML flow collections are not supported; use a plain or quoted string")
	case '-':
		if sep {
			return p.errAt(p.pos, CodeUnsupportedYAML, "YAML sequences are not supported; allowed-tools is one space-separated string")
		}
	case '?':
		if sep {
			return p.errAt(p.pos, CodeUnsupportedYAML, "YAML complex keys are not supported")
		}
	case ':':
		if sep {
			return p.errAt(p.pos, CodeInvalidYAML, "missing %s before `:`", what)
		}
	case '@', '`':
		return p.errAt(p.pos, CodeInvalidYAML, "%q is a reserved YAML indicator; quote the %s", s[0], what)
	case '|', '>':
		if what == "key" {
			return p.errAt(p.pos, CodeInvalidYAML, "block scalars cannot be keys")
		}
	}
	return nil
}

// value parses the value of pair whose key sits at column indent; rest is
// the text after the key's colon.
func (p *yamlParser) value(pair *yamlPair, rest string, indent int, allowMap, top bool) error {
	startLine := p.pos
	rest = strings.TrimLeft(rest, " \t")
	if rest == "" || rest[0] == '#' {
		p.pos++
		// Find the next content line to see what the value is.
		j := p.pos
		for j < len(p.lines) && isBlankOrComment(p.lines[j]) {
			j++
		}
		if j < len(p.lines) {
			if n, _ := indentOf(p.lines[j]); n > indent {
				s := p.lines[j][n:]
				if err := p.indicatorAt(j, s); err != nil {
					return err
				}
				if looksLikeKey(s) {
					if !allowMap {
						msg := "nested mappings are only supported under " + p.mapKey
						if !top {
							msg = "nested " + p.mapKey + " is not supported; values must be strings"
						}
						return p.errAt(j, CodeUnsupportedYAML, "%s", msg)
					}
					pair.IsMap = true
					if err := p.event(1); err != nil { // MappingStart
						return err
					}
					m, err := p.mapping(n, false, nil)
					if err != nil {
						return err
					}
					pair.Map = m
					return p.event(1) // MappingEnd
				}
				p.pos = j
				v, err := p.plain(s, indent)
				if err != nil {
					return err
				}
				pair.Scalar = v
				return p.event(1)
			}
		}
		// An empty value is the empty string: scalars stay strings.
		pair.Scalar = ""
		return p.event(1)
	}
	if err := p.indicatorAt(startLine, rest); err != nil {
		return err
	}
	var (
		v   string
		err error
	)
	switch rest[0] {
	case '|', '>':
		v, err = p.block(rest, indent)
	case '"', '\'':
		v, err = p.quoted(rest, indent)
	default:
		v, err = p.plain(rest, indent)
	}
	if err != nil {
		return err
	}
	pair.Scalar = v
	return p.event(1)
}

func (p *yamlParser) indicatorAt(line int, s string) error {
	save := p.pos
	p.pos = line
	err := p.indicator(s, "value")
	p.pos = save
	return err
}

// looksLikeKey reports whether s starts an implicit `key:` entry.
func looksLikeKey(s string) bool {
	if s == "" {
		return false
	}
	if s[0] == '"' || s[0] == '\'' {
		_, after, closed, _, err := scanQuotedLine(s)
		after = strings.TrimLeft(after, " \t")
		return err == nil && closed && strings.HasPrefix(after, ":")
	}
	for i := 0; i < len(s); i++ {
		if s[i] == '#' && i > 0 && (s[i-1] == ' ' || s[i-1] == '\t') {
			return false
		}
		if s[i] == ':' && (i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\t') {
			return true
		}
	}
	return false
}

// plain parses a plain scalar starting with first on line p.pos, folding
// continuation lines indented more than indent.
func (p *yamlParser) plain(first string, indent int) (string, error) {
	text, ended, err := p.plainLine(first)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString(text)
	p.pos++
	newlines := 0
	for !ended && p.pos < len(p.lines) {
		l := p.lines[p.pos]
		if strings.TrimLeft(l, " \t") == "" {
			newlines++
			p.pos++
			continue
		}
		n, tab := indentOf(l)
		if n <= indent && !tab {
			break
		}
		if tab && n <= indent {
			return "", p.errAt(p.pos, CodeInvalidYAML, "tabs are not allowed for indentation; use spaces")
		}
		s := strings.TrimLeft(l, " \t")
		if s[0] == '#' {
			break // a comment ends the scalar
		}
		if looksLikeKey(s) {
			return "", p.errAt(p.pos, CodeInvalidYAML, "unexpected `key:` inside a multi-line plain value; quote the value or fix the indentation")
		}
		t, e, err := p.plainLine(s)
		if err != nil {
			return "", err
		}
		if newlines == 0 {
			b.WriteByte(' ')
		} else {
			b.WriteString(strings.Repeat("\n", newlines))
		}
		newlines = 0
		b.WriteString(t)
		ended = e
		p.pos++
	}
	return b.String(), nil
}

// plainLine returns one line's share of a plain scalar and whether a comment
// ended it.
func (p *yamlParser) plainLine(s string) (string, bool, error) {
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '#' && i > 0 && (s[i-1] == ' ' || s[i-1] == '\t'):
			return strings.TrimRight(s[:i], " \t"), true, nil
		case s[i] == ':' && (i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\t'):
			return "", false, p.errAt(p.pos, CodeInvalidYAML, "unquoted value contains `: `; put the value in quotes")
		}
	}
	return strings.TrimRight(s, " \t"), false, nil
}

// scanQuotedLine scans a quoted scalar that starts at s[0] within one line.
// It returns the decoded text so far, the text after the closing quote,
// whether the quote closed on this line, and whether the line ended in an
// escaped line break (a double-quoted backslash as the last character).
func scanQuotedLine(s string) (val, after string, closed, escapedBreak bool, err error) {
	q := s[0]
	var b strings.Builder
	i := 1
	for i < len(s) {
		c := s[i]
		if q == '\'' {
			if c == '\'' {
				if i+1 < len(s) && s[i+1] == '\'' {
					b.WriteByte('\'')
					i += 2
					continue
				}
				return b.String(), s[i+1:], true, false, nil
			}
			b.WriteByte(c)
			i++
			continue
		}
		switch c {
		case '"':
			return b.String(), s[i+1:], true, false, nil
		case '\\':
			if i+1 == len(s) {
				return b.String(), "", false, true, nil
			}
			r, n, err := decodeEscape(s[i+1:])
			if err != nil {
				return "", "", false, false, err
			}
			b.WriteString(r)
			i += 1 + n
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String(), "", false, false, nil
}

// decodeEscape decodes one double-quoted escape (s starts after the
// backslash) and returns its text and the bytes consumed.
func decodeEscape(s string) (string, int, error) {
	simple := map[byte]string{
		'0': "\x00", 'a': "\a", 'b': "\b", 't': "\t", '\t': "\t", 'n': "\n", 'v': "\v",
		'f': "\f", 'r': "\r", 'e': "\x1b", ' ': " ", '"': "\"", '/': "/", '\\': "\\",
		'N': "\u0085", '_': "\u00a0", 'L': "\u2028", 'P': "\u2029",
	}
	if r, ok := simple[s[0]]; ok {
		return r, 1, nil
	}
	width := map[byte]int{'x': 2, 'u': 4, 'U': 8}[s[0]]
	if width == 0 {
		return "", 0, fmt.Errorf("unknown escape \\%c in double-quoted string", s[0])
	}
	if len(s) < 1+width {
		return "", 0, fmt.Errorf("short \\%c escape in double-quoted string", s[0])
	}
	v, err := strconv.ParseUint(s[1:1+width], 16, 32)
	if err != nil || v > utf8.MaxRune || (v >= 0xd800 && v <= 0xdfff) {
		return "", 0, fmt.Errorf("invalid \\%c escape in double-quoted string", s[0])
	}
	return string(rune(v)), 1 + width, nil
}

// quoted parses a single- or double-quoted scalar that may continue over
// lines indented more than indent.
func (p *yamlParser) quoted(first string, indent int) (string, error) {
	q := first[0]
	var b strings.Builder
	src := first
	for {
		v, after, closed, escapedBreak, err := scanQuotedLine(src)
		if err != nil {
			return "", p.errAt(p.pos, CodeInvalidYAML, "%v", err)
		}
		if closed {
			b.WriteString(v)
			after = strings.TrimLeft(after, " \t")
			if after != "" && after[0] != '#' {
				return "", p.errAt(p.pos, CodeInvalidYAML, "unexpected text after the closing quote; quote the whole value")
			}
			p.pos++
			return b.String(), nil
		}
		if !escapedBreak {
			v = strings.TrimRight(v, " \t")
		}
		b.WriteString(v)
		p.pos++
		newlines := 0
		for p.pos < len(p.lines) && strings.TrimLeft(p.lines[p.pos], " \t") == "" {
			newlines++
			p.pos++
		}
		if p.pos == len(p.lines) {
			return "", p.errAt(p.pos-1, CodeInvalidYAML, "unterminated quoted string")
		}
		l := p.lines[p.pos]
		if n, tab := indentOf(l); n <= indent && !tab {
			return "", p.errAt(p.pos, CodeInvalidYAML, "unterminated quoted string, or its continuation line is not indented")
		}
		switch {
		case newlines > 0:
			b.WriteString(strings.Repeat("\n", newlines))
		case !escapedBreak:
			b.WriteByte(' ')
		}
		src = string(q) + strings.TrimLeft(l, " \t")
	}
}

// block parses a literal (|) or folded (>) block scalar whose header is
// header, for a key at column indent.
func (p *yamlParser) block(header string, indent int) (string, error) {
	literal := header[0] == '|'
	chomp := byte(0)
	explicit := 0
	h := header[1:]
	for h != "" && h[0] != ' ' && h[0] != '\t' {
		switch c := h[0]; {
		case (c == '-' || c == '+') && chomp == 0:
			chomp = c
		case c >= '1' && c <= '9' && explicit == 0:
			explicit = int(c - '0')
		default:
			return "", p.errAt(p.pos, CodeInvalidYAML, "invalid block scalar header %q", header)
		}
		h = h[1:]
	}
	h = strings.TrimLeft(h, " \t")
	if h != "" && h[0] != '#' {
		return "", p.errAt(p.pos, CodeInvalidYAML, "unexpected text after the block scalar header")
	}
	p.pos++
	blockIndent := 0
	if explicit > 0 {
		blockIndent = indent + explicit
	} else {
		maxLeading := 0
		for j := p.pos; j < len(p.lines); j++ {
			l := p.lines[j]
			n, tab := indentOf(l)
			if n == len(l) {
				maxLeading = max(maxLeading, n)
				continue
			}
			if tab && n <= indent {
				return "", p.errAt(j, CodeInvalidYAML, "tabs are not allowed for indentation; use spaces")
			}
			if n > indent {
				blockIndent = n
				if maxLeading > n {
					return "", p.errAt(j, CodeInvalidYAML, "leading empty lines of a block scalar are indented more than its text")
				}
			}
			break
		}
	}
	var b strings.Builder
	emptyLines := 0
	didRead := false
	moreIndented := false
	for blockIndent > 0 && p.pos < len(p.lines) {
		l := p.lines[p.pos]
		n, _ := indentOf(l)
		blank := strings.TrimLeft(l, " \t") == ""
		if blank && (n <= blockIndent || n < len(l)) {
			emptyLines++
			p.pos++
			continue
		}
		if n < blockIndent {
			break
		}
		line := l[blockIndent:]
		switch {
		case literal:
			if didRead {
				b.WriteString(strings.Repeat("\n", 1+emptyLines))
			} else {
				b.WriteString(strings.Repeat("\n", emptyLines))
			}
		case line != "" && (line[0] == ' ' || line[0] == '\t'):
			moreIndented = true
			if didRead {
				b.WriteString(strings.Repeat("\n", 1+emptyLines))
			} else {
				b.WriteString(strings.Repeat("\n", emptyLines))
			}
		case moreIndented:
			moreIndented = false
			b.WriteString(strings.Repeat("\n", emptyLines+1))
		case emptyLines == 0:
			if didRead {
				b.WriteByte(' ')
			}
		default:
			b.WriteString(strings.Repeat("\n", emptyLines))
		}
		b.WriteString(line)
		didRead = true
		emptyLines = 0
		p.pos++
	}
	switch chomp {
	case '+':
		if didRead {
			b.WriteString(strings.Repeat("\n", 1+emptyLines))
		} else {
			b.WriteString(strings.Repeat("\n", emptyLines))
		}
	case '-':
	default:
		if didRead {
			b.WriteByte('\n')
		}
	}
	return b.String(), nil
}
