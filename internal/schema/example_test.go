package schema_test

import (
	"errors"
	"fmt"

	"github.com/pabloagent/pablo/internal/schema"
)

// Compile a tool-argument schema once, then validate calls against it.
func Example() {
	s, err := schema.Compile([]byte(`{
		"type": "object",
		"properties": {
			"path":  {"type": "string", "minLength": 1},
			"limit": {"type": "integer", "minimum": 1, "maximum": 1000}
		},
		"required": ["path"],
		"additionalProperties": false
	}`), schema.Limits{})
	if err != nil {
		fmt.Println(err)
		return
	}

	fmt.Println(s.Validate([]byte(`{"path":"README.md","limit":10}`)).Valid)

	r := s.Validate([]byte(`{"limit":0,"recursive":true}`))
	for _, d := range r.Diagnostics {
		fmt.Printf("%s at %q (schema %q)\n", d.Code, d.InstancePath, d.SchemaPath)
	}

	_, err = schema.Compile([]byte(`{"type":"string","pattern":"^a"}`), schema.Limits{})
	fmt.Println(errors.Is(err, schema.ErrUnsupported))
	fmt.Println(err)
	// Output:
	// true
	// schema_violation at "" (schema "/required/0")
	// schema_violation at "/limit" (schema "/properties/limit/minimum")
	// schema_violation at "/recursive" (schema "/additionalProperties")
	// true
	// schema: unsupported schema feature: keyword "pattern" at "#": regular expressions are not supported; constrain the string with enum, const, minLength or maxLength
}

// A Cache owned by the caller compiles each distinct schema once.
func ExampleCache() {
	var c schema.Cache // zero value: 16 entries, default limits
	a, _ := c.Compile([]byte(`{"type":"string"}`))
	b, _ := c.Compile([]byte(`{ "type" : "string" }`))
	fmt.Println(a == b, c.Len())
	// Output: true 1
}

// The record carried by a task envelope or an inline handoff.
func ExampleSchema_Record() {
	s, _ := schema.Compile([]byte(`{"type":"object","required":["answer"]}`), schema.Limits{})
	rec := s.Record(s.Validate([]byte(`{}`)))
	fmt.Println(rec.SchemaVersion, rec.Status, rec.Diagnostics[0].SchemaPath)
	// Output: output-validation-v1 invalid /required/0
}
