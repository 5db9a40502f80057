package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestInspectorSkillsPageShowsRequirementsAndContract: a Skill's card on
// the Skills page lists what it requires with each requirement's
// readiness (fs.read ready, shell.run missing from a stack without a
// shell), its output contract, and its metadata, escaped (a hostile
// metadata value appears as text, never raw).
func TestInspectorSkillsPageShowsRequirementsAndContract(t *testing.T) {
	tmp := t.TempDir()
	skill := "---\nname: report\ndescription: Reports.\nallowed-tools: fs.read\nmetadata:\n  output-schema: '{\"type\":\"object\",\"required\":[\"verdict\"],\"properties\":{\"verdict\":{\"type\":\"string\"}}}'\n  owner: '" +
		strings.ReplaceAll(xssPayloads[1], "'", "''") + "'\n---\nReport the verdict.\n"
	if err := os.MkdirAll(filepath.Join(tmp, "skills", "report"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "skills", "report", "SKILL.md"), []byte(skill), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(tmp, "stack.toml")
	if err := os.WriteFile(cfg, []byte("schema_version = 1\n[options.shell]\nenabled = false\n[options.skills.roots]\nteam = { base = \"binding\", name = \"skills\", path = \".\" }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, page := get(t, newTestInspector(t, []string{"--config", cfg, "--bind", "workspace=" + tmp, "--bind", "skills=" + filepath.Join(tmp, "skills")}, ""), "/skills")
	reqs, texts := attrValues(t, page, "data-requires")
	if i := slices.Index(reqs, "tool:fs.read"); i < 0 || !strings.Contains(texts[i], "ready") {
		t.Errorf("the Skill's requirements are %q %q, want tool:fs.read ready", reqs, texts)
	}
	if !strings.Contains(page, `class="preview contract">{&#34;type&#34;:&#34;object&#34;`) {
		t.Errorf("the Skills page does not show the output contract:\n%s", page)
	}
	if !strings.Contains(page, "<dt>owner</dt>") || !strings.Contains(page, "pablo-xss-2") || strings.Contains(page, xssPayloads[1]) {
		t.Errorf("the Skills page does not show the metadata, or shows it raw:\n%s", page)
	}
	assertInert(t, "/skills", page)
}
