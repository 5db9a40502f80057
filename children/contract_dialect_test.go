package children

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/pabloagent/pablo/internal/output"
	"github.com/pabloagent/pablo/skills"
)

// One JSON Schema dialect for every schema a user writes: a Skill's output
// contract (metadata output-schema), a child's output_schema and the task's
// output schema are accepted or refused alike, by internal/schema's bounded
// subset. Skill contracts were checked by jsonschema-go, which accepted
// pattern, patternProperties, uniqueItems, contains, unevaluated*, $id,
// $anchor, unknown keywords, duplicate keys and references outside $defs
// that a child's output_schema refused.
func TestOutputContractIsAcceptedAlikeBySkillsChildrenAndTheOutputCheck(t *testing.T) {
	t.Parallel()
	tr, _, _ := newTree(t, nil)
	for _, tc := range []struct {
		name, schema string
		ok           bool
	}{
		{"an object contract", `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}`, true},
		{"a $defs reference", `{"$defs":{"n":{"type":"integer"}},"type":"object","properties":{"n":{"$ref":"#/$defs/n"}}}`, true},
		{"an annotated format", `{"type":"string","format":"date","description":"d"}`, true},
		{"a boolean schema", `true`, true},
		{"pattern", `{"type":"string","pattern":"^a+$"}`, false},
		{"patternProperties", `{"type":"object","patternProperties":{"^x":{"type":"string"}}}`, false},
		{"uniqueItems", `{"type":"array","uniqueItems":true}`, false},
		{"contains", `{"type":"array","contains":{"type":"integer"}}`, false},
		{"unevaluatedProperties", `{"type":"object","unevaluatedProperties":false}`, false},
		{"$id", `{"$id":"https://example.com/s","type":"object"}`, false},
		{"$anchor", `{"$defs":{"n":{"$anchor":"n","type":"integer"}}}`, false},
		{"an unknown keyword", `{"type":"object","requried":["n"]}`, false},
		{"a duplicate key", `{"type":"object","type":"string"}`, false},
		{"a reference outside $defs", `{"properties":{"a":{"type":"integer"},"b":{"$ref":"#/properties/a"}}}`, false},
		{"a remote reference", `{"$ref":"https://example.com/s.json"}`, false},
		{"a Draft 7 dialect", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object"}`, false},
		{"not JSON", `{"type":`, false},
		{"an array", `[1]`, false},
	} {
		sk := skills.Skill{Root: "r", Frontmatter: skills.Frontmatter{Name: "a", Description: "d", Metadata: map[string]string{skills.MetadataOutputSchema: tc.schema}}}
		skillOK := true
		for _, f := range skills.Validate(sk, nil, nil) {
			if f.Code == skills.CodeInvalidOutputContract {
				skillOK = false
			}
		}
		_, err := tr.Spawn(context.Background(), Request{Input: "x", OutputSchema: json.RawMessage(tc.schema)})
		var ce *Error
		if err != nil && (!errors.As(err, &ce) || ce.Code != CodeInvalidOutputSchema) {
			t.Fatalf("%s: spawn failed for another reason: %v", tc.name, err)
		}
		childOK := err == nil
		_, err = output.New(&output.Spec{Schema: tc.schema})
		checkOK := err == nil
		if skillOK != tc.ok || childOK != tc.ok || checkOK != tc.ok {
			t.Errorf("%s: Skill contract accepted %v, child output_schema %v, task output check %v; want %v everywhere", tc.name, skillOK, childOK, checkOK, tc.ok)
		}
	}
}
