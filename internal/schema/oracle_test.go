package schema

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// oracleSchemas are subset schemas whose meaning jsonschema-go shares.
var oracleSchemas = []string{
	`true`, `false`, `{}`,
	`{"type":"object","properties":{"name":{"type":"string","minLength":1,"maxLength":8},"n":{"type":"integer","minimum":0,"exclusiveMaximum":100}},"required":["name"],"additionalProperties":false}`,
	`{"type":"array","prefixItems":[{"type":"string"},{"type":"number"}],"items":{"type":"boolean"},"minItems":1,"maxItems":4}`,
	`{"anyOf":[{"type":"string"},{"type":"null"}],"not":{"const":"x"}}`,
	`{"oneOf":[{"type":"integer"},{"type":"number","multipleOf":0.5}]}`,
	`{"if":{"type":"object","required":["kind"]},"then":{"properties":{"kind":{"enum":["a","b",1,[1],{"k":null}]}}},"else":{"type":["array","string"]}}`,
	`{"$defs":{"item":{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]}},"type":"array","items":{"$ref":"#/$defs/item"}}`,
	`{"dependentRequired":{"a":["b","c"]},"dependentSchemas":{"b":{"maxProperties":2}},"propertyNames":{"maxLength":3},"minProperties":1}`,
	`{"allOf":[{"type":"number","minimum":-5},{"maximum":5.5},{"exclusiveMinimum":-5}]}`,
}

// oracleInstances are float-safe instances (no number jsonschema-go would
// round), without duplicate keys.
var oracleInstances = []string{
	`null`, `true`, `0`, `-5`, `5.5`, `99`, `100`, `1.5`, `2`, `"x"`, `""`, `"abcdefghi"`, `[]`, `{}`,
	`{"name":"al"}`, `{"name":""}`, `{"name":"al","n":3}`, `{"name":"al","n":3.5}`, `{"name":"al","extra":1}`,
	`["a",1,true,false]`, `["a",1,true,false,true]`, `[1]`, `["a"]`, `["a","b"]`,
	`{"kind":"a"}`, `{"kind":"c"}`, `{"kind":[1]}`, `{"kind":{"k":null}}`, `{"kind":1.0}`,
	`[{"id":1},{"id":2}]`, `[{"id":"1"}]`, `[{}]`,
	`{"a":1,"b":2,"c":3}`, `{"a":1}`, `{"b":1,"c":2,"d":3}`, `{"long":1}`, `{"b":1}`,
}

// oracleResolve reads src with jsonschema-go.
func oracleResolve(t testing.TB, src string) *jsonschema.Resolved {
	t.Helper()
	var js jsonschema.Schema
	if err := json.Unmarshal([]byte(src), &js); err != nil {
		t.Fatalf("jsonschema-go cannot read %s: %v", src, err)
	}
	rs, err := js.Resolve(nil)
	if err != nil {
		t.Fatalf("jsonschema-go cannot resolve %s: %v", src, err)
	}
	return rs
}

// oracleValid returns jsonschema-go's verdict on inst.
func oracleValid(t testing.TB, rs *jsonschema.Resolved, inst []byte) bool {
	t.Helper()
	var v any
	if err := json.Unmarshal(inst, &v); err != nil {
		t.Fatalf("instance %s: %v", inst, err)
	}
	return rs.Validate(v) == nil
}

// TestAgreesWithJSONSchemaGo cross-checks verdicts with jsonschema-go on
// inputs where both implementations define the same meaning.
func TestAgreesWithJSONSchemaGo(t *testing.T) {
	t.Parallel()
	for i, src := range oracleSchemas {
		s := mustCompile(t, src)
		rs := oracleResolve(t, src)
		for _, inst := range oracleInstances {
			t.Run(strconv.Itoa(i)+"/"+inst, func(t *testing.T) {
				got := s.Validate([]byte(inst))
				checkDiagnosticBounds(t, got)
				if want := oracleValid(t, rs, []byte(inst)); got.Valid != want {
					t.Fatalf("schema %s, instance %s: valid=%v, jsonschema-go says %v (%+v)", src, inst, got.Valid, want, got.Diagnostics)
				}
			})
		}
	}
}
