package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestInspectorToolsPageShowsTheProfile: the Tools page of the locked
// production preset beside a stack without a shell lists each tool's
// readiness in each stack (shell.run not offered by the second; on the
// MCP page, the evidence server configured by the first only), the
// native tool switches with the shell's sandbox and network scope, and
// every rule list of every layer with its default and its rules' IDs:
// the literal command allowlist of both the options and the
// production.read_only layer. On the approval-gated golden it shows the
// approval policy by tool class and the rule that asks.
func TestInspectorToolsPageShowsTheProfile(t *testing.T) {
	dir := t.TempDir()
	noShell := filepath.Join(dir, "noshell.toml")
	if err := os.WriteFile(noShell, []byte("schema_version = 1\n[options.shell]\nenabled = false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := append(screenshotArgs(dir), "--config", noShell)
	_, page := get(t, newTestInspector(t, args, ""), "/tools")
	uses, texts := attrValues(t, page, "data-tool-use")
	i := slices.Index(uses, "tool:shell.run")
	if i < 0 || !strings.Contains(texts[i], "ready") || !strings.Contains(texts[i], "not offered") {
		t.Errorf("the tools-across-stacks row of shell.run says %q (rows %q)", texts[max(i, 0)], uses)
	}
	_, mcpPage := get(t, newTestInspector(t, args, ""), "/mcp")
	servers, stexts := attrValues(t, mcpPage, "data-server-use")
	if i := slices.Index(servers, "mcp:evidence"); i < 0 || !strings.Contains(stexts[i], "missing_grant") || !strings.Contains(stexts[i], "not configured") {
		t.Errorf("the MCP page's across-stacks row of mcp:evidence says %q (rows %q)", stexts[max(i, 0)], servers)
	}
	lists, ltexts := attrValues(t, page, "data-list")
	for list, want := range map[string][]string{
		"options shell/commands":                  {"deny", "preset.printf", "/usr/bin/printf (prefix)"},
		"production.read_only shell/commands":     {"deny", "production.printf", "/usr/bin/printf (prefix)"},
		"production.read_only mcp/tools":          {"deny", "production.evidence_read", "mcp/evidence/read_evidence"},
		"production.read_only policy/write_roots": {"deny"},
	} {
		j := slices.Index(lists, list)
		if j < 0 {
			t.Errorf("the Tools page has no rule list %q (it has %q)", list, lists)
			continue
		}
		for _, w := range want {
			if !strings.Contains(ltexts[j], w) {
				t.Errorf("the rule list %q says %q, without %q", list, ltexts[j], w)
			}
		}
	}
	if !strings.Contains(page, "enabled, sandbox required: filesystem read-only, network deny") || !strings.Contains(page, "enabled, read-only") {
		t.Errorf("the Tools page does not show the native tools' switches and scope:\n%s", page)
	}

	for _, c := range readinessCases(t) {
		if c.name != "readiness-approval-gated" {
			continue
		}
		_, page := get(t, newTestInspector(t, c.args, c.bubblewrap), "/tools")
		classes, ctexts := attrValues(t, page, "data-approval-class")
		if !slices.Equal(classes, []string{"mcp"}) || ctexts[0] != "required" {
			t.Errorf("the approval policy by tool class says %q %q, the golden sets mcp = required", classes, ctexts)
		}
		rules, rtexts := attrValues(t, page, "data-rule")
		if j := slices.Index(rules, "ops.write"); j < 0 || !strings.Contains(rtexts[j], "fs.write") || !strings.Contains(rtexts[j], "approval required") {
			t.Errorf("the rule ops.write is not shown asking for approval: %q", rtexts)
		}
		return
	}
	t.Fatal("no readiness-approval-gated golden")
}
