package ledger

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"

	"github.com/pabloagent/pablo/internal/jsonx"
)

// ResultRef names an immutable result: "sha256:" and the lowercase hex SHA-256
// of its canonical JSON.
type ResultRef string

// Valid reports whether r has the form "sha256:" + 64 lowercase hex digits.
func (r ResultRef) Valid() bool {
	s, ok := strings.CutPrefix(string(r), "sha256:")
	if !ok || len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !('0' <= s[i] && s[i] <= '9' || 'a' <= s[i] && s[i] <= 'f') {
			return false
		}
	}
	return true
}

// RefOf returns the reference of data, which must already be canonical.
func RefOf(canonical []byte) ResultRef {
	sum := sha256.Sum256(canonical)
	var out [7 + 64]byte
	copy(out[:], "sha256:")
	hex.Encode(out[7:], sum[:])
	return ResultRef(out[:])
}

// Canonical returns the canonical form of one JSON value: object keys sorted
// by their UTF-8 bytes, no insignificant whitespace, strings re-escaped
// minimally (only '"', '\\' and control characters), numbers kept exactly as
// written. Duplicate object keys and trailing data are errors, so two inputs
// with the same canonical form mean the same thing to every JSON reader.
// It is jsonx.Canonical, with its errors as *InvalidError.
func Canonical(data []byte) ([]byte, error) {
	out, err := jsonx.Canonical(data)
	if err != nil {
		var e *jsonx.Error
		if errors.As(err, &e) {
			return nil, &InvalidError{Field: "result", Reason: e.Reason}
		}
		return nil, &InvalidError{Field: "result", Reason: err.Error()}
	}
	return out, nil
}

// canonicalOf marshals v and returns its canonical form. json.RawMessage and
// []byte are taken as JSON text.
func canonicalOf(v any) ([]byte, error) {
	var data []byte
	switch t := v.(type) {
	case json.RawMessage:
		data = t
	case []byte:
		data = t
	default:
		var err error
		if data, err = json.Marshal(v); err != nil {
			return nil, &InvalidError{Field: "result", Reason: "cannot marshal to JSON: " + err.Error()}
		}
	}
	return Canonical(data)
}
