package jsonx

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
)

// Error is why JSON text has no canonical form: it is not one JSON value,
// or an object repeats a key.
type Error struct {
	Reason string
}

func (e *Error) Error() string { return "jsonx: " + e.Reason }

// AppendCanonical appends the canonical form of v, a generic tree: nil,
// bool, string, int, int64, uint64, json.Number (written as it is),
// []any and map[string]any of the same. Strings and keys are escaped with
// esc. Any other type is a programming error and panics.
func AppendCanonical(out []byte, v any, esc Escaping) []byte {
	switch x := v.(type) {
	case nil:
		return append(out, "null"...)
	case bool:
		return strconv.AppendBool(out, x)
	case int64:
		return strconv.AppendInt(out, x, 10)
	case int:
		return strconv.AppendInt(out, int64(x), 10)
	case uint64:
		return strconv.AppendUint(out, x, 10)
	case json.Number:
		return append(out, x...)
	case string:
		return esc.Append(out, x)
	case []any:
		out = append(out, '[')
		for i, e := range x {
			if i > 0 {
				out = append(out, ',')
			}
			out = AppendCanonical(out, e, esc)
		}
		return append(out, ']')
	case map[string]any:
		out = append(out, '{')
		// Go orders strings by their bytes: UTF-8 byte order.
		for i, k := range slices.Sorted(maps.Keys(x)) {
			if i > 0 {
				out = append(out, ',')
			}
			out = esc.Append(out, k)
			out = append(out, ':')
			out = AppendCanonical(out, x[k], esc)
		}
		return append(out, '}')
	}
	panic(fmt.Sprintf("jsonx: AppendCanonical: unsupported type %T", v))
}

// Canonical returns the canonical form of one JSON value in [EscapeShort]:
// strings re-escaped, numbers kept exactly as written. Duplicate object
// keys and trailing data are errors (an *[Error]), so two inputs with the
// same canonical form mean the same thing to every JSON reader. Text that
// is already canonical is recognized without decoding it.
func Canonical(data []byte) ([]byte, error) {
	if isCanonical(data) {
		return bytes.Clone(data), nil
	}
	return canonicalSlow(data)
}

// canonicalSlow is the general path: decode every token into a tree, write
// the tree.
func canonicalSlow(data []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	root, err := decodeValue(dec)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			return nil, err
		}
		return nil, &Error{Reason: "not valid JSON: " + err.Error()}
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, &Error{Reason: "trailing data after the JSON value"}
	}
	return AppendCanonical(make([]byte, 0, len(data)), root, EscapeShort), nil
}

// decodeValue reads one value's tokens into the tree AppendCanonical
// writes, refusing a repeated key.
func decodeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	switch v := tok.(type) {
	case json.Delim:
		switch v {
		case '[':
			arr := []any{}
			for dec.More() {
				kid, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				arr = append(arr, kid)
			}
			_, err := dec.Token()
			return arr, err
		case '{':
			obj := map[string]any{}
			var dups []string
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key, _ := k.(string)
				kid, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				if _, dup := obj[key]; dup {
					dups = append(dups, key)
				}
				obj[key] = kid
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			if len(dups) > 0 {
				// The first repeated key in byte order, once the whole
				// object has been read.
				return nil, &Error{Reason: "duplicate object key " + string(AppendString(nil, slices.Min(dups)))}
			}
			return obj, nil
		}
		return nil, &Error{Reason: "unexpected " + v.String()}
	case string, json.Number, bool, nil:
		return v, nil
	}
	return nil, &Error{Reason: "unexpected token"}
}
