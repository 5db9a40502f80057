package schema

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestDiagnosticsAreBounded defends the record bounds: at most eight
// entries, each path at most 256 encoded bytes, at most 2,048 bytes in all,
// and at least one entry when invalid.
func TestDiagnosticsAreBounded(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("k", 300)
	quoted := strings.Repeat("<", 300) // six bytes each under encoding/json
	tests := []struct {
		name, schema, instance string
		wantCount              int
	}{
		{"many violations cut at eight", `{"items":{"type":"string"}}`, `[1,2,3,4,5,6,7,8,9,10,11,12]`, 8},
		{"long keys cut by total bytes", `{"additionalProperties":false}`,
			`{"` + long + `1":1,"` + long + `2":1,"` + long + `3":1,"` + long + `4":1,"` + long + `5":1,"` + long + `6":1,"` + long + `7":1,"` + long + `8":1,"` + long + `9":1}`, 0},
		{"escaped keys cut by total bytes", `{"additionalProperties":false}`,
			`{"` + quoted + `1":1,"` + quoted + `2":1,"` + quoted + `3":1,"` + quoted + `4":1,"` + quoted + `5":1,"` + quoted + `6":1}`, 0},
		{"long schema path", `{"$defs":{"` + long + `":{"type":"string"}},"$ref":"#/$defs/` + long + `"}`, `1`, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := mustCompile(t, tt.schema).Validate([]byte(tt.instance))
			if r.Valid || len(r.Diagnostics) == 0 {
				t.Fatalf("want invalid with diagnostics, got %+v", r)
			}
			if tt.wantCount != 0 && len(r.Diagnostics) != tt.wantCount {
				t.Fatalf("got %d diagnostics, want %d", len(r.Diagnostics), tt.wantCount)
			}
			checkDiagnosticBounds(t, r)
		})
	}
}

func checkDiagnosticBounds(t testing.TB, r Result) {
	t.Helper()
	if r.Valid != (len(r.Diagnostics) == 0) {
		t.Fatalf("Valid=%v with %d diagnostics", r.Valid, len(r.Diagnostics))
	}
	if len(r.Diagnostics) > MaxDiagnostics {
		t.Fatalf("%d diagnostics, limit %d", len(r.Diagnostics), MaxDiagnostics)
	}
	b, err := json.Marshal(r.Diagnostics)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Diagnostics) > 0 && len(b) > MaxDiagnosticsBytes {
		t.Fatalf("diagnostics encode to %d bytes, limit %d", len(b), MaxDiagnosticsBytes)
	}
	for _, d := range r.Diagnostics {
		for _, p := range []string{d.InstancePath, d.SchemaPath} {
			e, _ := json.Marshal(p)
			if len(p) > MaxDiagnosticPathBytes || len(e)-2 > MaxDiagnosticPathBytes {
				t.Fatalf("path of %d bytes (%d encoded), limit %d", len(p), len(e)-2, MaxDiagnosticPathBytes)
			}
		}
		switch d.Code {
		case CodeMalformedJSON, CodeJSONBytes, CodeValidationWork, CodeJSONStructure, CodeSchemaViolation:
		default:
			t.Fatalf("unknown code %q", d.Code)
		}
	}
}

// TestDiagnosticsNeverContainValues checks that a secret-looking instance
// value never appears in diagnostics, whatever keyword rejects it.
func TestDiagnosticsNeverContainValues(t *testing.T) {
	t.Parallel()
	const secret = "sk-SECRET-VALUE-123"
	schemas := []string{
		`{"properties":{"k":{"type":"integer"}}}`,
		`{"properties":{"k":{"enum":["a"]}}}`,
		`{"properties":{"k":{"const":"a"}}}`,
		`{"properties":{"k":{"maxLength":2}}}`,
		`{"properties":{"k":{"not":{"type":"string"}}}}`,
		`{"properties":{"k":{"anyOf":[{"type":"null"},{"type":"integer"}]}}}`,
		`{"propertyNames":{"const":"z"}}`,
	}
	for _, src := range schemas {
		r := mustCompile(t, src).Validate([]byte(`{"k":"` + secret + `"}`))
		b, _ := json.Marshal(r)
		if r.Valid || strings.Contains(string(b), "SECRET") {
			t.Fatalf("schema %s: result %s", src, b)
		}
	}
}

// TestRecordMatchesOutputValidationV1 checks the record shape.
func TestRecordMatchesOutputValidationV1(t *testing.T) {
	t.Parallel()
	s := mustCompile(t, `{"type":"object","required":["answer"]}`)
	valid, _ := json.Marshal(s.Record(s.Validate([]byte(`{"answer":"x"}`))))
	want := `{"schema_version":"output-validation-v1","schema_sha256":"` + s.Digest() + `","status":"valid","diagnostics":[]}`
	if string(valid) != want {
		t.Fatalf("valid record = %s, want %s", valid, want)
	}
	invalid, _ := json.Marshal(s.Record(s.Validate([]byte(`{}`))))
	want = `{"schema_version":"output-validation-v1","schema_sha256":"` + s.Digest() + `","status":"invalid","diagnostics":[{"code":"schema_violation","instance_path":"","schema_path":"/required/0"}]}`
	if string(invalid) != want {
		t.Fatalf("invalid record = %s, want %s", invalid, want)
	}
	if u := s.UnvalidatedRecord(); u.Status != StatusUnvalidated || len(u.Diagnostics) != 0 {
		t.Fatalf("unvalidated record = %+v", u)
	}
}

// TestValidateValueMatchesValidate checks the decoded-value entry point.
func TestValidateValueMatchesValidate(t *testing.T) {
	t.Parallel()
	s := mustCompile(t, `{"type":"object","properties":{"n":{"type":"integer","maximum":9007199254740993}},"additionalProperties":false}`)
	if r := s.ValidateValue(map[string]any{"n": json.Number("9007199254740993")}); !r.Valid {
		t.Fatalf("json.Number at the maximum: %+v", r)
	}
	if r := s.ValidateValue(map[string]any{"n": json.Number("9007199254740994")}); r.Valid {
		t.Fatal("json.Number above the maximum accepted")
	}
	if r := s.ValidateValue(map[string]any{"n": 2.5}); r.Valid || r.Diagnostics[0].SchemaPath != "/properties/n/type" {
		t.Fatalf("float: %+v", r)
	}
	if r := s.ValidateValue(map[string]any{"n": make(chan int)}); r.Valid || r.Diagnostics[0].Code != CodeMalformedJSON {
		t.Fatalf("unencodable value: %+v", r)
	}
}

// TestWorkBoundsActualWork checks the invariant behind the up-front charge:
// the work validation actually does never exceeds Work(len(instance)).
func TestWorkBoundsActualWork(t *testing.T) {
	t.Parallel()
	for _, src := range oracleSchemas {
		s := mustCompile(t, src)
		for _, inst := range oracleInstances {
			checkActualWork(t, s, []byte(inst))
		}
	}
}

func checkActualWork(t testing.TB, s *Schema, inst []byte) {
	t.Helper()
	v, perr := parseJSON(inst, s.lim.MaxInstanceDepth, s.lim.MaxInstanceNodes)
	if perr != nil {
		return
	}
	ev := evaluator{}
	ev.eval(s.root, &v, true)
	if ev.work > s.Work(len(inst)) {
		t.Fatalf("actual work %d > charged %d for %s against %s", ev.work, s.Work(len(inst)), inst, s.canonical)
	}
}

// TestDiagnosticPathAtLimit checks a 256-byte path is kept whole and a
// 257-byte one is cut to 256 at a character boundary.
func TestDiagnosticPathAtLimit(t *testing.T) {
	t.Parallel()
	s := mustCompile(t, `{"additionalProperties":false}`)
	for _, tt := range []struct {
		key  string
		want string
	}{
		{strings.Repeat("a", 255), "/" + strings.Repeat("a", 255)},
		{strings.Repeat("a", 256), "/" + strings.Repeat("a", 255)},
		{strings.Repeat("a", 254) + "é", "/" + strings.Repeat("a", 254)},
		{strings.Repeat("a", 250) + "\n", "/" + strings.Repeat("a", 250) + "\n"},
		{strings.Repeat("a", 254) + "\n", "/" + strings.Repeat("a", 254)},
	} {
		b, _ := json.Marshal(map[string]int{tt.key: 1})
		r := s.Validate(b)
		if r.Valid || r.Diagnostics[0].InstancePath != tt.want {
			t.Fatalf("key of %d bytes: path %q, want %q", len(tt.key), r.Diagnostics[0].InstancePath, tt.want)
		}
	}
}
