package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeScriptWithAgentsRuns: the README's script of a supervised
// child (the script format's "agents" and "{{agent_id:CALL}}") runs as
// shown, to the answer its last turn gives.
func TestReadmeScriptWithAgentsRuns(t *testing.T) {
	raw, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	const start = "```json\n{\"turns\": [\n  {\"tool_calls\": [{\"id\": \"s1\""
	i := strings.Index(string(raw), start)
	if i < 0 {
		t.Fatal("the README shows no script with agents")
	}
	block := string(raw[i+len("```json\n"):])
	block = block[:strings.Index(block, "```")]
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "work"), 0o700)
	os.WriteFile(filepath.Join(dir, "s.json"), []byte(block), 0o600)
	cfg := filepath.Join(dir, "d.toml")
	os.WriteFile(cfg, []byte("schema_version = 1\n[options.model]\nprovider = \"script\"\nscript = { base = \"source\", path = \"s.json\" }\n[options.children]\nenabled = true\n"), 0o600)
	code, out, errs := cli(t, "run", "go", "--json", "--config", cfg, "--bind", "workspace="+filepath.Join(dir, "work"))
	var obj struct {
		Outcome struct {
			Output string `json:"output"`
		} `json:"outcome"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &obj) != nil || obj.Outcome.Output != "Region A is done." {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
}
