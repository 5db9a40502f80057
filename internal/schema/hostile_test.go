package schema

import (
	"strings"
	"testing"
)

// TestHostileInstancesStayBounded feeds adversarial instances and checks
// each fails with the right code rather than exhausting anything.
func TestHostileInstancesStayBounded(t *testing.T) {
	t.Parallel()
	s := mustCompile(t, `{"type":"object","properties":{"n":{"type":"number","multipleOf":0.7,"maximum":1e10}},"additionalProperties":{"type":"array"}}`)
	tests := []struct {
		name     string
		instance string
		code     Code
	}{
		{"deep nesting", strings.Repeat(`{"a":`, 10_000) + "1" + strings.Repeat("}", 10_000), CodeJSONStructure},
		{"deep unterminated", strings.Repeat("[", 100_000), CodeJSONStructure},
		{"huge integer", `{"n":` + strings.Repeat("7", 200_000) + `}`, CodeSchemaViolation},
		{"huge exponent", `{"n":7e999999999}`, CodeSchemaViolation},
		{"out of range exponent", `{"n":1e99999999999}`, CodeJSONStructure},
		{"tiny number", `{"n":7e-999999999}`, CodeSchemaViolation},
		{"many duplicate keys", `{` + strings.Repeat(`"a":[],`, 1000) + `"a":[]}`, CodeJSONStructure},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := s.Validate([]byte(tt.instance))
			if r.Valid || r.Diagnostics[0].Code != tt.code {
				t.Fatalf("got %+v, want %s", r.Diagnostics, tt.code)
			}
			checkDiagnosticBounds(t, r)
		})
	}
	if r := s.Validate([]byte(`{"n":7e9}`)); !r.Valid {
		t.Fatalf("7e9 is a multiple of 0.7 under 1e10: %+v", r)
	}
}

// TestHostileSchemasAreRejectedCheaply covers schema-side attacks.
func TestHostileSchemasAreRejectedCheaply(t *testing.T) {
	t.Parallel()
	for name, src := range map[string]string{
		"deep nesting":      strings.Repeat(`{"not":`, 50_000) + "{}" + strings.Repeat("}", 50_000),
		"many values":       `{"enum":[` + strings.Repeat("0,", 60_000) + `0]}`,
		"duplicate keyword": `{"maximum":1,"maximum":2}`,
	} {
		if _, err := Compile([]byte(src), Limits{MaxSchemaBytes: 1 << 20}); err == nil {
			t.Errorf("%s: Compile accepted it", name)
		}
	}
}
