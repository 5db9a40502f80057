package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recordedCall is a call of `ledger recover --json`.
type recordedCall struct {
	CallID   string `json:"call_id"`
	Status   string `json:"status"`
	Class    string `json:"class"`
	Decision *struct {
		Allowed bool   `json:"allowed"`
		Layer   string `json:"layer"`
		RuleID  string `json:"rule_id"`
	} `json:"decision"`
}

// runOneCall runs `pablo run` with a script of one tool call (ID c1) and a
// bbolt store, and returns the recorded call and the text of `ledger show`
// for the task.
func runOneCall(t *testing.T, cfgBody, tool, args string, setup func(ws string)) (recordedCall, string) {
	t.Helper()
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	if setup != nil {
		setup(ws)
	}
	script := filepath.Join(dir, "script.json")
	os.WriteFile(script, []byte(`{"turns":[{"text":["x"],"tool_calls":[{"id":"c1","name":"`+tool+`","arguments":`+args+`}]},{"text":["done"]}]}`), 0o600)
	cfg := filepath.Join(dir, "d.toml")
	os.WriteFile(cfg, []byte("schema_version = 1\n"+cfgBody), 0o600)
	store := filepath.Join(dir, "ledger.db")
	code, out, errs := cli(t, "run", "go", "--json", "--script", script, "--config", cfg, "--bind", "workspace="+ws, "--store", store)
	var obj struct {
		RunID string `json:"run_id"`
	}
	if json.Unmarshal([]byte(out), &obj) != nil || obj.RunID == "" {
		t.Fatalf("run: exit %d %s %s", code, out, errs)
	}
	_, rec, _ := cli(t, "ledger", "recover", "--store", store, "--json")
	var rep struct {
		Tasks []struct {
			Completed []recordedCall `json:"completed"`
		} `json:"tasks"`
	}
	if json.Unmarshal([]byte(rec), &rep) != nil || len(rep.Tasks) != 1 {
		t.Fatalf("recover: %s", rec)
	}
	for _, c := range rep.Tasks[0].Completed {
		if c.CallID == "c1" {
			_, show, _ := cli(t, "ledger", "show", "--store", store, obj.RunID)
			return c, show
		}
	}
	t.Fatalf("call c1 is not completed: %s", rec)
	return recordedCall{}, ""
}

// TestRecordedDecisionIsTheOneThatDecided: every admitted call records the
// layer and rule that allowed it, every denial (a resource rule, workspace
// confinement, a symlink, the command policy) the layer and rule that
// denied it, and `ledger show` says what `ledger recover --json` says.
func TestRecordedDecisionIsTheOneThatDecided(t *testing.T) {
	const fsOnly = "[options.shell]\nenabled = false\n"
	const docsPolicy = fsOnly + "[options.policy.read_roots]\ndefault = \"allow\"\nallow = [{ id = \"read.docs\", value = \"docs\" }]\ndeny = [{ id = \"no.secret\", value = \"secret\" }]\n"
	const shellPolicy = "[options.shell]\nenabled = true\n[options.shell.commands]\ndefault = \"deny\"\nallow = [{ id = \"t.printf\", executable = \"/usr/bin/printf\", args = [], match = \"prefix\" }]\n"
	files := func(ws string) {
		os.MkdirAll(filepath.Join(ws, "docs"), 0o700)
		os.MkdirAll(filepath.Join(ws, "secret"), 0o700)
		os.WriteFile(filepath.Join(ws, "docs", "a.md"), []byte("a\n"), 0o600)
		os.WriteFile(filepath.Join(ws, "secret", "k"), []byte("k\n"), 0o600)
		os.Symlink("docs/a.md", filepath.Join(ws, "link.md"))
	}
	for _, c := range []struct {
		name, cfg, tool, args string
		allowed               bool
		status, layer, rule   string
	}{
		{"AllowedByRule", docsPolicy, "fs_read", `{"path":"docs/a.md"}`, true, "completed", "options/policy", "read.docs"},
		{"AllowedByConfiguration", fsOnly, "fs_read", `{"path":"docs/a.md"}`, true, "completed", "configuration", "builtin.configured"},
		{"DeniedByResourceRule", docsPolicy, "fs_read", `{"path":"secret/k"}`, false, "policy_denied", "options/policy", "no.secret"},
		{"DeniedByWorkspace", fsOnly, "fs_read", `{"path":"../../etc/passwd"}`, false, "policy_denied", "workspace", "builtin.workspace"},
		{"DeniedBySymlink", fsOnly, "fs_read", `{"path":"link.md"}`, false, "policy_denied", "workspace", "builtin.symlink"},
		{"DeniedByCommandPolicy", shellPolicy, "shell_run", `{"command":"/bin/rm -rf docs","cwd":"."}`, false, "policy_denied", "options/shell", "builtin.commands.allowlist_miss"},
	} {
		t.Run(c.name, func(t *testing.T) {
			call, show := runOneCall(t, c.cfg, c.tool, c.args, files)
			d := call.Decision
			if call.Status != c.status || d == nil || d.Allowed != c.allowed || d.Layer != c.layer || d.RuleID != c.rule {
				b, _ := json.Marshal(call)
				t.Fatalf("recorded %s, want %s allowed=%v layer %q rule %q", b, c.status, c.allowed, c.layer, c.rule)
			}
			verdict := "denied"
			if c.allowed {
				verdict = "allowed"
			}
			want := c.status + "  (" + verdict + " by layer \"" + c.layer + "\" rule \"" + c.rule + "\")"
			if !strings.Contains(show, want) {
				t.Fatalf("ledger show does not say %q:\n%s", want, show)
			}
		})
	}
}
