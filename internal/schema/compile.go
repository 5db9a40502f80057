package schema

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Schema is a compiled schema of the bounded subset. It is immutable and
// safe for concurrent use.
type Schema struct {
	raw       []byte
	canonical []byte
	digest    string
	root      *node
	visits    int
	cost      uint64 // expanded visits + comparison payload bytes
	lim       Limits
	// keys holds every property name the schema mentions, for the parser
	// to intern; scratch pools what validations reuse (a pointer, so
	// WithLimits copies share it).
	keys    map[string]string
	scratch *sync.Pool
}

// node is one compiled subschema.
type node struct {
	path    string // JSON pointer of this subschema in the document
	boolean bool   // a boolean schema: allow is its value
	allow   bool

	types    typeSet // 0 when "type" is absent
	constVal *value
	enum     []value
	hasEnum  bool

	minimum, maximum, exclMin, exclMax, multipleOf *decimal

	minLength, maxLength uint64 // maxLength is math.MaxUint64 when absent
	minItems, maxItems   uint64
	minProps, maxProps   uint64

	properties        []namedNode // sorted by name
	required          []string
	additional        *node
	propertyNames     *node
	dependentRequired []dependency // sorted by name
	dependentSchemas  []namedNode  // sorted by name

	prefixItems []*node
	items       *node

	allOf, anyOf, oneOf  []*node
	not, ifS, thenS, els *node

	refText string
	ref     *node

	defs []namedNode // not applied; kept so cycles in unused $defs are found

	payload uint64 // comparison payload bytes charged per application
}

type namedNode struct {
	name string
	node *node
}

type dependency struct {
	name     string
	required []string
}

// Compile parses raw as a schema of the bounded Draft 2020-12 subset and
// checks it against lim (non-positive fields take DefaultLimits). Every
// keyword is checked against the whitelist on the raw JSON; an error is a
// *CompileError whose Kind is ErrInvalid, ErrUnsupported or ErrBound.
func Compile(raw []byte, lim Limits) (*Schema, error) {
	lim = lim.withDefaults()
	doc, canonical, err := parseSchemaDoc(raw, lim)
	if err != nil {
		return nil, err
	}
	return compileDoc(raw, &doc, canonical, lim)
}

// parseSchemaDoc applies the byte, depth and node bounds and returns the
// parsed document with its canonical serialization.
func parseSchemaDoc(raw []byte, lim Limits) (value, []byte, error) {
	if len(raw) > lim.MaxSchemaBytes {
		return value{}, nil, &CompileError{Kind: ErrBound,
			Reason: "schema is " + strconv.Itoa(len(raw)) + " bytes; the limit is " + strconv.Itoa(lim.MaxSchemaBytes)}
	}
	doc, perr := parseJSON(raw, lim.MaxDepth, lim.MaxNodes)
	if perr != nil {
		ce := &CompileError{Kind: ErrInvalid, Path: perr.path, Reason: "schema is not valid JSON: " + perr.Error()}
		switch perr.kind {
		case errDepth:
			ce.Kind, ce.Reason = ErrBound, "schema nests arrays and objects deeper than "+strconv.Itoa(lim.MaxDepth)
		case errNodes:
			ce.Kind, ce.Reason = ErrBound, "schema has more than "+strconv.Itoa(lim.MaxNodes)+" JSON values"
		case errDuplicate:
			ce.Reason = "schema repeats an object key; every key must be unique"
		case errExponent:
			ce.Reason = "schema has a number whose exponent is out of range"
		}
		return value{}, nil, ce
	}
	return doc, appendCanonical(make([]byte, 0, len(raw)), &doc), nil
}

func compileDoc(raw []byte, doc *value, canonical []byte, lim Limits) (*Schema, error) {
	c := &compiler{byPath: make(map[string]*node), keys: map[string]string{}}
	root, err := c.compile(doc, "", true)
	if err != nil {
		return nil, err
	}
	if err := c.resolveRefs(); err != nil {
		return nil, err
	}
	if err := c.checkCycles(); err != nil {
		return nil, err
	}
	visits, payload := c.expand(root, lim.MaxVisits)
	if visits > lim.MaxVisits {
		return nil, &CompileError{Kind: ErrBound, Keyword: "$ref",
			Reason: "schema expands to more than " + strconv.Itoa(lim.MaxVisits) + " subschema visits when every $ref is followed; share less or flatten the schema"}
	}
	sum := sha256.Sum256(canonical)
	return &Schema{
		raw:       slices.Clone(raw),
		canonical: canonical,
		digest:    "sha256:" + hex.EncodeToString(sum[:]),
		root:      root,
		visits:    visits,
		cost:      satAdd(uint64(visits), payload),
		lim:       lim,
		keys:      c.keys,
		scratch:   &sync.Pool{},
	}, nil
}

// Digest returns "sha256:" and the lowercase hex SHA-256 of the canonical
// serialization (sorted keys, no whitespace, numbers as written).
func (s *Schema) Digest() string { return s.digest }

// Raw returns a copy of the schema text given to Compile.
func (s *Schema) Raw() []byte { return slices.Clone(s.raw) }

// Canonical returns a copy of the canonical serialization that Digest hashes.
func (s *Schema) Canonical() []byte { return slices.Clone(s.canonical) }

// Limits returns the limits the schema validates instances with.
func (s *Schema) Limits() Limits { return s.lim }

// WithLimits returns a schema sharing s's compiled form that validates
// instances with the instance fields and MaxWork of lim (non-positive fields
// take DefaultLimits). Use it to spend what remains of a shared work budget.
func (s *Schema) WithLimits(lim Limits) *Schema {
	lim = lim.withDefaults()
	c := *s
	c.lim.MaxInstanceBytes = lim.MaxInstanceBytes
	c.lim.MaxInstanceDepth = lim.MaxInstanceDepth
	c.lim.MaxInstanceNodes = lim.MaxInstanceNodes
	c.lim.MaxWork = lim.MaxWork
	return &c
}

// Work returns the validation work charged for an instance of n bytes:
// (expanded visits + comparison payload bytes) × n, saturating.
func (s *Schema) Work(n int) uint64 {
	if n <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(s.cost, uint64(n))
	if hi != 0 {
		return math.MaxUint64
	}
	return lo
}

type compiler struct {
	keys   map[string]string // property names, see Schema.keys
	byPath map[string]*node
	refs   []*node
	memo   map[*node][2]uint64
}

func invalid(path, kw, reason string) *CompileError {
	return &CompileError{Kind: ErrInvalid, Path: path, Keyword: kw, Reason: reason}
}

func unsupported(path, kw, reason string) *CompileError {
	return &CompileError{Kind: ErrUnsupported, Path: path, Keyword: kw, Reason: reason}
}

// compile turns the schema value v at path into a node, checking every
// keyword. Members are visited in sorted key order, so the first error
// reported is deterministic.
func (c *compiler) compile(v *value, path string, root bool) (*node, *CompileError) {
	n := &node{path: path, maxLength: math.MaxUint64, maxItems: math.MaxUint64, maxProps: math.MaxUint64}
	c.byPath[path] = n
	switch v.kind {
	case kindBool:
		n.boolean, n.allow = true, v.b
		return n, nil
	case kindObject:
	default:
		return nil, invalid(path, "", "a schema must be an object or a boolean")
	}
	for i := range v.members {
		kw, kv := v.members[i].key, &v.members[i].val
		switch classOf(kw) {
		case 0:
			return nil, unsupported(path, kw, "unknown keyword; the subset has no such keyword (put notes in \"description\" or \"$comment\")")
		case classRejected:
			return nil, unsupported(path, kw, rejectReason(kw))
		case classAnnotation:
			if err := checkAnnotation(path, kw, kv, root); err != nil {
				return nil, err
			}
			continue
		}
		if err := c.keyword(n, path, kw, kv); err != nil {
			return nil, err
		}
	}
	if n.exclMin != nil || n.minimum != nil || n.maximum != nil || n.exclMax != nil || n.multipleOf != nil {
		for _, d := range []*decimal{n.minimum, n.maximum, n.exclMin, n.exclMax, n.multipleOf} {
			if d != nil {
				n.payload += uint64(len(d.digits)) + 1
			}
		}
	}
	return n, nil
}

func checkAnnotation(path, kw string, v *value, root bool) *CompileError {
	switch kw {
	case "$schema":
		if !root {
			return unsupported(path, kw, "\"$schema\" is only allowed at the schema root")
		}
		if v.kind != kindString {
			return invalid(path, kw, "\"$schema\" must be a string")
		}
		if v.str != draft202012 && v.str != draft202012+"#" {
			return unsupported(path, kw, "only Draft 2020-12 ("+draft202012+") is supported; remove \"$schema\" or set it to that URI")
		}
	case "$comment", "title", "description", "format":
		if v.kind != kindString {
			return invalid(path, kw, strconv.Quote(kw)+" must be a string")
		}
	case "readOnly", "writeOnly", "deprecated":
		if v.kind != kindBool {
			return invalid(path, kw, strconv.Quote(kw)+" must be a boolean")
		}
	case "examples":
		if v.kind != kindArray {
			return invalid(path, kw, "\"examples\" must be an array")
		}
	}
	return nil // default: any value
}

func child(path, kw string) string { return path + "/" + escapeToken(kw) }

func escapeToken(s string) string {
	if strings.ContainsAny(s, "~/") {
		return pointerEscaper.Replace(s)
	}
	return s
}

func (c *compiler) keyword(n *node, path, kw string, v *value) *CompileError {
	switch kw {
	case "type":
		return compileType(n, path, v)
	case "const":
		n.constVal = v
		n.payload += uint64(canonicalSize(v))
	case "enum":
		if v.kind != kindArray {
			return invalid(path, kw, "\"enum\" must be an array")
		}
		n.enum, n.hasEnum = v.items, true
		n.payload += uint64(canonicalSize(v))
	case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf":
		if v.kind != kindNumber {
			return invalid(path, kw, strconv.Quote(kw)+" must be a number")
		}
		d := v.num
		switch kw {
		case "minimum":
			n.minimum = &d
		case "maximum":
			n.maximum = &d
		case "exclusiveMinimum":
			n.exclMin = &d
		case "exclusiveMaximum":
			n.exclMax = &d
		default:
			if d.sign() <= 0 {
				return invalid(path, kw, "\"multipleOf\" must be greater than 0")
			}
			if len(d.digits) > maxMultipleOfDigits {
				return unsupported(path, kw, "\"multipleOf\" may have at most "+strconv.Itoa(maxMultipleOfDigits)+" significant digits")
			}
			n.multipleOf = &d
		}
	case "minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties":
		if v.kind != kindNumber {
			return invalid(path, kw, strconv.Quote(kw)+" must be a non-negative integer")
		}
		u, ok := v.num.toUint64(math.MaxUint64)
		if !ok {
			return invalid(path, kw, strconv.Quote(kw)+" must be a non-negative integer")
		}
		*n.countField(kw) = u
	case "properties", "$defs", "dependentSchemas":
		if v.kind != kindObject {
			return invalid(path, kw, strconv.Quote(kw)+" must be an object of schemas")
		}
		kp := child(path, kw)
		named := make([]namedNode, 0, len(v.members))
		for i := range v.members {
			m := &v.members[i]
			sub, err := c.compile(&m.val, child(kp, m.key), false)
			if err != nil {
				return err
			}
			named = append(named, namedNode{name: m.key, node: sub})
			if kw == "properties" {
				c.keys[m.key] = m.key
			}
		}
		switch kw {
		case "properties":
			n.properties = named
		case "$defs":
			n.defs = named
		default:
			n.dependentSchemas = named
		}
	case "required":
		names, err := stringSet(path, kw, v)
		if err != nil {
			return err
		}
		n.required = names
		for _, s := range names {
			c.keys[s] = s
		}
		for _, s := range names {
			n.payload += uint64(len(s)) + 1
		}
	case "dependentRequired":
		if v.kind != kindObject {
			return invalid(path, kw, "\"dependentRequired\" must be an object of string arrays")
		}
		for i := range v.members {
			m := &v.members[i]
			names, err := stringSet(path, kw, &m.val)
			if err != nil {
				return err
			}
			n.dependentRequired = append(n.dependentRequired, dependency{name: m.key, required: names})
			n.payload += uint64(len(m.key)) + 1
			for _, s := range names {
				n.payload += uint64(len(s)) + 1
			}
		}
	case "additionalProperties", "propertyNames", "items", "not", "if", "then", "else":
		if kw == "items" && v.kind == kindArray {
			return unsupported(path, kw, "array-form \"items\" is Draft 7; use \"prefixItems\" for tuples")
		}
		sub, err := c.compile(v, child(path, kw), false)
		if err != nil {
			return err
		}
		*n.schemaField(kw) = sub
	case "prefixItems", "allOf", "anyOf", "oneOf":
		if v.kind != kindArray || len(v.items) == 0 {
			return invalid(path, kw, strconv.Quote(kw)+" must be a non-empty array of schemas")
		}
		kp := child(path, kw)
		subs := make([]*node, 0, len(v.items))
		for i := range v.items {
			sub, err := c.compile(&v.items[i], kp+"/"+strconv.Itoa(i), false)
			if err != nil {
				return err
			}
			subs = append(subs, sub)
		}
		*n.listField(kw) = subs
	case "$ref":
		if v.kind != kindString {
			return invalid(path, kw, "\"$ref\" must be a string")
		}
		n.refText = v.str
		c.refs = append(c.refs, n)
	}
	return nil
}

func compileType(n *node, path string, v *value) *CompileError {
	switch v.kind {
	case kindString:
		b := typeBit(v.str)
		if b == 0 {
			return invalid(path, "type", "unknown type "+strconv.Quote(v.str)+"; use null, boolean, object, array, number, string or integer")
		}
		n.types = b
	case kindArray:
		if len(v.items) == 0 {
			return invalid(path, "type", "\"type\" must not be an empty array")
		}
		for i := range v.items {
			it := &v.items[i]
			if it.kind != kindString || typeBit(it.str) == 0 {
				return invalid(path, "type", "\"type\" array entries must be type names: null, boolean, object, array, number, string or integer")
			}
			b := typeBit(it.str)
			if n.types&b != 0 {
				return invalid(path, "type", "\"type\" repeats "+strconv.Quote(it.str))
			}
			n.types |= b
		}
	default:
		return invalid(path, "type", "\"type\" must be a type name or an array of type names")
	}
	return nil
}

// stringSet checks that v is an array of unique strings.
func stringSet(path, kw string, v *value) ([]string, *CompileError) {
	if v.kind != kindArray {
		return nil, invalid(path, kw, strconv.Quote(kw)+" must be an array of unique strings")
	}
	out := make([]string, 0, len(v.items))
	seen := make(map[string]bool, len(v.items))
	for i := range v.items {
		it := &v.items[i]
		if it.kind != kindString {
			return nil, invalid(path, kw, strconv.Quote(kw)+" must be an array of unique strings")
		}
		if seen[it.str] {
			return nil, invalid(path, kw, strconv.Quote(kw)+" repeats a name; list each property once")
		}
		seen[it.str] = true
		out = append(out, it.str)
	}
	return out, nil
}

func satAdd(a, b uint64) uint64 {
	if s := a + b; s >= a {
		return s
	}
	return math.MaxUint64
}

func (n *node) countField(kw string) *uint64 {
	switch kw {
	case "minLength":
		return &n.minLength
	case "maxLength":
		return &n.maxLength
	case "minItems":
		return &n.minItems
	case "maxItems":
		return &n.maxItems
	case "minProperties":
		return &n.minProps
	default:
		return &n.maxProps
	}
}

func (n *node) schemaField(kw string) **node {
	switch kw {
	case "additionalProperties":
		return &n.additional
	case "propertyNames":
		return &n.propertyNames
	case "items":
		return &n.items
	case "not":
		return &n.not
	case "if":
		return &n.ifS
	case "then":
		return &n.thenS
	default:
		return &n.els
	}
}

func (n *node) listField(kw string) *[]*node {
	switch kw {
	case "prefixItems":
		return &n.prefixItems
	case "allOf":
		return &n.allOf
	case "anyOf":
		return &n.anyOf
	default:
		return &n.oneOf
	}
}
