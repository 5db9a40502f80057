package schema

import (
	"errors"
	"strconv"
)

// Kinds of compile error, for use with errors.Is.
var (
	// ErrInvalid means the schema is not well-formed: not JSON, a duplicate
	// key, or a keyword whose value has the wrong shape.
	ErrInvalid = errors.New("invalid schema")
	// ErrUnsupported means the schema uses something outside the bounded
	// subset: an unknown or rejected keyword, a non-local or percent-encoded
	// $ref, a $ref cycle, or a dialect other than Draft 2020-12.
	ErrUnsupported = errors.New("unsupported schema feature")
	// ErrBound means the schema exceeds an admission bound: bytes, JSON
	// values, nesting depth or expanded visits.
	ErrBound = errors.New("schema exceeds a bound")
)

// CompileError explains why Compile rejected a schema.
type CompileError struct {
	// Kind is ErrInvalid, ErrUnsupported or ErrBound.
	Kind error
	// Path is the JSON pointer of the schema object holding the offending
	// keyword ("" for the root).
	Path string
	// Keyword names the offending keyword, or is empty when the problem is
	// the document as a whole (size, syntax).
	Keyword string
	// Reason says what is wrong and what to change.
	Reason string
}

// Error renders the kind, location and reason.
func (e *CompileError) Error() string {
	msg := "schema: " + e.Kind.Error()
	if e.Keyword != "" {
		msg += ": keyword " + strconv.Quote(e.Keyword)
	}
	msg += " at " + strconv.Quote("#"+e.Path)
	return msg + ": " + e.Reason
}

// Unwrap returns the kind, so errors.Is(err, ErrUnsupported) works.
func (e *CompileError) Unwrap() error { return e.Kind }
