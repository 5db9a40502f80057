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

// TestMCPProbeStartsNpmServersThroughTheirShims: server-everything and
// server-filesystem, configured with the .bin shims npm installs and
// nothing else, pass `pablo mcp probe` under the default sandbox.
func TestMCPProbeStartsNpmServersThroughTheirShims(t *testing.T) {
	if os.Getenv("PABLO_SKIP_PEERS") == "1" {
		t.Skip("real-peer test skipped: PABLO_SKIP_PEERS=1")
	}
	bin := filepath.Join(npmPrefix(), "node_modules", ".bin")
	for _, shim := range []string{"mcp-server-everything", "mcp-server-filesystem"} {
		if _, err := os.Stat(filepath.Join(bin, shim)); err != nil {
			t.Fatalf("%s is not installed under %s (run sh scripts/install-peers.sh, set PABLO_NPM_PREFIX, or opt out with PABLO_SKIP_PEERS=1): %v", shim, npmPrefix(), err)
		}
	}
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	cfg := filepath.Join(dir, "d.toml")
	os.WriteFile(cfg, []byte(`schema_version = 1
[options.mcp.servers.everything]
transport = "stdio"
command = "`+filepath.Join(bin, "mcp-server-everything")+`"
required = true
[options.mcp.servers.filesystem]
transport = "stdio"
command = "`+filepath.Join(bin, "mcp-server-filesystem")+`"
args = ["`+ws+`"]
required = true
`), 0o600)
	var stdout, stderr bytes.Buffer
	h := &host{stdout: &stdout, stderr: &stderr, lookupEnv: os.LookupEnv, workDir: dir}
	code := run(context.Background(), []string{"mcp", "probe", "--json", "--config", cfg, "--bind", "workspace=" + ws}, h)
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, stdout.String(), stderr.String())
	}
	var got struct {
		Servers []struct {
			Server, State string
			Tools         []struct{ Admitted bool }
		}
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("%v: %s", err, stdout.String())
	}
	if len(got.Servers) != 2 {
		t.Fatalf("servers: %s", stdout.String())
	}
	for _, s := range got.Servers {
		admitted := 0
		for _, tool := range s.Tools {
			if tool.Admitted {
				admitted++
			}
		}
		// server-everything lists one tool that needs MCP tasks, which
		// this client does not run: Degraded, its other tools admitted.
		if (s.State != "Ready" && s.State != "Degraded") || admitted == 0 {
			t.Errorf("%s: %s with %d tools admitted", s.Server, s.State, admitted)
		}
	}
}
