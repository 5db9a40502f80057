package schema

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Code classifies a validation diagnostic. The values are the reference's
// output-validation-v1 codes.
type Code string

// Diagnostic codes.
const (
	// CodeMalformedJSON: the instance is not JSON (including invalid UTF-8
	// and unpaired surrogate escapes).
	CodeMalformedJSON Code = "malformed_json"
	// CodeJSONBytes: the instance is larger than MaxInstanceBytes.
	CodeJSONBytes Code = "json_bytes"
	// CodeValidationWork: validating would charge more than MaxWork.
	CodeValidationWork Code = "validation_work"
	// CodeJSONStructure: the instance nests deeper than MaxInstanceDepth,
	// has more than MaxInstanceNodes values, repeats an object key, or has
	// a number exponent of more than nine digits.
	CodeJSONStructure Code = "json_structure"
	// CodeSchemaViolation: the instance does not satisfy the schema.
	CodeSchemaViolation Code = "schema_violation"
)

// Diagnostic bounds from the reference's output-validation-v1 record.
const (
	// MaxDiagnostics is the most diagnostics a Result holds.
	MaxDiagnostics = 8
	// MaxDiagnosticPathBytes bounds each path, measured JSON-encoded
	// without quotes (so it also bounds the raw bytes).
	MaxDiagnosticPathBytes = 256
	// MaxDiagnosticsBytes bounds the JSON encoding of the whole list.
	MaxDiagnosticsBytes = 2048
)

// Diagnostic locates one validation failure. It never holds instance
// values: InstancePath is a JSON pointer into the instance (its keys and
// indexes) and SchemaPath a JSON pointer to the failing keyword in the schema
// document (for "required", to the missing name's entry).
type Diagnostic struct {
	Code         Code   `json:"code"`
	InstancePath string `json:"instance_path"`
	SchemaPath   string `json:"schema_path"`
}

// Result is the outcome of one validation. Valid is true exactly when
// Diagnostics is empty. Work is the work charged, zero when validation did
// not run (the instance was too large, malformed, or over the work bound).
type Result struct {
	Valid       bool
	Diagnostics []Diagnostic
	Work        uint64
}

// Validate checks instance, a JSON text, against the schema.
//
// The checks run in order: size (json_bytes), syntax (malformed_json),
// structure (json_structure: depth, value count, duplicate keys), work
// (validation_work: Work(len(instance)) against MaxWork), then the schema
// itself (schema_violation). Object keys must be unique: a repeated key is a
// json_structure failure, because parsers disagree on which copy wins.
// Numbers compare exactly as decimals; nothing is rounded through float64.
func (s *Schema) Validate(instance []byte) Result {
	lim := s.lim
	if len(instance) > lim.MaxInstanceBytes {
		return failed(CodeJSONBytes, "")
	}
	sc, _ := s.scratch.Get().(*scratch)
	if sc == nil {
		sc = &scratch{}
	}
	defer s.putScratch(sc)
	sc.p.reset(instance, lim.MaxInstanceDepth, lim.MaxInstanceNodes)
	sc.p.keys = s.keys
	v, perr := sc.p.parse()
	if perr != nil {
		if perr.kind == errSyntax {
			return failed(CodeMalformedJSON, "")
		}
		return failed(CodeJSONStructure, perr.path)
	}
	work := s.Work(len(instance))
	if work > lim.MaxWork {
		return failed(CodeValidationWork, "")
	}
	ev := evaluator{path: sc.path[:0]}
	ok := ev.eval(s.root, &v, true)
	sc.path = ev.path
	return Result{Valid: ok, Diagnostics: ev.diags, Work: work}
}

// scratch is what one validation reuses from the last: the parser with its
// stacks and arenas, and the evaluator's path.
type scratch struct {
	p    parser
	path []pathSeg
}

// maxScratchValues bounds what a pooled scratch keeps: one huge instance
// must not pin its arenas for the life of the schema.
const maxScratchValues = 4096

func (s *Schema) putScratch(sc *scratch) {
	if cap(sc.p.itemArena)+cap(sc.p.memberArena)+cap(sc.p.itemStack)+cap(sc.p.memberStack) > maxScratchValues {
		return
	}
	sc.p.data = nil
	s.scratch.Put(sc)
}

// ValidateValue checks an already-decoded value (as produced by
// encoding/json: maps, slices, strings, float64 or json.Number, bools, nil)
// by encoding it and calling Validate. A value that does not encode is
// malformed_json.
func (s *Schema) ValidateValue(v any) Result {
	b, err := json.Marshal(v)
	if err != nil {
		return failed(CodeMalformedJSON, "")
	}
	return s.Validate(b)
}

func failed(code Code, instancePath string) Result {
	d := Diagnostic{Code: code, InstancePath: truncatePath(instancePath)}
	return Result{Diagnostics: []Diagnostic{d}}
}

// truncatePath cuts p at a character boundary so that its JSON encoding,
// quotes excluded, is at most MaxDiagnosticPathBytes.
func truncatePath(p string) string {
	if encodedLen(p)-2 <= MaxDiagnosticPathBytes {
		return p
	}
	n := 0
	for i, r := range p {
		w := encodedLen(string(r)) - 2
		if n+w > MaxDiagnosticPathBytes {
			return p[:i]
		}
		n += w
	}
	return p
}

// evaluator holds the state of one validation.
type evaluator struct {
	diags []Diagnostic
	bytes int // JSON size of diags so far
	full  bool
	path  []pathSeg
	work  uint64 // applications plus payload actually charged; tests compare it with Work
	// key holds the object key that propertyNames is applied to. One
	// suffices: a string instance never reaches another propertyNames.
	key value
}

func (e *evaluator) add(schemaPath string) {
	if e.full {
		return
	}
	d := Diagnostic{Code: CodeSchemaViolation, InstancePath: truncatePath(pointer(e.path)), SchemaPath: truncatePath(schemaPath)}
	size := len(`{"code":,"instance_path":,"schema_path":}`) + encodedLen(string(d.Code)) +
		encodedLen(d.InstancePath) + encodedLen(d.SchemaPath)
	if len(e.diags) == 0 {
		size += 2 // brackets
	} else {
		size++ // comma
	}
	if e.bytes+size > MaxDiagnosticsBytes {
		e.full = true
		return
	}
	e.diags = append(e.diags, d)
	e.bytes += size
	if len(e.diags) == MaxDiagnostics {
		e.full = true
	}
}

// eval applies n to v. With report set it records diagnostics and keeps
// going until the list is full; without, it stops at the first failure.
func (e *evaluator) eval(n *node, v *value, report bool) bool {
	e.work += 1 + n.payload
	if n.boolean {
		if !n.allow && report {
			e.add(n.path)
		}
		return n.allow
	}
	f := frame{e: e, n: n, report: report, ok: true}
	if n.ref != nil && f.sub(n.ref, v) {
		return false
	}
	if n.types != 0 && !n.types.has(v) && f.fail("type") {
		return false
	}
	if n.constVal != nil && !equal(n.constVal, v) && f.fail("const") {
		return false
	}
	if n.hasEnum && !inEnum(n.enum, v) && f.fail("enum") {
		return false
	}
	switch v.kind {
	case kindNumber:
		if !f.number(v) {
			return false
		}
	case kindString:
		if n.minLength > 0 || n.maxLength != maxCount {
			l := uint64(utf8.RuneCountInString(v.str))
			if l < n.minLength && f.fail("minLength") || l > n.maxLength && f.fail("maxLength") {
				return false
			}
		}
	case kindObject:
		if !f.object(v) {
			return false
		}
	case kindArray:
		cnt := uint64(len(v.items))
		if cnt < n.minItems && f.fail("minItems") || cnt > n.maxItems && f.fail("maxItems") {
			return false
		}
		for i := range v.items {
			var s *node
			if i < len(n.prefixItems) {
				s = n.prefixItems[i]
			} else {
				s = n.items
			}
			if s == nil {
				continue
			}
			e.path = append(e.path, pathSeg{index: i})
			stop := f.sub(s, &v.items[i])
			e.path = e.path[:len(e.path)-1]
			if stop {
				return false
			}
		}
	}
	for _, s := range n.allOf {
		if f.sub(s, v) {
			return false
		}
	}
	if len(n.anyOf) > 0 && !slices.ContainsFunc(n.anyOf, func(s *node) bool { return e.eval(s, v, false) }) && f.fail("anyOf") {
		return false
	}
	if len(n.oneOf) > 0 {
		matched := 0
		for _, s := range n.oneOf {
			if e.eval(s, v, false) {
				matched++
				if matched > 1 {
					break
				}
			}
		}
		if matched != 1 && f.fail("oneOf") {
			return false
		}
	}
	if n.not != nil && e.eval(n.not, v, false) && f.fail("not") {
		return false
	}
	if n.ifS != nil {
		branch := n.els
		if e.eval(n.ifS, v, false) {
			branch = n.thenS
		}
		if branch != nil && f.sub(branch, v) {
			return false
		}
	}
	return f.ok
}

// frame is the state of applying one node: it records failures and says
// when to stop (at the first failure when not reporting, or when the
// diagnostic list is full).
type frame struct {
	e      *evaluator
	n      *node
	report bool
	ok     bool
}

// fail records a failing keyword and reports whether to stop.
func (f *frame) fail(kw string) bool {
	f.ok = false
	if f.report {
		f.e.add(f.n.path + "/" + kw)
	}
	return !f.report || f.e.full
}

// sub applies s to sv and reports whether to stop.
func (f *frame) sub(s *node, sv *value) bool {
	if f.e.eval(s, sv, f.report) {
		return false
	}
	f.ok = false
	return !f.report || f.e.full
}

const maxCount = ^uint64(0)

func (f *frame) number(v *value) bool {
	n, x := f.n, v.num
	if n.minimum != nil && x.cmp(*n.minimum) < 0 && f.fail("minimum") {
		return false
	}
	if n.maximum != nil && x.cmp(*n.maximum) > 0 && f.fail("maximum") {
		return false
	}
	if n.exclMin != nil && x.cmp(*n.exclMin) <= 0 && f.fail("exclusiveMinimum") {
		return false
	}
	if n.exclMax != nil && x.cmp(*n.exclMax) >= 0 && f.fail("exclusiveMaximum") {
		return false
	}
	if n.multipleOf != nil && !multipleOf(x, *n.multipleOf) && f.fail("multipleOf") {
		return false
	}
	return true
}

func (f *frame) object(v *value) bool {
	n, e := f.n, f.e
	cnt := uint64(len(v.members))
	if cnt < n.minProps && f.fail("minProperties") || cnt > n.maxProps && f.fail("maxProperties") {
		return false
	}
	for i, name := range n.required {
		if _, ok := v.lookup(name); !ok && f.fail("required/"+strconv.Itoa(i)) {
			return false
		}
	}
	for _, dep := range n.dependentRequired {
		if _, ok := v.lookup(dep.name); !ok {
			continue
		}
		for i, name := range dep.required {
			if _, ok := v.lookup(name); !ok && f.fail("dependentRequired/"+escapeToken(dep.name)+"/"+strconv.Itoa(i)) {
				return false
			}
		}
	}
	for i := range v.members {
		m := &v.members[i]
		s := n.additional
		if j, found := slices.BinarySearchFunc(n.properties, m.key, func(p namedNode, k string) int {
			return strings.Compare(p.name, k)
		}); found {
			s = n.properties[j].node
		}
		e.path = append(e.path, pathSeg{key: m.key, isKey: true})
		stop := false
		if s != nil {
			stop = f.sub(s, &m.val)
		}
		if !stop && n.propertyNames != nil {
			e.key = value{kind: kindString, str: m.key}
			stop = !e.eval(n.propertyNames, &e.key, false) && f.fail("propertyNames")
		}
		e.path = e.path[:len(e.path)-1]
		if stop {
			return false
		}
	}
	for _, ds := range n.dependentSchemas {
		if _, ok := v.lookup(ds.name); ok && f.sub(ds.node, v) {
			return false
		}
	}
	return true
}

func inEnum(enum []value, v *value) bool {
	for i := range enum {
		if equal(&enum[i], v) {
			return true
		}
	}
	return false
}

// equal is JSON equality: numbers compare as exact decimals, objects as
// unordered key sets (members are sorted), arrays in order.
func equal(a, b *value) bool {
	if a.kind != b.kind {
		return false
	}
	switch a.kind {
	case kindNull:
		return true
	case kindBool:
		return a.b == b.b
	case kindNumber:
		return a.num == b.num
	case kindString:
		return a.str == b.str
	case kindArray:
		if len(a.items) != len(b.items) {
			return false
		}
		for i := range a.items {
			if !equal(&a.items[i], &b.items[i]) {
				return false
			}
		}
		return true
	default:
		if len(a.members) != len(b.members) {
			return false
		}
		for i := range a.members {
			if a.members[i].key != b.members[i].key || !equal(&a.members[i].val, &b.members[i].val) {
				return false
			}
		}
		return true
	}
}
