package engine

import (
	"bytes"
	"encoding/json"
	"testing"
)

// encoderJSON is appendJSONValue's reference: encoding/json without HTML
// escaping, null for a value it cannot encode.
func encoderJSON(v any) []byte {
	var w bytes.Buffer
	enc := json.NewEncoder(&w)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return []byte("null")
	}
	return bytes.TrimSuffix(w.Bytes(), []byte("\n"))
}

// hostileStrings are strings whose escaping differs between JSON writers.
var hostileStrings = []string{"", "plain", "<a href=\"x\">&amp;</a>", "tab\tnl\nret\rbs\bff\f", "\x00\x01\x1f\x7f",
	"back\\slash \"quoted\"", "line\u2028sep", "para\u2029sep", "bad\xffutf8\xc3", "snow ☃ 𝄞", "\ufffd", "\u2027\u202a"}

// TestResultValuesEncodeAsTheEncoderDoes pins the direct writer of tool
// results to encoding/json's bytes, whichever path writes a value.
func TestResultValuesEncodeAsTheEncoderDoes(t *testing.T) {
	var values []any
	for _, s := range hostileStrings {
		values = append(values, s, []string{s, "x"}, map[string]any{s: s}, []any{s, 1})
	}
	values = append(values,
		nil, true, false, 0, -7, 1<<40, 1.5, float64(1e21), uint8(3),
		[]string(nil), []string{}, []any(nil), []any{}, map[string]any(nil), map[string]any{},
		json.RawMessage(nil), json.RawMessage(``), json.RawMessage(`{ "b" : [1, 2 ], "a":"\u2028<>" }`), json.RawMessage(`{"a":`),
		map[string]any{"mcp": map[string]any{"server": "s", "tool": "echo", "content": []string{"hello"},
			"structured_content": json.RawMessage(` {"z":1,"a":{"y":[true,null]}}`), "progress": 3, "is_error": true}},
		map[string]any{"error": map[string]any{"code": "x", "extra": map[string]string{"k": "v"}}},
		map[string]any{"b": 1, "a": []any{map[string]any{"d": nil, "c": 2.5}}, "B": struct{ X int }{1}},
		map[string]any{"f": func() {}},
		[]any{json.RawMessage(`[1, 2]`), []string{"a"}, map[string]any{"k": []any{}}},
	)
	for i, v := range values {
		want := encoderJSON(v)
		got := appendJSONValue([]byte("prefix"), v)
		if !bytes.Equal(got, append([]byte("prefix"), want...)) {
			t.Errorf("value %d (%#v): got %s, want %s", i, v, got[len("prefix"):], want)
		}
	}
}

func FuzzResultValuesEncodeAsTheEncoderDoes(f *testing.F) {
	for _, s := range hostileStrings {
		f.Add(s, `{"a": 1}`)
	}
	f.Fuzz(func(t *testing.T, s, raw string) {
		v := map[string]any{s: []any{s, []string{s}, map[string]any{"raw": json.RawMessage(raw), "n": len(s)}}}
		if got, want := appendJSONValue(nil, v), encoderJSON(v); !bytes.Equal(got, want) {
			t.Errorf("got %s, want %s", got, want)
		}
	})
}
