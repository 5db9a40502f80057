package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"github.com/pabloagent/pablo/internal/jsonx"
	"io"
	"slices"
	"strings"
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
// Work is linear in the input however deep it nests.
func Canonical(data []byte) ([]byte, error) {
	if isCanonical(data) {
		return bytes.Clone(data), nil
	}
	return canonicalSlow(data)
}

// canonicalSlow is the general path: decode every token, sort, re-encode.
func canonicalSlow(data []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	root, err := parseNode(dec)
	if err != nil {
		return nil, canonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, &InvalidError{Field: "result", Reason: "trailing data after the JSON value"}
	}
	return root.append(make([]byte, 0, len(data))), nil
}

func canonError(err error) error {
	var inv *InvalidError
	if errors.As(err, &inv) {
		return err
	}
	return &InvalidError{Field: "result", Reason: "not valid JSON: " + err.Error()}
}

// jsonNode is a parsed value: a scalar's canonical text, or an array's or
// object's members (objects sorted by key once parsed).
type jsonNode struct {
	scalar []byte
	object bool
	array  bool
	keys   []string
	kids   []*jsonNode
}

func parseNode(dec *json.Decoder) (*jsonNode, error) {
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	switch v := tok.(type) {
	case json.Delim:
		n := &jsonNode{object: v == '{', array: v == '['}
		if !n.object && !n.array {
			return nil, &InvalidError{Field: "result", Reason: "unexpected " + v.String()}
		}
		for dec.More() {
			if n.object {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key, _ := k.(string)
				n.keys = append(n.keys, key)
			}
			kid, err := parseNode(dec)
			if err != nil {
				return nil, err
			}
			n.kids = append(n.kids, kid)
		}
		if _, err := dec.Token(); err != nil {
			return nil, err
		}
		if n.object {
			return n, n.sortKeys()
		}
		return n, nil
	case string:
		return &jsonNode{scalar: jsonx.AppendString(nil, v)}, nil
	case json.Number:
		return &jsonNode{scalar: []byte(v)}, nil
	case bool:
		if v {
			return &jsonNode{scalar: []byte("true")}, nil
		}
		return &jsonNode{scalar: []byte("false")}, nil
	case nil:
		return &jsonNode{scalar: []byte("null")}, nil
	}
	return nil, &InvalidError{Field: "result", Reason: "unexpected token"}
}

func (n *jsonNode) sortKeys() error {
	idx := make([]int, len(n.keys))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return strings.Compare(n.keys[a], n.keys[b]) })
	keys := make([]string, len(idx))
	kids := make([]*jsonNode, len(idx))
	for i, j := range idx {
		keys[i], kids[i] = n.keys[j], n.kids[j]
		if i > 0 && keys[i-1] == keys[i] {
			return &InvalidError{Field: "result", Reason: "duplicate object key " + string(jsonx.AppendString(nil, keys[i]))}
		}
	}
	n.keys, n.kids = keys, kids
	return nil
}

func (n *jsonNode) append(out []byte) []byte {
	switch {
	case n.object:
		out = append(out, '{')
		for i, kid := range n.kids {
			if i > 0 {
				out = append(out, ',')
			}
			out = jsonx.AppendString(out, n.keys[i])
			out = append(out, ':')
			out = kid.append(out)
		}
		return append(out, '}')
	case n.array:
		out = append(out, '[')
		for i, kid := range n.kids {
			if i > 0 {
				out = append(out, ',')
			}
			out = kid.append(out)
		}
		return append(out, ']')
	}
	return append(out, n.scalar...)
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
