package schema

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/pabloagent/pablo/internal/jsonx"
)

// kind is the JSON type of a parsed value.
type kind uint8

const (
	kindNull kind = iota
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

// value is one parsed JSON value. It is immutable after parsing.
//
// Numbers keep their literal text (str) for canonical serialization and an
// exact normalized decimal (neg, digits, exp) for comparison, so no number is
// ever rounded through float64. Object members are sorted by key and keys are
// unique: duplicate keys are a parse error.
type value struct {
	kind    kind
	b       bool    // kindBool
	str     string  // kindString: decoded text; kindNumber: literal text
	num     decimal // kindNumber
	items   []value
	members []member
}

type member struct {
	key string
	val value
}

// lookup returns the member value for key, using binary search over the
// sorted members.
func (v *value) lookup(key string) (*value, bool) {
	i, ok := slices.BinarySearchFunc(v.members, key, func(m member, k string) int {
		return strings.Compare(m.key, k)
	})
	if !ok {
		return nil, false
	}
	return &v.members[i].val, true
}

// parseErrKind classifies why a document failed to parse.
type parseErrKind uint8

const (
	errSyntax    parseErrKind = iota + 1 // not JSON (including invalid UTF-8 and lone surrogates)
	errDepth                             // nesting deeper than the limit
	errNodes                             // more values than the limit
	errDuplicate                         // an object repeats a key
	errExponent                          // a number's exponent is out of the supported range
)

// parseError reports the first problem found while parsing. Path is the JSON
// pointer of the value where parsing stopped; it is empty for syntax errors,
// whose position is reported as a byte offset instead.
type parseError struct {
	kind   parseErrKind
	offset int
	path   string
	detail string
}

func (e *parseError) Error() string {
	if e.path != "" {
		return e.detail + " at " + strconv.Quote(e.path)
	}
	return e.detail + " at byte offset " + strconv.Itoa(e.offset)
}

// maxExponentDigits bounds the exponent part of a number literal. Nine digits
// keep every normalized exponent comfortably inside int64 while allowing any
// number a real document would contain.
const maxExponentDigits = 9

// parser is a strict RFC 8259 parser with bounds. It rejects invalid UTF-8,
// unpaired surrogate escapes, duplicate object keys, and trailing data.
type parser struct {
	data     []byte
	pos      int
	maxDepth int
	maxNodes int
	nodes    int
	path     []pathSeg
	err      *parseError
	// Scratch stacks: children collect here and are copied into one
	// exactly sized slice when their container closes.
	itemStack   []value
	memberStack []member
	// A pooled parser (validation) copies closed containers into these
	// arenas instead of fresh slices: its tree dies when the validation
	// returns, and the next one reuses the space.
	pooled      bool
	itemArena   []value
	memberArena []member
	// keys interns object keys the schema names, so the usual instance
	// allocates no key strings.
	keys map[string]string
}

// reset readies a pooled parser for data.
func (p *parser) reset(data []byte, maxDepth, maxNodes int) {
	clear(p.itemArena)
	clear(p.memberArena)
	*p = parser{data: data, maxDepth: maxDepth, maxNodes: maxNodes, path: p.path[:0],
		itemStack: p.itemStack[:0], memberStack: p.memberStack[:0], pooled: true,
		itemArena: p.itemArena[:0], memberArena: p.memberArena[:0], keys: p.keys}
}

// keep gives a closed container its own slice: a fresh one, or for a
// pooled parser a piece of its arena.
func keep[T any](pooled bool, arena *[]T, s []T) []T {
	if !pooled {
		return slices.Clone(s)
	}
	start := len(*arena)
	*arena = append(*arena, s...)
	return (*arena)[start:len(*arena):len(*arena)]
}

// pathSeg is one step of a JSON pointer: an object key or an array index.
type pathSeg struct {
	key   string
	index int
	isKey bool
}

// parseJSON parses data as exactly one JSON value. Depth counts nested
// arrays and objects: a scalar document has depth 0, `[1]` has depth 1.
func parseJSON(data []byte, maxDepth, maxNodes int) (value, *parseError) {
	p := &parser{data: data, maxDepth: maxDepth, maxNodes: maxNodes,
		path: make([]pathSeg, 0, 8), itemStack: make([]value, 0, 8), memberStack: make([]member, 0, 16)}
	return p.parse()
}

// parse parses p.data as exactly one JSON value.
func (p *parser) parse() (value, *parseError) {
	data := p.data
	if !utf8.Valid(data) {
		i := 0
		for i < len(data) {
			r, n := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			i += n
		}
		return value{}, &parseError{kind: errSyntax, offset: i, detail: "invalid UTF-8"}
	}
	p.skipSpace()
	v := p.parseValue(0)
	if p.err != nil {
		return value{}, p.err
	}
	p.skipSpace()
	if p.pos != len(p.data) {
		p.fail(errSyntax, "unexpected data after the JSON value")
		return value{}, p.err
	}
	return v, nil
}

func (p *parser) fail(k parseErrKind, detail string) {
	if p.err != nil {
		return
	}
	e := &parseError{kind: k, offset: p.pos, detail: detail}
	if k != errSyntax {
		e.path = pointer(p.path)
	}
	p.err = e
}

func (p *parser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) parseValue(depth int) value {
	p.nodes++
	if p.nodes > p.maxNodes {
		p.fail(errNodes, "more than "+strconv.Itoa(p.maxNodes)+" JSON values")
		return value{}
	}
	if p.pos >= len(p.data) {
		p.fail(errSyntax, "unexpected end of input")
		return value{}
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.parseObject(depth + 1)
	case c == '[':
		return p.parseArray(depth + 1)
	case c == '"':
		s, ok := p.parseString()
		if !ok {
			return value{}
		}
		return value{kind: kindString, str: s}
	case c == 't':
		return p.literal("true", value{kind: kindBool, b: true})
	case c == 'f':
		return p.literal("false", value{kind: kindBool})
	case c == 'n':
		return p.literal("null", value{kind: kindNull})
	case c == '-' || (c >= '0' && c <= '9'):
		return p.parseNumber()
	default:
		p.fail(errSyntax, "unexpected character "+strconv.QuoteRune(rune(c)))
		return value{}
	}
}

func (p *parser) literal(word string, v value) value {
	if !strings.HasPrefix(string(p.data[p.pos:min(len(p.data), p.pos+len(word))]), word) {
		p.fail(errSyntax, "invalid literal")
		return value{}
	}
	p.pos += len(word)
	return v
}

func (p *parser) enter(depth int) bool {
	if depth > p.maxDepth {
		p.fail(errDepth, "nesting deeper than "+strconv.Itoa(p.maxDepth))
		return false
	}
	return true
}

func (p *parser) parseArray(depth int) value {
	if !p.enter(depth) {
		return value{}
	}
	p.pos++ // '['
	v := value{kind: kindArray}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return v
	}
	base := len(p.itemStack)
	defer func() { p.itemStack = p.itemStack[:base] }()
	for i := 0; ; i++ {
		p.path = append(p.path, pathSeg{index: i})
		p.skipSpace()
		item := p.parseValue(depth)
		p.path = p.path[:len(p.path)-1]
		if p.err != nil {
			return value{}
		}
		p.itemStack = append(p.itemStack, item)
		p.skipSpace()
		if p.pos >= len(p.data) {
			p.fail(errSyntax, "unterminated array")
			return value{}
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			v.items = keep(p.pooled, &p.itemArena, p.itemStack[base:])
			return v
		default:
			p.fail(errSyntax, "expected ',' or ']' in array")
			return value{}
		}
	}
}

func (p *parser) parseObject(depth int) value {
	if !p.enter(depth) {
		return value{}
	}
	p.pos++ // '{'
	v := value{kind: kindObject}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return v
	}
	base := len(p.memberStack)
	defer func() { p.memberStack = p.memberStack[:base] }()
	for {
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			p.fail(errSyntax, "expected a string object key")
			return value{}
		}
		key, ok := p.parseKey()
		if !ok {
			return value{}
		}
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			p.fail(errSyntax, "expected ':' after object key")
			return value{}
		}
		p.pos++
		p.skipSpace()
		p.path = append(p.path, pathSeg{key: key, isKey: true})
		val := p.parseValue(depth)
		p.path = p.path[:len(p.path)-1]
		if p.err != nil {
			return value{}
		}
		p.memberStack = append(p.memberStack, member{key: key, val: val})
		p.skipSpace()
		if p.pos >= len(p.data) {
			p.fail(errSyntax, "unterminated object")
			return value{}
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			v.members = keep(p.pooled, &p.memberArena, p.memberStack[base:])
			slices.SortStableFunc(v.members, func(a, b member) int { return strings.Compare(a.key, b.key) })
			for i := 1; i < len(v.members); i++ {
				if v.members[i].key == v.members[i-1].key {
					p.path = append(p.path, pathSeg{key: v.members[i].key, isKey: true})
					p.fail(errDuplicate, "duplicate object key")
					return value{}
				}
			}
			return v
		default:
			p.fail(errSyntax, "expected ',' or '}' in object")
			return value{}
		}
	}
}

// parseKey parses an object key, returning the schema's own string when it
// names the key.
func (p *parser) parseKey() (string, bool) {
	if p.keys != nil {
		if end := bytes.IndexByte(p.data[p.pos+1:], '"'); end >= 0 {
			raw := p.data[p.pos+1 : p.pos+1+end]
			if k, ok := p.keys[string(raw)]; ok && plainKey(raw) {
				p.pos += end + 2
				return k, true
			}
		}
	}
	return p.parseString()
}

// plainKey reports whether raw holds no escape and no control byte, so it
// is the key's text exactly.
func plainKey(raw []byte) bool {
	for _, c := range raw {
		if c == '\\' || c < 0x20 {
			return false
		}
	}
	return true
}

// parseString parses a JSON string starting at the opening quote.
func (p *parser) parseString() (string, bool) {
	p.pos++ // opening quote
	start := p.pos
	// Fast path: no escapes.
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		if c == '"' {
			s := string(p.data[start:p.pos])
			p.pos++
			return s, true
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			p.fail(errSyntax, "control character in string")
			return "", false
		}
		p.pos++
	}
	var b strings.Builder
	b.Write(p.data[start:p.pos])
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			return b.String(), true
		case c < 0x20:
			p.fail(errSyntax, "control character in string")
			return "", false
		case c != '\\':
			b.WriteByte(c)
			p.pos++
			continue
		}
		// Escape sequence.
		if p.pos+1 >= len(p.data) {
			break
		}
		e := p.data[p.pos+1]
		p.pos += 2
		switch e {
		case '"', '\\', '/':
			b.WriteByte(e)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r, ok := p.hex4()
			if !ok {
				return "", false
			}
			if utf16.IsSurrogate(r) {
				if r >= 0xDC00 || p.pos+1 >= len(p.data) || p.data[p.pos] != '\\' || p.data[p.pos+1] != 'u' {
					p.fail(errSyntax, "unpaired surrogate in string escape")
					return "", false
				}
				p.pos += 2
				r2, ok := p.hex4()
				if !ok {
					return "", false
				}
				if r2 < 0xDC00 || r2 > 0xDFFF {
					p.fail(errSyntax, "unpaired surrogate in string escape")
					return "", false
				}
				r = utf16.DecodeRune(r, r2)
			}
			b.WriteRune(r)
		default:
			p.pos -= 2
			p.fail(errSyntax, "invalid escape in string")
			return "", false
		}
	}
	p.fail(errSyntax, "unterminated string")
	return "", false
}

func (p *parser) hex4() (rune, bool) {
	if p.pos+4 > len(p.data) {
		p.fail(errSyntax, "short \\u escape")
		return 0, false
	}
	var r rune
	for _, c := range p.data[p.pos : p.pos+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			p.fail(errSyntax, "invalid \\u escape")
			return 0, false
		}
	}
	p.pos += 4
	return r, true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// parseNumber parses an RFC 8259 number into an exact decimal.
func (p *parser) parseNumber() value {
	start := p.pos
	d := p.data
	i := p.pos
	neg := false
	if d[i] == '-' {
		neg = true
		i++
	}
	intStart := i
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	default:
		p.pos = i
		p.fail(errSyntax, "invalid number")
		return value{}
	}
	intEnd := i
	fracStart, fracEnd := i, i
	if i < len(d) && d[i] == '.' {
		i++
		fracStart = i
		for i < len(d) && isDigit(d[i]) {
			i++
		}
		fracEnd = i
		if fracEnd == fracStart {
			p.pos = i
			p.fail(errSyntax, "invalid number: no digits after '.'")
			return value{}
		}
	}
	var exp int64
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		expNeg := false
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			expNeg = d[i] == '-'
			i++
		}
		es := i
		for i < len(d) && isDigit(d[i]) {
			i++
		}
		if i == es {
			p.pos = i
			p.fail(errSyntax, "invalid number: no digits in exponent")
			return value{}
		}
		digits := strings.TrimLeft(string(d[es:i]), "0")
		if len(digits) > maxExponentDigits {
			p.pos = start
			p.fail(errExponent, "number exponent has more than "+strconv.Itoa(maxExponentDigits)+" significant digits")
			return value{}
		}
		if digits != "" {
			exp, _ = strconv.ParseInt(digits, 10, 64)
		}
		if expNeg {
			exp = -exp
		}
	}
	p.pos = i
	lit := string(d[start:i])
	return value{kind: kindNumber, str: lit, num: newDecimal(neg, string(d[intStart:intEnd]), string(d[fracStart:fracEnd]), exp)}
}

// pointer renders path segments as an RFC 6901 JSON pointer.
func pointer(path []pathSeg) string {
	if len(path) == 0 {
		return ""
	}
	var b strings.Builder
	for _, s := range path {
		b.WriteByte('/')
		if s.isKey {
			writePointerToken(&b, s.key)
		} else {
			b.WriteString(strconv.Itoa(s.index))
		}
	}
	return b.String()
}

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

func writePointerToken(b *strings.Builder, tok string) {
	if strings.ContainsAny(tok, "~/") {
		b.WriteString(pointerEscaper.Replace(tok))
		return
	}
	b.WriteString(tok)
}

// appendCanonical appends the canonical serialization of v: object keys in
// byte order, no insignificant whitespace, numbers as written, and strings
// in jsonx's EscapeShort. It is jsonx.Canonical of the parsed text
// (FuzzCanonicalIsJSONXCanonical), written from the parsed document because
// decoding the text a second time made a compile 3.4x slower.
func appendCanonical(dst []byte, v *value) []byte {
	switch v.kind {
	case kindNull:
		return append(dst, "null"...)
	case kindBool:
		if v.b {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	case kindNumber:
		return append(dst, v.str...)
	case kindString:
		return jsonx.AppendString(dst, v.str) // the parser admits only valid UTF-8
	case kindArray:
		dst = append(dst, '[')
		for i := range v.items {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendCanonical(dst, &v.items[i])
		}
		return append(dst, ']')
	default:
		dst = append(dst, '{')
		for i := range v.members {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = jsonx.AppendString(dst, v.members[i].key)
			dst = append(dst, ':')
			dst = appendCanonical(dst, &v.members[i].val)
		}
		return append(dst, '}')
	}
}

// canonicalSize is the byte length of v's serialization (canonical, except
// that strings are measured with encodedLen's conservative escaping), used to
// charge comparison payload without building the bytes.
func canonicalSize(v *value) int {
	switch v.kind {
	case kindNull:
		return 4
	case kindBool:
		if v.b {
			return 4
		}
		return 5
	case kindNumber:
		return len(v.str)
	case kindString:
		return encodedLen(v.str)
	case kindArray:
		n := 2 + max(len(v.items)-1, 0) // brackets and commas
		for i := range v.items {
			n += canonicalSize(&v.items[i])
		}
		return n
	default:
		n := 2 + max(len(v.members)-1, 0)
		for i := range v.members {
			n += encodedLen(v.members[i].key) + 1 + canonicalSize(&v.members[i].val)
		}
		return n
	}
}

// encodedLen is an upper bound on the JSON-encoded length of s (quotes
// included) under both the canonical escaping and encoding/json's, which
// additionally escapes <, >, & and U+2028/U+2029 as six-byte \u sequences.
func encodedLen(s string) int {
	n := 2
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t':
			n += 2
		case c < 0x20 || c == '<' || c == '>' || c == '&':
			n += 6
		case c == 0xE2 && i+2 < len(s) && s[i+1] == 0x80 && (s[i+2] == 0xA8 || s[i+2] == 0xA9):
			n += 6
			i += 2
		default:
			n++
		}
	}
	return n
}
