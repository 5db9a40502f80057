package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"unicode/utf8"
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
	return ResultRef("sha256:" + hex.EncodeToString(sum[:]))
}

// Canonical returns the canonical form of one JSON value: object keys sorted
// by their UTF-8 bytes, no insignificant whitespace, strings re-escaped
// minimally (only '"', '\\' and control characters), numbers kept exactly as
// written. Duplicate object keys and trailing data are errors, so two inputs
// with the same canonical form mean the same thing to every JSON reader.
func Canonical(data []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	out := make([]byte, 0, len(data))
	out, err := canonValue(dec, out)
	if err != nil {
		return nil, canonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, &InvalidError{Field: "result", Reason: "trailing data after the JSON value"}
	}
	return out, nil
}

func canonError(err error) error {
	var inv *InvalidError
	if errors.As(err, &inv) {
		return err
	}
	return &InvalidError{Field: "result", Reason: "not valid JSON: " + err.Error()}
}

func canonValue(dec *json.Decoder, out []byte) ([]byte, error) {
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return out, err
	}
	switch v := tok.(type) {
	case json.Delim:
		switch v {
		case '{':
			return canonObject(dec, out)
		case '[':
			out = append(out, '[')
			for i := 0; dec.More(); i++ {
				if i > 0 {
					out = append(out, ',')
				}
				if out, err = canonValue(dec, out); err != nil {
					return out, err
				}
			}
			if _, err := dec.Token(); err != nil {
				return out, err
			}
			return append(out, ']'), nil
		}
		return out, &InvalidError{Field: "result", Reason: "unexpected " + v.String()}
	case string:
		return appendString(out, v), nil
	case json.Number:
		return append(out, v...), nil
	case bool:
		if v {
			return append(out, "true"...), nil
		}
		return append(out, "false"...), nil
	case nil:
		return append(out, "null"...), nil
	}
	return out, &InvalidError{Field: "result", Reason: "unexpected token"}
}

func canonObject(dec *json.Decoder, out []byte) ([]byte, error) {
	type member struct {
		key   string
		value []byte
	}
	var members []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return out, err
		}
		key, _ := tok.(string)
		val, err := canonValue(dec, nil)
		if err != nil {
			return out, err
		}
		members = append(members, member{key, val})
	}
	if _, err := dec.Token(); err != nil {
		return out, err
	}
	slices.SortFunc(members, func(a, b member) int { return strings.Compare(a.key, b.key) })
	out = append(out, '{')
	for i, m := range members {
		if i > 0 {
			if members[i-1].key == m.key {
				return out, &InvalidError{Field: "result", Reason: "duplicate object key " + string(appendString(nil, m.key))}
			}
			out = append(out, ',')
		}
		out = appendString(out, m.key)
		out = append(out, ':')
		out = append(out, m.value...)
	}
	return append(out, '}'), nil
}

func appendString(out []byte, s string) []byte {
	const hexdigits = "0123456789abcdef"
	out = append(out, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				out = append(out, "\ufffd"...)
			} else {
				out = append(out, s[i:i+size]...)
			}
			i += size
			continue
		}
		switch c {
		case '"', '\\':
			out = append(out, '\\', c)
		case '\n':
			out = append(out, '\\', 'n')
		case '\r':
			out = append(out, '\\', 'r')
		case '\t':
			out = append(out, '\\', 't')
		case '\b':
			out = append(out, '\\', 'b')
		case '\f':
			out = append(out, '\\', 'f')
		default:
			if c < 0x20 {
				out = append(out, '\\', 'u', '0', '0', hexdigits[c>>4], hexdigits[c&0xf])
			} else {
				out = append(out, c)
			}
		}
		i++
	}
	return append(out, '"')
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
