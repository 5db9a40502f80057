package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMCPProbeShowsDigestsAndReferencesNeverValues(t *testing.T) {
	dir := t.TempDir()
	bin := builtFault(t, dir)
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	cfg := filepath.Join(dir, "d.toml")
	os.WriteFile(cfg, []byte(`schema_version = 1
[credentials.records]
consumer = "mcp.env"
sources = [{ kind = "environment", name = "RECORDS_TOKEN" }]
[options.mcp.servers.records]
transport = "stdio"
command = "`+bin+`"
args = ["-mode", "ok"]
env = { PABLO_TEST_TOKEN = "records" }
`), 0o600)
	var stdout, stderr bytes.Buffer
	env := map[string]string{"RECORDS_TOKEN": "value-never-printed"}
	h := &host{stdout: &stdout, stderr: &stderr, lookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }, workDir: dir}
	code := run(context.Background(), []string{"mcp", "probe", "--config", cfg, "--bind", "workspace=" + ws}, h)
	out := stdout.String()
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, stderr.String())
	}
	for _, want := range []string{"records (stdio): Degraded, protocol 2025-11-25", "admitted mcp/records/echo", `pin: echo = "sha256:`, "credential: env PABLO_TEST_TOKEN <- records", "unavailable mcp/records/unsupported-schema"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out+stderr.String(), "value-never-printed") {
		t.Fatal("a credential value was printed")
	}
}

// TestMCPProbeKeepsTheConfiguredRequiredFlag: the probe opens every server
// as optional, but reports each one as the deployment configures it.
func TestMCPProbeKeepsTheConfiguredRequiredFlag(t *testing.T) {
	dir := t.TempDir()
	bin := builtFault(t, dir)
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	cfg := filepath.Join(dir, "d.toml")
	os.WriteFile(cfg, []byte(`schema_version = 1
[options.mcp.servers.records]
transport = "stdio"
command = "`+bin+`"
args = ["-mode", "ok"]
required = true
[options.mcp.servers.notes]
transport = "stdio"
command = "`+bin+`"
args = ["-mode", "ok"]
required = false
`), 0o600)
	code, out, errOut := cli(t, "mcp", "probe", "--json", "--config", cfg, "--bind", "workspace="+ws)
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	var report struct {
		Servers []struct {
			Server   string `json:"server"`
			Required bool   `json:"required"`
		} `json:"servers"`
	}
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, s := range report.Servers {
		got[s.Server] = s.Required
	}
	if len(got) != 2 || !got["records"] || got["notes"] {
		t.Errorf("required flags %v, want records required and notes not", got)
	}
}
