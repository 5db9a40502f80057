package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestInitWritesAStarterThatValidates: for every provider, pablo init
// writes a commented deployment that config validate accepts, with the
// workspace binding, the file tools, a shell policy and an MCP server
// example that validates too once uncommented; it never overwrites.
func TestInitWritesAStarterThatValidates(t *testing.T) {
	mcpLine := regexp.MustCompile(`(?m)^# (\[options\.mcp\.servers\.files\]|transport =|command =|args =|cwd =)`)
	for _, provider := range initProviders {
		t.Run(provider, func(t *testing.T) {
			dir := t.TempDir()
			var out strings.Builder
			code := run(t.Context(), []string{"init", "--provider", provider, "--output", "d.toml"}, &host{stdout: &out, stderr: &out, lookupEnv: noEnv, workDir: dir})
			if code != 0 {
				t.Fatalf("exit %d: %s", code, out.String())
			}
			raw, err := os.ReadFile(filepath.Join(dir, "d.toml"))
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"[options.model]", "workspace = { base = \"binding\", name = \"workspace\"", "[options.filesystem]", "[options.shell.commands]", "# [options.mcp.servers.files]", "docs/configuration.md"} {
				if !strings.Contains(string(raw), want) {
					t.Fatalf("the starter lacks %q:\n%s", want, raw)
				}
			}
			validate := func(name string) {
				t.Helper()
				code, stdout, stderr := cli(t, "config", "validate", "--config", filepath.Join(dir, name), "--bind", "workspace="+dir)
				if code != 0 || !strings.HasPrefix(stdout, "valid sha256:") {
					t.Fatalf("%s does not validate: exit %d %s %s", name, code, stdout, stderr)
				}
			}
			validate("d.toml")
			os.WriteFile(filepath.Join(dir, "mcp.toml"), []byte(mcpLine.ReplaceAllString(string(raw), "$1")), 0o600)
			validate("mcp.toml")
			code = run(t.Context(), []string{"init", "--provider", provider, "--output", "d.toml"}, &host{stdout: &out, stderr: &out, lookupEnv: noEnv, workDir: dir})
			if code != 2 || !strings.Contains(out.String(), "never overwrites") {
				t.Fatalf("init overwrote a file: exit %d %s", code, out.String())
			}
		})
	}
	code, _, stderr := cli(t, "init", "--provider", "bedrock", "--output", filepath.Join(t.TempDir(), "x.toml"))
	if code != 2 || !strings.Contains(stderr, "--provider takes one of vercel") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}

func noEnv(string) (string, bool) { return "", false }
