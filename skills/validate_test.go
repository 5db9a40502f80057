package skills

import (
	"reflect"
	"testing"
)

func TestRequirementsComeFromDeclarationsOnly(t *testing.T) {
	cat, _ := discoverCorpus(t)
	s, err := cat.Lookup("team/with-tools")
	must(t, err)
	got := s.Requirements()
	if !reflect.DeepEqual(got.Tools, []string{"fs.read", "mcp/records/lookup", "skill.read"}) ||
		!reflect.DeepEqual(got.MCPServers, []string{"records"}) || len(got.OutputSchema) == 0 {
		t.Fatalf("requirements %+v", got)
	}
}

func TestValidateReportsUnadmittedRequirements(t *testing.T) {
	t.Parallel()
	skill := Skill{Root: "r", Frontmatter: Frontmatter{Name: "a",
		AllowedTools: []string{"fs.read", "mcp/records/lookup", "Bash(git:*)"},
		Metadata:     map[string]string{MetadataMCPServers: "records evidence", MetadataOutputSchema: `{"type":"object"}`},
	}}
	set := func(items ...string) func(string) bool {
		return func(s string) bool {
			for _, i := range items {
				if i == s {
					return true
				}
			}
			return false
		}
	}
	codes := func(fs []Finding) []Code {
		var out []Code
		for _, f := range fs {
			if f.Root != "r" || f.Dir != "a" || f.Reason == "" {
				t.Errorf("finding lacks its Skill or reason: %+v", f)
			}
			out = append(out, f.Code)
		}
		return out
	}
	tests := []struct {
		name     string
		skill    Skill
		admitted func(string) bool
		servers  func(string) bool
		want     []Code
	}{
		{"everything admitted", skill, set("fs.read", "mcp/records/lookup", "Bash(git:*)"), set("records", "evidence"), nil},
		{"nil admits nothing", skill, nil, nil, []Code{CodeToolNotAdmitted, CodeToolNotAdmitted, CodeToolNotAdmitted, CodeMCPServerMissing, CodeMCPServerMissing}},
		{"one server missing", skill, set("fs.read", "mcp/records/lookup", "Bash(git:*)"), set("records"), []Code{CodeMCPServerMissing}},
		{"invalid output contract", Skill{Root: "r", Frontmatter: Frontmatter{Name: "a", Metadata: map[string]string{MetadataOutputSchema: "[1]"}}}, nil, nil, []Code{CodeInvalidOutputContract}},
		{"output contract with remote ref", Skill{Root: "r", Frontmatter: Frontmatter{Name: "a", Metadata: map[string]string{MetadataOutputSchema: `{"$ref":"https://example.com/s.json"}`}}}, nil, nil, []Code{CodeInvalidOutputContract}},
		{"no declarations", Skill{Root: "r", Frontmatter: Frontmatter{Name: "a"}}, nil, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := codes(Validate(tt.skill, tt.admitted, tt.servers))
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("codes %v, want %v", got, tt.want)
			}
		})
	}
}
