package fstools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pabloagent/pablo/authority"
)

// Common holds the optional request fields every fs tool accepts.
type Common struct {
	// TimeoutMS, when positive, narrows the host's tool duration.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
	// MaxOutputBytes, when set (at least 1024), narrows the bound on the
	// serialized result.
	MaxOutputBytes int64 `json:"max_output_bytes,omitempty"`
}

// MinOutputBytes is the smallest max_output_bytes a call may ask for.
const MinOutputBytes = 1024

// maxJSONInt is the largest integer JSON carries exactly (2^53-1).
const maxJSONInt = 1<<53 - 1

func (c Common) validate(id authority.ID) error {
	if c.TimeoutMS < 0 {
		return &ArgumentError{Tool: id, Field: "timeout_ms", Reason: "must be a positive number of milliseconds"}
	}
	if c.MaxOutputBytes != 0 && c.MaxOutputBytes < MinOutputBytes {
		return &ArgumentError{Tool: id, Field: "max_output_bytes", Reason: "must be at least 1024"}
	}
	return nil
}

func durationMS(ms int64) time.Duration {
	if ms > int64(maxJSONInt) {
		ms = maxJSONInt
	}
	return time.Duration(ms) * time.Millisecond
}

// ReadArgs are fs.read's arguments.
type ReadArgs struct {
	// Path names a regular file. Required.
	Path string `json:"path"`
	// Offset is the byte offset of the page; it must be on a codepoint
	// boundary and at most the file size.
	Offset int64 `json:"offset,omitempty"`
	// MaxBytes bounds the page; 0 means DefaultReadBytes.
	MaxBytes int64 `json:"max_bytes,omitempty"`
	Common
}

// ListArgs are fs.list's arguments.
type ListArgs struct {
	// Path names a directory. Required.
	Path string `json:"path"`
	// Offset is the index of the first entry returned.
	Offset int64 `json:"offset,omitempty"`
	// MaxEntries bounds the page; 0 means DefaultListEntries.
	MaxEntries int64 `json:"max_entries,omitempty"`
	Common
}

// SearchArgs are fs.search's arguments.
type SearchArgs struct {
	// Path names the directory searched recursively. Required.
	Path string `json:"path"`
	// Query is the case-sensitive literal: nonempty, at most 4096 bytes,
	// no LF, CR or NUL. Required.
	Query string `json:"query"`
	// MaxMatches bounds the matches; 0 means DefaultMaxMatches.
	MaxMatches int64 `json:"max_matches,omitempty"`
	Common
}

// WriteArgs are fs.write's arguments.
type WriteArgs struct {
	// Path names the file to create or replace; its parent must exist.
	Path string `json:"path"`
	// Text is the complete new content.
	Text string `json:"text"`
	// ExpectedRevision is nil to create only, or the 64-hex lowercase
	// SHA-256 the current file must have to be replaced. In JSON the field
	// is required and null means create only.
	ExpectedRevision *string `json:"expected_revision"`
	Common
}

// EditArgs are fs.edit's arguments.
type EditArgs struct {
	// Path names an existing regular file.
	Path string `json:"path"`
	// ExpectedRevision is the revision the file must have. Required.
	ExpectedRevision string `json:"expected_revision"`
	// OldText must occur exactly once in the file. Nonempty.
	OldText string `json:"old_text"`
	// NewText replaces it.
	NewText string `json:"new_text"`
	Common
}

// The defaults of the reference.
const (
	DefaultReadBytes   = 65536
	DefaultListEntries = 1000
	DefaultMaxMatches  = 100
	MaxQueryBytes      = 4096
)

type field struct {
	name     string
	required bool
	nullable bool
	min      int64 // least value of an integer member
}

// isStringField reports whether a member is string-typed; every other member
// is an integer.
func isStringField(name string) bool {
	switch name {
	case "path", "query", "text", "expected_revision", "old_text", "new_text":
		return true
	}
	return false
}

func fieldsOf(id authority.ID) []field {
	var f []field
	switch id {
	case authority.FSRead:
		f = []field{{name: "path", required: true}, {name: "offset"}, {name: "max_bytes", min: 1}}
	case authority.FSList:
		f = []field{{name: "path", required: true}, {name: "offset"}, {name: "max_entries", min: 1}}
	case authority.FSSearch:
		f = []field{{name: "path", required: true}, {name: "query", required: true}, {name: "max_matches", min: 1}}
	case authority.FSWrite:
		f = []field{{name: "path", required: true}, {name: "text", required: true}, {name: "expected_revision", required: true, nullable: true}}
	case authority.FSEdit:
		f = []field{{name: "path", required: true}, {name: "expected_revision", required: true},
			{name: "old_text", required: true}, {name: "new_text", required: true}}
	}
	return append(f, field{name: "timeout_ms", min: 1}, field{name: "max_output_bytes", min: MinOutputBytes})
}

// decodeArgs decodes one JSON object into dst strictly: exactly one object,
// no unknown or repeated members, no null unless the field is nullable, every
// required member present, and every value of the declared type. Integer
// fields must be integers from their minimum to 2^53-1; as in JSON Schema,
// 1.0 and 1e2 are integers.
func decodeArgs(id authority.ID, raw json.RawMessage, dst any) error {
	bad := func(field, reason string) error { return &ArgumentError{Tool: id, Field: field, Reason: reason} }
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return bad("", "arguments must be a JSON object")
	}
	if !utf8.Valid(raw) {
		// encoding/json would replace invalid bytes with U+FFFD; the
		// contract's schema validator rejects them, and so do we.
		return bad("", "arguments are not valid UTF-8")
	}
	known := map[string]field{}
	for _, f := range fieldsOf(id) {
		known[f.name] = f
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil {
		return bad("", "arguments are not valid JSON")
	}
	type member struct {
		key   string
		value json.RawMessage
	}
	var members []member
	seen := map[string]bool{}
	rewrite := false // some integer is not a plain literal (1.0, 1e2)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return bad("", "arguments are not valid JSON")
		}
		key, _ := tok.(string)
		f, ok := known[key]
		if !ok {
			return bad(key, "unknown field; remove it")
		}
		if seen[key] {
			return bad(key, "field appears more than once")
		}
		seen[key] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return bad(key, "value is not valid JSON")
		}
		if string(v) == "null" && !f.nullable {
			return bad(key, "must not be null")
		}
		if !isStringField(key) && (v[0] == '-' || (v[0] >= '0' && v[0] <= '9')) {
			n, ok := jsonInteger(v)
			if !ok || n < f.min || n > maxJSONInt {
				return bad(key, fmt.Sprintf("must be an integer from %d to 2^53-1", f.min))
			}
			if plain := strconv.FormatInt(n, 10); plain != string(v) {
				v, rewrite = json.RawMessage(plain), true
			}
		}
		members = append(members, member{key, v})
	}
	if _, err := dec.Token(); err != nil {
		return bad("", "arguments are not valid JSON")
	}
	if _, err := dec.Token(); err != io.EOF {
		return bad("", "unexpected data after the arguments object")
	}
	for _, f := range fieldsOf(id) {
		if f.required && !seen[f.name] {
			return bad(f.name, "required field is missing")
		}
	}
	if rewrite {
		norm := []byte{'{'}
		for i, m := range members {
			if i > 0 {
				norm = append(norm, ',')
			}
			k, _ := json.Marshal(m.key)
			norm = append(append(append(norm, k...), ':'), m.value...)
		}
		raw = append(norm, '}')
	}
	strict := json.NewDecoder(bytes.NewReader(raw))
	strict.DisallowUnknownFields()
	if err := strict.Decode(dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return bad(te.Field, fmt.Sprintf("must be of JSON type %s, got %s", jsonType(te.Type.Kind().String()), te.Value))
		}
		return bad("", "arguments do not match the tool's schema")
	}
	return nil
}

// jsonInteger returns the value of a JSON number that is an integer (no
// nonzero fraction) of at most 16 digits, whatever its spelling ("5", "5.0",
// "5e0", "50e-1"). It never expands an exponent beyond that bound.
func jsonInteger(v json.RawMessage) (int64, bool) {
	s := string(v)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	mant, exp, hasExp := strings.Cut(strings.ToLower(s), "e")
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := strings.TrimLeft(intPart+frac, "0")
	if intPart == "" || !allDigits(intPart) || !allDigits(frac) {
		return 0, false
	}
	if digits == "" {
		return 0, true // zero, whatever the exponent
	}
	e := -len(frac)
	if hasExp {
		exp = strings.TrimPrefix(exp, "+")
		negExp := strings.HasPrefix(exp, "-")
		exp = strings.TrimLeft(strings.TrimPrefix(exp, "-"), "0")
		if !allDigits(exp) || len(exp) > 4 {
			return 0, false
		}
		x, _ := strconv.Atoi("0" + exp)
		if negExp {
			x = -x
		}
		e += x
	}
	trimmed := strings.TrimRight(digits, "0")
	e += len(digits) - len(trimmed)
	if e < 0 || len(trimmed)+e > 16 {
		return 0, false
	}
	n, err := strconv.ParseInt(trimmed+strings.Repeat("0", e), 10, 64)
	if err != nil {
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func jsonType(kind string) string {
	switch kind {
	case "string":
		return "string"
	case "int64", "int", "uint64":
		return "integer"
	case "ptr":
		return "string or null"
	}
	return kind
}
