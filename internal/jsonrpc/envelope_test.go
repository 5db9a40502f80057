package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestEveryMemberOnceAndTheIDAStringNumberOrNull: JSON-RPC 2.0 allows one
// id, a string, a number or null, and each other member once; a message
// that writes one twice (under any spelling encoding/json folds to it) or
// gives an object, array or boolean id is refused, naming the member.
func TestEveryMemberOnceAndTheIDAStringNumberOrNull(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		msg, member string
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"m"}`, ""},
		{`{"jsonrpc":"2.0","id":"a","method":"m","params":{"id":1,"id":2}}`, ""},
		{`{"jsonrpc":"2.0","id":null,"result":{}}`, ""},
		{`{"jsonrpc":"2.0","id":-1.5e3,"error":{"code":1,"message":"x"}}`, ""},
		{` { "id" : 7 , "x":[{"id":{}}], "method":"m" } `, ""},
		{`{"jsonrpc":"2.0","method":"m"}`, ""},
		{`{"jsonrpc":"2.0","id":1,"id":2,"method":"m"}`, "id"},
		{`{"jsonrpc":"2.0","id":1,"ID":2,"method":"m"}`, "id"},
		{`{"jsonrpc":"2.0","id":1,"\u0069d":2,"method":"m"}`, "id"},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"m"}`, "id"},
		{`{"jsonrpc":"2.0","id":[1],"method":"m"}`, "id"},
		{`{"jsonrpc":"2.0","id":true,"method":"m"}`, "id"},
		{`{"jsonrpc":"2.0","id":1,"method":"a","method":"b"}`, "method"},
		{`{"jsonrpc":"2.0","id":1,"method":"a","params":{},"params":[]}`, "params"},
		{`{"jsonrpc":"2.0","id":1,"method":"a","paramſ":{},"params":[]}`, "params"},
		{`{"jsonrpc":"1.0","id":1,"jsonrpc":"2.0","method":"a"}`, "jsonrpc"},
		{`{"jsonrpc":"2.0","id":1,"result":{},"result":{}}`, "result"},
		{`{"jsonrpc":"2.0","id":1,"error":{},"Error":{}}`, "error"},
	} {
		err := CheckEnvelope([]byte(c.msg))
		var ee *EnvelopeError
		switch {
		case c.member == "" && err != nil:
			t.Errorf("%s: %v", c.msg, err)
		case c.member != "" && (!errors.As(err, &ee) || ee.Member != c.member || !errors.Is(err, ErrEnvelope)):
			t.Errorf("%s: %v, want member %s", c.msg, err, c.member)
		}
	}
}

// oracle decides a message with encoding/json's own tokens: the members
// it binds, by folded name, and the id's kind.
func oracle(msg []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(msg))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return "", false
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		name := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return "", false
		}
		for _, m := range members {
			if !strings.EqualFold(name, m) {
				continue
			}
			if seen[m] {
				return m, true
			}
			seen[m] = true
			if m == "id" {
				switch v[0] {
				case '{', '[', 't', 'f':
					return m, true
				}
			}
		}
	}
	return "", true
}

// FuzzCheckEnvelope: on every valid JSON object, CheckEnvelope refuses
// exactly what a walk with encoding/json's tokens finds wrong, and names
// the same member.
func FuzzCheckEnvelope(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"id":{"a":"}"},"method":"m"}`,
		`{"jsonrpc":"2.0","id":"\"}","ID":2}`,
		`{"a":"\\","id":[],"b":{"c":[1,{"d":"]"}]}}`,
		`{"jsonrpc":"2.0","method":"m","params":{"x":"\u0000"},"pArAmS":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		err := CheckEnvelope(msg)
		if !json.Valid(msg) {
			return
		}
		want, ok := oracle(msg)
		if !ok {
			return
		}
		var ee *EnvelopeError
		got := ""
		if errors.As(err, &ee) {
			got = ee.Member
		}
		if got != want {
			t.Fatalf("%q: got %q (%v), the decoder's walk finds %q", msg, got, err, want)
		}
	})
}
