package schema

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

// paddedSchema returns `{"description":"xxx..."}` of exactly n bytes.
func paddedSchema(n int) []byte {
	const frame = `{"description":""}`
	return []byte(`{"description":"` + strings.Repeat("x", n-len(frame)) + `"}`)
}

// nestedNot returns a schema whose JSON nesting depth is depth (each "not"
// adds one object level).
func nestedNot(depth int) []byte {
	return []byte(strings.Repeat(`{"not":`, depth-1) + `{}` + strings.Repeat(`}`, depth-1))
}

// enumSchema returns `{"enum":[0,...]}` with total JSON values nodes.
func enumSchema(nodes int) []byte {
	items := make([]string, nodes-2)
	for i := range items {
		items[i] = "0"
	}
	return []byte(`{"enum":[` + strings.Join(items, ",") + `]}`)
}

// fanSchema returns a schema with 1 + r*(m+2) expanded visits: the root
// applies r references to a def that applies m boolean schemas.
func fanSchema(r, m int) []byte {
	trues := strings.TrimSuffix(strings.Repeat("true,", m), ",")
	refs := strings.TrimSuffix(strings.Repeat(`{"$ref":"#/$defs/x"},`, r), ",")
	return []byte(`{"$defs":{"x":{"allOf":[` + trues + `]}},"allOf":[` + refs + `]}`)
}

// TestSchemaAdmissionBounds checks each schema bound at its limit and one
// past it.
func TestSchemaAdmissionBounds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		atLimit  []byte
		pastIt   []byte
		wantKind error
	}{
		{"bytes 65536", paddedSchema(65_536), paddedSchema(65_537), ErrBound},
		{"depth 32", nestedNot(32), nestedNot(33), ErrBound},
		{"nodes 4096", enumSchema(4_096), enumSchema(4_097), ErrBound},
		{"visits 4096", fanSchema(5, 817), fanSchema(8, 510), ErrBound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := Compile(tt.atLimit, Limits{}); err != nil {
				t.Fatalf("at the limit: %v", err)
			}
			_, err := Compile(tt.pastIt, Limits{})
			if !errors.Is(err, tt.wantKind) {
				t.Fatalf("past the limit: %v, want %v", err, tt.wantKind)
			}
		})
	}
	s := mustCompile(t, string(fanSchema(5, 817)))
	if s.visits != 4_096 {
		t.Fatalf("fanSchema(5, 817) has %d visits, want 4096", s.visits)
	}
}

// TestVisitsGrowExponentiallyAreBounded checks that a chain of defs that
// doubles at each step is rejected without expanding it.
func TestVisitsGrowExponentiallyAreBounded(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString(`{"$defs":{`)
	for i := 0; i < 60; i++ {
		next := strconv.Itoa(i + 1)
		b.WriteString(`"d` + strconv.Itoa(i) + `":{"allOf":[{"$ref":"#/$defs/d` + next + `"},{"$ref":"#/$defs/d` + next + `"}]},`)
	}
	b.WriteString(`"d60":true},"$ref":"#/$defs/d0"}`)
	_, err := Compile([]byte(b.String()), Limits{})
	if !errors.Is(err, ErrBound) {
		t.Fatalf("Compile = %v, want ErrBound", err)
	}
}

func nestedArrays(depth int) []byte {
	return []byte(strings.Repeat("[", depth) + strings.Repeat("]", depth))
}

func zeroArray(nodes int) []byte {
	return []byte("[" + strings.TrimSuffix(strings.Repeat("0,", nodes-1), ",") + "]")
}

func stringOfBytes(n int) []byte {
	return []byte(`"` + strings.Repeat("a", n-2) + `"`)
}

// TestInstanceBounds checks each instance bound at its limit and one past it.
func TestInstanceBounds(t *testing.T) {
	t.Parallel()
	trueSchema := mustCompile(t, `true`)
	tests := []struct {
		name            string
		schema          *Schema
		atLimit, pastIt []byte
		code            Code
		path            string
	}{
		{"bytes 1 MiB", trueSchema, stringOfBytes(1 << 20), stringOfBytes(1<<20 + 1), CodeJSONBytes, ""},
		{"depth 64", trueSchema, nestedArrays(64), nestedArrays(65), CodeJSONStructure, strings.Repeat("/0", 64)},
		{"nodes 65536", trueSchema, zeroArray(65_536), zeroArray(65_537), CodeJSONStructure, "/65535"},
		// true has cost 1, so MaxWork n admits exactly n bytes.
		{"work", trueSchema.WithLimits(Limits{MaxWork: 10}), []byte(`"12345678"`), []byte(`"123456789"`), CodeValidationWork, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if r := tt.schema.Validate(tt.atLimit); !r.Valid {
				t.Fatalf("at the limit: %+v", r.Diagnostics)
			}
			r := tt.schema.Validate(tt.pastIt)
			want := Diagnostic{Code: tt.code, InstancePath: tt.path}
			if r.Valid || len(r.Diagnostics) != 1 || r.Diagnostics[0] != want {
				t.Fatalf("past the limit: %+v, want [%+v]", r.Diagnostics, want)
			}
			if r.Work != 0 {
				t.Fatalf("past the limit charged work %d, want 0", r.Work)
			}
		})
	}
}

// TestDefaultWorkBound checks the reference's default: a schema's cost times
// the instance bytes must stay within 16,777,216.
func TestDefaultWorkBound(t *testing.T) {
	t.Parallel()
	s := mustCompile(t, `{"type":"string"}`) // one visit, no payload
	if s.Work(1) != 1 {
		t.Fatalf("Work(1) = %d, want 1", s.Work(1))
	}
	e := mustCompile(t, `{"enum":["abc"]}`) // 1 visit + 7 payload bytes
	if e.Work(10) != 80 {
		t.Fatalf("Work(10) = %d, want 80", e.Work(10))
	}
	big := mustCompile(t, string(fanSchema(5, 817))) // 4096 visits
	n := 16_777_216 / 4_096                          // 4096 bytes
	if r := big.Validate(stringOfBytes(n)); !r.Valid || r.Work != 16_777_216 {
		t.Fatalf("at the work limit: %+v", r)
	}
	if r := big.Validate(stringOfBytes(n + 1)); r.Valid || r.Diagnostics[0].Code != CodeValidationWork {
		t.Fatalf("past the work limit: %+v", r)
	}
}

// TestLimitsZeroMeansDefault defends the Limits convention.
func TestLimitsZeroMeansDefault(t *testing.T) {
	t.Parallel()
	if got := (Limits{}).withDefaults(); got != DefaultLimits() {
		t.Fatalf("Limits{} = %+v, want %+v", got, DefaultLimits())
	}
	l := Limits{MaxDepth: 2, MaxWork: 5, MaxNodes: -1}.withDefaults()
	if l.MaxDepth != 2 || l.MaxWork != 5 || l.MaxNodes != 4_096 {
		t.Fatalf("withDefaults = %+v", l)
	}
	if _, err := Compile(nestedNot(3), Limits{MaxDepth: 2}); !errors.Is(err, ErrBound) {
		t.Fatalf("custom depth not applied: %v", err)
	}
}
