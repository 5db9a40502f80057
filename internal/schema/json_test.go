package schema

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestInstanceParsingIsStrict defends how instance text is read: what is
// malformed, what is a structure failure, and that duplicate keys are
// rejected rather than resolved.
func TestInstanceParsingIsStrict(t *testing.T) {
	t.Parallel()
	s := mustCompile(t, `true`)
	tests := []struct {
		name, instance string
		code           Code // "" means valid
		path           string
	}{
		{"empty", ``, CodeMalformedJSON, ""},
		{"whitespace only", " \n", CodeMalformedJSON, ""},
		{"surrounding whitespace", " 1 \n", "", ""},
		{"trailing comma", `[1,]`, CodeMalformedJSON, ""},
		{"single quotes", `'a'`, CodeMalformedJSON, ""},
		{"leading zero", `01`, CodeMalformedJSON, ""},
		{"plus sign", `+1`, CodeMalformedJSON, ""},
		{"bare dot", `1.`, CodeMalformedJSON, ""},
		{"nan", `NaN`, CodeMalformedJSON, ""},
		{"two values", `1 2`, CodeMalformedJSON, ""},
		{"byte order mark", "\ufeff1", CodeMalformedJSON, ""},
		{"invalid utf-8", "\"\xff\"", CodeMalformedJSON, ""},
		{"raw control char", "\"a\x01\"", CodeMalformedJSON, ""},
		{"lone high surrogate", `"\ud800"`, CodeMalformedJSON, ""},
		{"lone low surrogate", `"\udc00"`, CodeMalformedJSON, ""},
		{"reversed surrogates", `"\udc00\ud800"`, CodeMalformedJSON, ""},
		{"paired surrogates", `"\ud83d\ude00"`, "", ""},
		{"escaped nul is a value", `"\u0000"`, "", ""},
		{"bad escape", `"\x"`, CodeMalformedJSON, ""},
		{"duplicate key", `{"a":1,"a":1}`, CodeJSONStructure, "/a"},
		{"nested duplicate key", `{"x":[{"b":1,"c":2,"b":3}]}`, CodeJSONStructure, "/x/0/b"},
		{"escaped duplicate key", `{"a":1,"\u0061":2}`, CodeJSONStructure, "/a"},
		{"huge exponent", `1e1000000000`, CodeJSONStructure, ""},
		{"nine-digit exponent", `1e999999999`, "", ""},
		{"leading zeros in exponent", `1e0000000000000000001`, "", ""},
		{"huge integer", strings.Repeat("9", 100_000), "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := s.Validate([]byte(tt.instance))
			if tt.code == "" {
				if !r.Valid {
					t.Fatalf("Validate(%q) = %+v, want valid", tt.instance, r.Diagnostics)
				}
				return
			}
			want := Diagnostic{Code: tt.code, InstancePath: tt.path}
			if r.Valid || len(r.Diagnostics) != 1 || r.Diagnostics[0] != want {
				t.Fatalf("Validate(%q) = %+v, want [%+v]", tt.instance, r.Diagnostics, want)
			}
		})
	}
}

// TestParserAgreesWithEncodingJSON checks that every document this parser
// accepts is valid for encoding/json and decodes to the same canonical form.
func TestParserAgreesWithEncodingJSON(t *testing.T) {
	t.Parallel()
	docs := []string{
		`{"b":[1,2.5,-0,1e3,"x\n\u00e9\ud83d\ude00"],"a":{"c":null,"d":true,"e":false}}`,
		`"\/\\\"\b\f\n\r\t"`, `[]`, `{}`, `-0.0e-0`, `[[[]],{}]`,
	}
	for _, d := range docs {
		checkAgainstEncodingJSON(t, []byte(d))
	}
}

func checkAgainstEncodingJSON(t testing.TB, data []byte) {
	t.Helper()
	v, perr := parseJSON(data, 10_000, 1<<30)
	if perr != nil {
		return
	}
	if !json.Valid(data) {
		t.Fatalf("parser accepted %q, encoding/json rejects it", data)
	}
	// Re-parse the canonical form: it must be stable.
	c := appendCanonical(nil, &v)
	v2, perr := parseJSON(c, 10_000, 1<<30)
	if perr != nil {
		t.Fatalf("canonical form %q does not parse: %v", c, perr)
	}
	if c2 := appendCanonical(nil, &v2); string(c2) != string(c) {
		t.Fatalf("canonical form not stable: %q vs %q", c, c2)
	}
	if !equal(&v, &v2) {
		t.Fatalf("canonical form changed the value of %q", data)
	}
	if got, want := canonicalSize(&v), len(c); got < want {
		t.Fatalf("canonicalSize = %d, below the canonical length %d", got, want)
	}
	// Strings must decode like encoding/json does.
	var std any
	dec := json.NewDecoder(strings.NewReader(string(c)))
	dec.UseNumber()
	if err := dec.Decode(&std); err != nil {
		t.Fatalf("encoding/json rejects canonical %q: %v", c, err)
	}
	stdBytes, _ := json.Marshal(std)
	v3, perr := parseJSON(stdBytes, 10_000, 1<<30)
	if perr != nil || !equal(&v, &v3) {
		t.Fatalf("encoding/json reads %q differently: %s", data, stdBytes)
	}
}
