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
