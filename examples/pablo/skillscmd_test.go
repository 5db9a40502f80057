package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A Skill written for Claude Code loads, `skills show` reports its extension
// keys as descriptive metadata, and the tool its allowed-tools list declares
// stays unadmitted: declaring grants nothing.
func TestSkillsShowReportsExtensionsAsInert(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "deployment.toml")
	os.WriteFile(cfg, []byte("schema_version = 1\n[options.skills.roots]\nteam = { base = \"binding\", name = \"skills\", path = \".\" }\n"), 0o600)
	skills := filepath.Join(dir, "skills")
	os.MkdirAll(filepath.Join(skills, "commit-helper"), 0o700)
	os.WriteFile(filepath.Join(skills, "commit-helper", "SKILL.md"), []byte("---\nname: commit-helper\ndescription: Write a commit message.\nallowed-tools:\n  - mcp/records/lookup\nargument-hint: [scope]\nuser-invocable: false\n---\nBody.\n"), 0o600)
	base := []string{"--config", cfg, "--bind", "workspace=" + t.TempDir(), "--bind", "skills=" + skills}
	code, out, errOut := cli(t, append([]string{"skills", "show", "team/commit-helper"}, base...)...)
	want := "  allowed-tools (requirements only, grant nothing): [mcp/records/lookup]\n" +
		"  extensions (descriptive only, grant nothing):\n" +
		"    argument-hint: [\"scope\"]\n" +
		"    user-invocable: \"false\"\n" +
		"  ! team/commit-helper: tool_not_admitted: allowed-tools names \"mcp/records/lookup\""
	if code != 0 || !strings.Contains(out, want) {
		t.Fatalf("show: exit %d\n%s\nstderr: %s\nwant it to contain:\n%s", code, out, errOut, want)
	}
	code, out, _ = cli(t, append([]string{"skills", "show", "team/commit-helper", "--json"}, base...)...)
	if code != 0 || !strings.Contains(out, `"extensions":{"argument-hint":["scope"],"user-invocable":"false"}`) {
		t.Fatalf("show --json: exit %d %s", code, out)
	}
}
