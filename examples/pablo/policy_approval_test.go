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

// TestPolicyCheckRemoteNamesItsApproval: `pablo policy check --remote NAME`
// decides a spawn_remote to that remote: one whose [[authority]]
// a2a_remotes entry requires approval says so, naming the layer and the
// entry's rule; one whose entry does not, allowed without a question.
func TestPolicyCheckRemoteNamesItsApproval(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	cfg := filepath.Join(dir, "d.toml")
	const card, ep = "https://agents.example.com/.well-known/agent-card.json", "https://agents.example.com/a2a"
	doc := "schema_version = 1\n[options.children]\nenabled = true\n"
	for _, n := range []string{"a", "c"} {
		doc += "[options.a2a.remotes." + n + "]\ncard_url = \"" + card + "\"\nendpoint = \"" + ep + "\"\n"
	}
	doc += "[[authority]]\nid = \"ops\"\n[authority.a2a_remotes]\na = { card_url = \"" + card + "\", endpoint = \"" + ep + "\", approval = \"required\" }\nc = { card_url = \"" + card + "\", endpoint = \"" + ep + "\" }\n"
	os.WriteFile(cfg, []byte(doc), 0o600)
	code, out, errs := cli(t, "policy", "check", "--remote", "a", "--config", cfg, "--bind", "workspace="+ws)
	if code != 0 || !strings.Contains(out, "allowed subagent\n") || !strings.Contains(out, "  approval: required by layer ops rule a2a_remotes.a\n") {
		t.Errorf("exit %d:\n%s%s", code, out, errs)
	}
	code, out, errs = cli(t, "policy", "check", "--remote", "c", "--json", "--config", cfg, "--bind", "workspace="+ws)
	if code != 0 || strings.Contains(out, "needs_approval") || !strings.Contains(out, `"rule_id":"a2a_remotes.c"`) {
		t.Errorf("exit %d:\n%s%s", code, out, errs)
	}
	code, out, errs = cli(t, "policy", "check", "--remote", "ghost", "--config", cfg, "--bind", "workspace="+ws)
	if code != 2 {
		t.Errorf("an unconfigured remote: exit %d:\n%s%s", code, out, errs)
	}
}
