package skills

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestBundleMetadataIsReadThroughTheStrictWalk: owner, version, task kinds,
// compatible adapters and credentials are metadata keys of a SKILL.md,
// read by the frontmatter walk every Skill goes through; OpenClaw's
// top-level version stands in for a missing metadata one.
func TestBundleMetadataIsReadThroughTheStrictWalk(t *testing.T) {
	t.Parallel()
	fm, err := ParseFrontmatter([]byte("---\nname: triage\ndescription: Triage tickets.\nmetadata:\n  owner: support-team\n  version: 1.4.0\n  task-kinds: triage review\n  compatible-adapters: pablo claude-code\n  credentials: tickets-token\n---\nBody.\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := Skill{Frontmatter: fm}.Bundle()
	want := Bundle{Owner: "support-team", Version: "1.4.0", TaskKinds: []string{"review", "triage"}, CompatibleAdapters: []string{"claude-code", "pablo"}, Credentials: []string{"tickets-token"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("bundle %+v, want %+v", got, want)
	}
	fm, err = ParseFrontmatter([]byte("---\nname: triage\ndescription: Triage tickets.\nversion: 2.0.1\n---\nBody.\n"))
	if err != nil {
		t.Fatal(err)
	}
	if v := (Skill{Frontmatter: fm}).Bundle().Version; v != "2.0.1" {
		t.Errorf("the top-level version reads %q", v)
	}
}

// TestValidateBundleChecksVersionCredentialsAdapterKindAndContract: each of
// seed 002's bundle checks is one finding: a version that does not resolve,
// a credential the deployment lacks, an adapter the Skill was not written
// for, a task kind it is not for, and an output contract of another JSON
// type than the task's output schema.
func TestValidateBundleChecksVersionCredentialsAdapterKindAndContract(t *testing.T) {
	t.Parallel()
	skill := func(meta map[string]string) Skill {
		return Skill{Root: "r", Frontmatter: Frontmatter{Name: "a", Metadata: meta}}
	}
	ok := Target{Adapter: Adapter, Credential: func(n string) bool { return n == "tickets-token" }, TaskKind: "triage", OutputSchema: json.RawMessage(`{"type":"object"}`)}
	full := map[string]string{MetadataVersion: "1.4.0", MetadataCredentials: "tickets-token", MetadataCompatibleAdapters: "pablo", MetadataTaskKinds: "triage", MetadataOutputSchema: `{"type":"object"}`}
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for a, b := range full {
			m[a] = b
		}
		m[k] = v
		return m
	}
	for _, tc := range []struct {
		name   string
		skill  Skill
		target Target
		want   []Code
	}{
		{"everything holds", skill(full), ok, nil},
		{"nothing declared", skill(nil), Target{}, nil},
		{"version does not resolve", skill(with(MetadataVersion, "latest")), ok, []Code{CodeVersionUnresolved}},
		{"credential missing", skill(with(MetadataCredentials, "tickets-token billing-token")), ok, []Code{CodeCredentialMissing}},
		{"another adapter", skill(with(MetadataCompatibleAdapters, "claude-code")), ok, []Code{CodeAdapterIncompatible}},
		{"another task kind", skill(full), Target{Adapter: Adapter, Credential: ok.Credential, TaskKind: "billing"}, []Code{CodeTaskKindMismatch}},
		{"incompatible contract", skill(with(MetadataOutputSchema, `{"type":"array"}`)), ok, []Code{CodeOutputContractIncompatible}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []Code
			for _, f := range ValidateBundle(tc.skill, tc.target) {
				if f.Root != "r" || f.Dir != "a" || f.Reason == "" {
					t.Errorf("finding lacks its Skill or reason: %+v", f)
				}
				got = append(got, f.Code)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("codes %v, want %v", got, tc.want)
			}
		})
	}
	if !strings.Contains(ValidateBundle(skill(with(MetadataVersion, "x")), ok)[0].Reason, `"x"`) {
		t.Error("the version finding does not quote the version")
	}
}

// TestOutputContractShapeAgainstTheTasksSchema: a contract is compatible
// with the task's output schema when every answer it admits has the shape
// the task requires: the same JSON types where both name one (an integer
// is a number), every property the task requires required by the
// contract, down properties both declare and the items of arrays. Where
// one schema says nothing, nothing is compared; the finding names the
// property that conflicts.
func TestOutputContractShapeAgainstTheTasksSchema(t *testing.T) {
	t.Parallel()
	task := `{"type":"object","required":["summary","items"],"properties":{"summary":{"type":"string"},"score":{"type":"number"},"items":{"type":"array","items":{"type":"object","required":["id"],"properties":{"id":{"type":"string"}}}}}}`
	for _, tc := range []struct {
		name, contract, want string
	}{
		{"the same schema", task, ""},
		{"more required, more declared", `{"type":"object","required":["summary","items","extra"],"properties":{"summary":{"type":"string","maxLength":200},"extra":{"type":"boolean"},"score":{"type":"integer"}}}`, ""},
		{"untyped", `{}`, ""},
		{"another top type", `{"type":"string"}`, "makes the answer a JSON string"},
		{"a required property left optional", `{"type":"object","required":["summary"]}`, `does not require "items"`},
		{"a property of another type", `{"type":"object","required":["summary","items"],"properties":{"summary":{"type":"array"}}}`, `makes "summary" a JSON array and the task's output schema a JSON string`},
		{"an item without the id", `{"type":"object","required":["summary","items"],"properties":{"items":{"type":"array","items":{"type":"object"}}}}`, `does not require "items[].id"`},
		{"items of another type", `{"type":"object","required":["summary","items"],"properties":{"items":{"type":"array","items":{"type":"string"}}}}`, `makes "items[]" a JSON string`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c, k map[string]any
			if err := json.Unmarshal([]byte(tc.contract), &c); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(task), &k); err != nil {
				t.Fatal(err)
			}
			got := shapeConflict(c, k, "", 0)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("conflict %q, want one containing %q", got, tc.want)
			}
		})
	}
	// The contract's integer where the task wants a number holds (an
	// integer is a number); the reverse does not.
	num := map[string]any{"type": "number"}
	integer := map[string]any{"type": "integer"}
	if shapeConflict(integer, num, "", 0) != "" || shapeConflict(num, integer, "", 0) == "" {
		t.Error("integer and number are not ordered as JSON Schema orders them")
	}
	// A schema nested past the bound is not walked further, and the
	// conflict below the bound goes unseen rather than recursing forever.
	deepC, deepT := map[string]any{"type": "string"}, map[string]any{"type": "boolean"}
	for range maxShapeDepth + 4 {
		deepC = map[string]any{"type": "array", "items": deepC}
		deepT = map[string]any{"type": "array", "items": deepT}
	}
	if got := shapeConflict(deepC, deepT, "", 0); got != "" {
		t.Errorf("a conflict past the depth bound was reported: %q", got)
	}
}

// TestValidateBundleNamesTheConflictingProperty: the finding's reason
// names where the contract and the task's schema part.
func TestValidateBundleNamesTheConflictingProperty(t *testing.T) {
	t.Parallel()
	s := Skill{Root: "r", Frontmatter: Frontmatter{Name: "a", Metadata: map[string]string{MetadataOutputSchema: `{"type":"object","required":["summary"]}`}}}
	got := ValidateBundle(s, Target{OutputSchema: json.RawMessage(`{"type":"object","required":["summary","verdict"]}`)})
	if len(got) != 1 || got[0].Code != CodeOutputContractIncompatible || !strings.Contains(got[0].Reason, `"verdict"`) {
		t.Errorf("findings %+v, want one output_contract_incompatible naming \"verdict\"", got)
	}
}
