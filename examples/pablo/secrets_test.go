package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The model's output reaches stdout masked, in text mode and in --json,
// and so does every tool call it writes (stderr shows the arguments).
func TestModelOutputIsMaskedOnStdout(t *testing.T) {
	const key = "AKIAIOSFODNN7EXAMPLE"
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	os.WriteFile(filepath.Join(ws, key+".txt"), []byte("a\n"), 0o600)
	script := filepath.Join(dir, "script.json")
	os.WriteFile(script, []byte(`{"turns":[{"text":["Reading with `+key[:8]+`","`+key[8:]+`."],"tool_calls":[{"name":"fs_read","arguments":{"path":"`+key+`.txt"}}]},{"text":["The key is `+key+`."]}]}`), 0o600)
	cfg := filepath.Join(dir, "d.toml")
	os.WriteFile(cfg, []byte("schema_version = 1\n[options.shell]\nenabled = false\n"), 0o600)
	for _, mode := range [][]string{nil, {"--json"}} {
		_, out, errs := cli(t, append([]string{"run", "go", "--script", script, "--config", cfg, "--bind", "workspace=" + ws}, mode...)...)
		if strings.Contains(out+errs, key[:8]) || strings.Contains(out+errs, key[8:]) {
			t.Fatalf("%v: the key reached the terminal:\n%s\n%s", mode, out, errs)
		}
		want := "Reading with [redacted].\nThe key is [redacted].\n"
		if mode != nil {
			want = `"output":"The key is [redacted].","masked":1`
		}
		if !strings.Contains(out, want) {
			t.Fatalf("%v: stdout %q lacks %q", mode, out, want)
		}
	}
}
