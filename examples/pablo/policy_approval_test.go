package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPolicyCheckNamesWhatRequiresApproval: `pablo policy check` says a
// capability needs approval and names the layer and rule that require it,
// in text and in JSON.
func TestPolicyCheckNamesWhatRequiresApproval(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	cfg := filepath.Join(dir, "d.toml")
	os.WriteFile(cfg, []byte("schema_version = 1\n[options.shell]\nenabled = true\n[[authority]]\nid = \"ops\"\n[authority.policy.tools]\ndefault = \"allow\"\nallow = [{ id = \"ops.shell\", value = \"shell.run\", approval = \"required\" }]\n"), 0o600)
	code, out, errs := cli(t, "policy", "check", "shell.run", "--config", cfg, "--bind", "workspace="+ws)
	if code != 0 || !strings.Contains(out, "  approval: required by layer ops rule ops.shell\n") {
		t.Errorf("exit %d:\n%s%s", code, out, errs)
	}
	code, out, errs = cli(t, "policy", "check", "shell.run", "--json", "--config", cfg, "--bind", "workspace="+ws)
	if code != 0 || !strings.Contains(out, `"needs_approval":true,"approval_required_by":{"layer":"ops","rule_id":"ops.shell"}`) {
		t.Errorf("exit %d:\n%s%s", code, out, errs)
	}
}
