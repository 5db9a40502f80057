package schema

import (
	"errors"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// FuzzCompile feeds arbitrary schema text to Compile. It must never panic;
// a rejection must be a typed CompileError; an accepted schema must have a
// stable canonical form and validate instances within the diagnostic and
// work bounds.
func FuzzCompile(f *testing.F) {
	for _, s := range oracleSchemas {
		f.Add([]byte(s))
	}
	for _, s := range []string{
		`{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"type":"string"}},"$ref":"#/$defs/a"}`,
		`{"$ref":"#/$defs/a%20b"}`, `{"pattern":"x"}`, `{"items":[true]}`, `{"a":1,"a":2}`,
		`{"enum":[1e400,-0.0,"\ud83d\ude00"]}`, `{"multipleOf":1e-400}`,
		`{"$schema":"https://json-schema.org/draft/2020-12/schema#","const":{"$ref":1}}`,
	} {
		f.Add([]byte(s))
	}
	instances := [][]byte{[]byte(`null`), []byte(`{"a":[1,"x",{"b":null}]}`), []byte(`[1.5,-2,"é"]`), []byte(`"abc"`)}
	f.Fuzz(func(t *testing.T, raw []byte) {
		s, err := Compile(raw, Limits{})
		if err != nil {
			var ce *CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v is not a *CompileError", err)
			}
			if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrUnsupported) && !errors.Is(err, ErrBound) {
				t.Fatalf("error %v has no kind", err)
			}
			if ce.Reason == "" {
				t.Fatalf("error %v has no reason", err)
			}
			return
		}
		again, err := Compile(s.Canonical(), Limits{})
		if err != nil {
			t.Fatalf("canonical form %s does not compile: %v", s.Canonical(), err)
		}
		if again.Digest() != s.Digest() {
			t.Fatalf("canonical form changes the digest")
		}
		for _, inst := range instances {
			r := s.Validate(inst)
			checkDiagnosticBounds(t, r)
			checkActualWork(t, s, inst)
		}
	})
}

// FuzzValidate feeds arbitrary instance text to a few fixed schemas. It
// must never panic, must keep every diagnostic bound, must do no more work
// than it charges, and must agree with jsonschema-go wherever both read the
// instance the same way.
func FuzzValidate(f *testing.F) {
	for _, s := range oracleInstances {
		f.Add([]byte(s))
	}
	for _, s := range []string{`{"a":1,"a":2}`, `"\ud800"`, "\"\xff\"", `[[[[[[[[]]]]]]]]`, `1e999999999`, `123456789012345678901234567890`} {
		f.Add([]byte(s))
	}
	schemas := make([]*Schema, len(oracleSchemas))
	oracles := make([]*jsonschema.Resolved, len(oracleSchemas))
	for i, src := range oracleSchemas {
		schemas[i] = mustCompile(f, src)
		oracles[i] = oracleResolve(f, src)
	}
	f.Fuzz(func(t *testing.T, inst []byte) {
		for i, s := range schemas {
			r := s.Validate(inst)
			checkDiagnosticBounds(t, r)
			checkActualWork(t, s, inst)
			if len(inst) > 4096 || !floatSafe(inst) {
				continue
			}
			if want := oracleValid(t, oracles[i], inst); r.Valid != want {
				t.Fatalf("schema %s, instance %q: valid=%v, jsonschema-go says %v (%+v)", oracleSchemas[i], inst, r.Valid, want, r.Diagnostics)
			}
		}
	})
}

// floatSafe reports whether inst parses strictly and every number in it
// survives a float64 round trip, so jsonschema-go sees the same values.
func floatSafe(inst []byte) bool {
	v, perr := parseJSON(inst, 64, 65_536)
	if perr != nil {
		return false
	}
	var walk func(v *value) bool
	walk = func(v *value) bool {
		switch v.kind {
		case kindNumber:
			d := v.num
			mag := int64(len(d.digits)) + d.exp
			return d.isZero() || len(d.digits) <= 15 && mag > -300 && mag < 300
		case kindArray:
			for i := range v.items {
				if !walk(&v.items[i]) {
					return false
				}
			}
		case kindObject:
			for i := range v.members {
				if !walk(&v.members[i].val) {
					return false
				}
			}
		}
		return true
	}
	return walk(&v)
}
