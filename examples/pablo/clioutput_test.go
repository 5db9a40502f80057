package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// options.interfaces.cli_output = "json" makes pablo run print the task
// object as JSON, as --json does; "text" prints the answer.
func TestCLIOutputFromTheDeployment(t *testing.T) {
	for _, c := range []struct {
		output string
		json   bool
	}{{"json", true}, {"text", false}} {
		t.Run(c.output, func(t *testing.T) {
			dir := t.TempDir()
			ws := filepath.Join(dir, "work")
			os.Mkdir(ws, 0o700)
			os.WriteFile(filepath.Join(dir, "script.json"), []byte(`{"turns":[{"text":["Paid."]}]}`), 0o600)
			cfg := filepath.Join(dir, "d.toml")
			os.WriteFile(cfg, []byte("schema_version = 1\n[options.model]\nprovider = \"script\"\nscript = { base = \"source\", path = \"script.json\" }\n"+
				"[options.shell]\nenabled = false\n[options.interfaces]\ncli_output = \""+c.output+"\"\n"), 0o600)
			code, out, errs := runWithEnv(t, nil, "run", "Was it paid?", "--config", cfg, "--bind", "workspace="+ws)
			if code != 0 {
				t.Fatalf("exit %d: %s %s", code, out, errs)
			}
			var obj map[string]any
			isJSON := json.Unmarshal([]byte(out), &obj) == nil && obj["outcome"] != nil
			if isJSON != c.json || !strings.Contains(out, "Paid.") {
				t.Fatalf("cli_output = %q printed %q", c.output, out)
			}
		})
	}
}
