package schema

import (
	"testing"
)

func mustCompile(t testing.TB, src string) *Schema {
	t.Helper()
	s, err := Compile([]byte(src), Limits{})
	if err != nil {
		t.Fatalf("Compile(%s): %v", src, err)
	}
	return s
}

// TestSupportedKeywordsValidate defends the meaning of every keyword in the
// subset: each row is a schema, an instance, and either valid or the schema
// path of the first diagnostic.
func TestSupportedKeywordsValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, schema, instance string
		wantPath               string // "" means valid
		wantInstance           string
	}{
		{"true schema accepts anything", `true`, `{"a":[1]}`, "", ""},
		{"false schema rejects everything", `false`, `null`, "#", ""},
		{"empty schema accepts anything", `{}`, `"x"`, "", ""},
		{"type string ok", `{"type":"string"}`, `"x"`, "", ""},
		{"type string rejects number", `{"type":"string"}`, `1`, "/type", ""},
		{"type integer accepts 1.0", `{"type":"integer"}`, `1.0`, "", ""},
		{"type integer accepts 1e2", `{"type":"integer"}`, `1e2`, "", ""},
		{"type integer rejects 1.5", `{"type":"integer"}`, `1.5`, "/type", ""},
		{"type integer accepts huge integer", `{"type":"integer"}`, `123456789012345678901234567890`, "", ""},
		{"type number accepts integer", `{"type":"number"}`, `7`, "", ""},
		{"type list ok", `{"type":["null","boolean"]}`, `false`, "", ""},
		{"type list rejects", `{"type":["null","boolean"]}`, `{}`, "/type", ""},
		{"type array", `{"type":"array"}`, `{}`, "/type", ""},
		{"type object", `{"type":"object"}`, `[]`, "/type", ""},
		{"enum ok", `{"enum":["a",1,null]}`, `1.0`, "", ""},
		{"enum rejects", `{"enum":["a",1,null]}`, `"b"`, "/enum", ""},
		{"enum compares objects unordered", `{"enum":[{"a":1,"b":[2]}]}`, `{"b":[2],"a":1}`, "", ""},
		{"enum compares arrays ordered", `{"enum":[[1,2]]}`, `[2,1]`, "/enum", ""},
		{"empty enum rejects all", `{"enum":[]}`, `1`, "/enum", ""},
		{"const ok", `{"const":{"k":[true]}}`, `{"k":[true]}`, "", ""},
		{"const rejects", `{"const":"x"}`, `"y"`, "/const", ""},
		{"const big integer exact", `{"const":9007199254740993}`, `9007199254740992`, "/const", ""},
		{"const big integer equal", `{"const":9007199254740993}`, `9007199254740993.0`, "", ""},
		{"const false is not 0", `{"const":false}`, `0`, "/const", ""},
		{"minimum ok", `{"minimum":3}`, `3`, "", ""},
		{"minimum rejects", `{"minimum":3}`, `2.999`, "/minimum", ""},
		{"minimum ignores strings", `{"minimum":3}`, `"2"`, "", ""},
		{"maximum ok", `{"maximum":-1.5}`, `-1.5`, "", ""},
		{"maximum rejects", `{"maximum":-1.5}`, `-1.4`, "/maximum", ""},
		{"maximum exact above 2^53", `{"maximum":9007199254740992}`, `9007199254740993`, "/maximum", ""},
		{"exclusiveMinimum rejects equal", `{"exclusiveMinimum":0}`, `-0`, "/exclusiveMinimum", ""},
		{"exclusiveMinimum ok", `{"exclusiveMinimum":0}`, `1e-400`, "", ""},
		{"exclusiveMaximum rejects equal", `{"exclusiveMaximum":10}`, `1e1`, "/exclusiveMaximum", ""},
		{"exclusiveMaximum ok", `{"exclusiveMaximum":10}`, `9.999999999999999999999`, "", ""},
		{"multipleOf ok", `{"multipleOf":0.1}`, `0.3`, "", ""},
		{"multipleOf rejects", `{"multipleOf":0.1}`, `0.35`, "/multipleOf", ""},
		{"multipleOf big exact", `{"multipleOf":3}`, `100000000000000000000000000002`, "", ""},
		{"multipleOf big rejects", `{"multipleOf":3}`, `100000000000000000000000000001`, "/multipleOf", ""},
		{"multipleOf huge exponent", `{"multipleOf":7}`, `7e999999999`, "", ""},
		{"minLength counts code points", `{"minLength":2}`, `"é"`, "/minLength", ""},
		{"minLength ok", `{"minLength":2}`, `"éé"`, "", ""},
		{"maxLength counts code points", `{"maxLength":1}`, `"😀"`, "", ""},
		{"maxLength rejects", `{"maxLength":1}`, `"ab"`, "/maxLength", ""},
		{"maxLength ignores numbers", `{"maxLength":1}`, `12345`, "", ""},
		{"properties ok", `{"properties":{"a":{"type":"string"}}}`, `{"a":"x","b":1}`, "", ""},
		{"properties rejects", `{"properties":{"a":{"type":"string"}}}`, `{"a":1}`, "/properties/a/type", "/a"},
		{"required ok", `{"required":["a","b"]}`, `{"a":1,"b":2}`, "", ""},
		{"required names the missing entry", `{"required":["a","b"]}`, `{"a":1}`, "/required/1", ""},
		{"required ignores non-objects", `{"required":["a"]}`, `[]`, "", ""},
		{"additionalProperties false", `{"properties":{"a":true},"additionalProperties":false}`, `{"a":1,"z":2}`, "/additionalProperties", "/z"},
		{"additionalProperties schema", `{"additionalProperties":{"type":"integer"}}`, `{"x":1,"y":2}`, "", ""},
		{"propertyNames ok", `{"propertyNames":{"maxLength":2}}`, `{"ab":1}`, "", ""},
		{"propertyNames rejects", `{"propertyNames":{"maxLength":2}}`, `{"abc":1}`, "/propertyNames", "/abc"},
		{"dependentRequired ok", `{"dependentRequired":{"a":["b"]}}`, `{"a":1,"b":2}`, "", ""},
		{"dependentRequired absent trigger", `{"dependentRequired":{"a":["b"]}}`, `{"c":1}`, "", ""},
		{"dependentRequired rejects", `{"dependentRequired":{"a":["b"]}}`, `{"a":1}`, "/dependentRequired/a/0", ""},
		{"dependentSchemas ok", `{"dependentSchemas":{"a":{"required":["b"]}}}`, `{"a":1,"b":1}`, "", ""},
		{"dependentSchemas rejects", `{"dependentSchemas":{"a":{"required":["b"]}}}`, `{"a":1}`, "/dependentSchemas/a/required/0", ""},
		{"minProperties rejects", `{"minProperties":1}`, `{}`, "/minProperties", ""},
		{"maxProperties rejects", `{"maxProperties":1}`, `{"a":1,"b":2}`, "/maxProperties", ""},
		{"maxProperties ok", `{"maxProperties":2}`, `{"a":1,"b":2}`, "", ""},
		{"items ok", `{"items":{"type":"integer"}}`, `[1,2,3]`, "", ""},
		{"items rejects", `{"items":{"type":"integer"}}`, `[1,"x"]`, "/items/type", "/1"},
		{"prefixItems ok", `{"prefixItems":[{"type":"string"}],"items":{"type":"integer"}}`, `["a",1]`, "", ""},
		{"prefixItems rejects", `{"prefixItems":[{"type":"string"}]}`, `[1]`, "/prefixItems/0/type", "/0"},
		{"items after prefixItems", `{"prefixItems":[true],"items":false}`, `[1,2]`, "/items", "/1"},
		{"prefixItems shorter instance ok", `{"prefixItems":[true,{"type":"string"}]}`, `[1]`, "", ""},
		{"minItems rejects", `{"minItems":2}`, `[1]`, "/minItems", ""},
		{"maxItems rejects", `{"maxItems":0}`, `[1]`, "/maxItems", ""},
		{"allOf ok", `{"allOf":[{"type":"integer"},{"minimum":1}]}`, `2`, "", ""},
		{"allOf rejects", `{"allOf":[{"type":"integer"},{"minimum":1}]}`, `0`, "/allOf/1/minimum", ""},
		{"anyOf ok", `{"anyOf":[{"type":"string"},{"type":"null"}]}`, `null`, "", ""},
		{"anyOf rejects", `{"anyOf":[{"type":"string"},{"type":"null"}]}`, `1`, "/anyOf", ""},
		{"oneOf ok", `{"oneOf":[{"type":"integer"},{"type":"string"}]}`, `1`, "", ""},
		{"oneOf rejects two", `{"oneOf":[{"type":"integer"},{"type":"number"}]}`, `1`, "/oneOf", ""},
		{"oneOf rejects none", `{"oneOf":[{"type":"integer"}]}`, `"x"`, "/oneOf", ""},
		{"not ok", `{"not":{"type":"null"}}`, `1`, "", ""},
		{"not rejects", `{"not":{"type":"null"}}`, `null`, "/not", ""},
		{"if then ok", `{"if":{"type":"integer"},"then":{"minimum":0},"else":{"type":"string"}}`, `1`, "", ""},
		{"if then rejects", `{"if":{"type":"integer"},"then":{"minimum":0},"else":{"type":"string"}}`, `-1`, "/then/minimum", ""},
		{"if else rejects", `{"if":{"type":"integer"},"then":{"minimum":0},"else":{"type":"string"}}`, `null`, "/else/type", ""},
		{"then without if is ignored", `{"then":false}`, `1`, "", ""},
		{"ref ok", `{"$defs":{"p":{"type":"integer"}},"properties":{"a":{"$ref":"#/$defs/p"}}}`, `{"a":1}`, "", ""},
		{"ref rejects at the def", `{"$defs":{"p":{"type":"integer"}},"properties":{"a":{"$ref":"#/$defs/p"}}}`, `{"a":"x"}`, "/$defs/p/type", "/a"},
		{"ref with siblings applies both", `{"$defs":{"p":{"type":"integer"}},"$ref":"#/$defs/p","minimum":5}`, `4`, "/minimum", ""},
		{"ref into a def's subschema", `{"$defs":{"p":{"properties":{"q":{"type":"string"}}}},"$ref":"#/$defs/p/properties/q"}`, `1`, "/$defs/p/properties/q/type", ""},
		{"ref with escaped name", `{"$defs":{"a/b~c":{"type":"null"}},"$ref":"#/$defs/a~1b~0c"}`, `1`, "/$defs/a~1b~0c/type", ""},
		{"annotations ignored", `{"title":"t","description":"d","$comment":"c","default":5,"examples":[1],"readOnly":true,"writeOnly":false,"deprecated":true,"format":"email"}`, `"not an email"`, "", ""},
		{"schema 2020-12 accepted", `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"null"}`, `null`, "", ""},
		{"schema with empty fragment accepted", `{"$schema":"https://json-schema.org/draft/2020-12/schema#"}`, `null`, "", ""},
		{"instance path escapes keys", `{"additionalProperties":false}`, `{"a/b~":1}`, "/additionalProperties", "/a~1b~0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := mustCompile(t, tt.schema)
			r := s.Validate([]byte(tt.instance))
			if tt.wantPath == "" {
				if !r.Valid || len(r.Diagnostics) != 0 {
					t.Fatalf("Validate(%s) = %+v, want valid", tt.instance, r)
				}
				return
			}
			if r.Valid || len(r.Diagnostics) == 0 {
				t.Fatalf("Validate(%s) = valid, want a violation at %s", tt.instance, tt.wantPath)
			}
			want := tt.wantPath
			if want == "#" {
				want = ""
			}
			d := r.Diagnostics[0]
			if d.Code != CodeSchemaViolation || d.SchemaPath != want || d.InstancePath != tt.wantInstance {
				t.Fatalf("first diagnostic = %+v, want schema_violation at schema %q instance %q", d, want, tt.wantInstance)
			}
		})
	}
}

// TestDiagnosticsCollectSeveralViolations checks that a report lists more
// than the first failure, in a deterministic order.
func TestDiagnosticsCollectSeveralViolations(t *testing.T) {
	t.Parallel()
	s := mustCompile(t, `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}},"required":["c"],"additionalProperties":false}`)
	r := s.Validate([]byte(`{"z":1,"b":"x","a":2}`))
	want := []Diagnostic{
		{CodeSchemaViolation, "", "/required/0"},
		{CodeSchemaViolation, "/a", "/properties/a/type"},
		{CodeSchemaViolation, "/b", "/properties/b/type"},
		{CodeSchemaViolation, "/z", "/additionalProperties"},
	}
	if r.Valid || len(r.Diagnostics) != len(want) {
		t.Fatalf("got %+v, want %+v", r.Diagnostics, want)
	}
	for i := range want {
		if r.Diagnostics[i] != want[i] {
			t.Fatalf("diagnostic %d = %+v, want %+v", i, r.Diagnostics[i], want[i])
		}
	}
}
