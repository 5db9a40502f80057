package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunRoleFlagGivesTheTaskItsRoles: `pablo run --role` is the task's
// roles: a tool whose configuration requires support-lead is denied
// without it, the ledger naming the missing role, and runs with it; `pablo
// why --role` and `pablo doctor --role` show the readiness check
// "required roles admitted"; a role outside the grammar is a usage error.
func TestRunRoleFlagGivesTheTaskItsRoles(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	cfg := filepath.Join(dir, "d.toml")
	os.WriteFile(cfg, []byte("schema_version = 1\n[options.model]\nprovider = \"script\"\nscript = { base = \"source\", path = \"s.json\" }\n[options.shell]\nenabled = false\n[options.tools]\nmax_recoverable_errors = 0\n[options.required_roles]\n\"fs.list\" = [\"support-lead\"]\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "s.json"), []byte(`{"turns":[{"tool_calls":[{"id":"c1","name":"fs_list","arguments":{"path":"."}}]},{"text":["done"]}]}`), 0o600)
	deploy := []string{"--config", cfg, "--bind", "workspace=" + ws}
	for _, c := range []struct {
		roles  []string
		status string
	}{{nil, "policy_denied"}, {[]string{"support-lead"}, "completed"}} {
		store := filepath.Join(t.TempDir(), "ledger.db")
		args := append([]string{"run", "go", "--json", "--store", store}, deploy...)
		for _, r := range c.roles {
			args = append(args, "--role", r)
		}
		_, out, errs := cli(t, args...)
		var obj struct {
			RunID   string `json:"run_id"`
			Outcome struct {
				Status string `json:"status"`
			} `json:"outcome"`
		}
		if json.Unmarshal([]byte(out), &obj) != nil || obj.Outcome.Status != c.status {
			t.Fatalf("run with roles %v: %s %s, want %s", c.roles, out, errs, c.status)
		}
		if c.status == "completed" {
			continue
		}
		_, js, _ := cli(t, "ledger", "show", "--json", "--store", store, obj.RunID)
		if !strings.Contains(js, `"missing_role":"support-lead"`) {
			t.Errorf("ledger show --json does not name the missing role: %s", js)
		}
	}
	code, out, _ := cli(t, append([]string{"why", "fs.list"}, deploy...)...)
	if code != 1 || !strings.Contains(out, "support-lead") {
		t.Errorf("why fs.list without the role: exit %d\n%s", code, out)
	}
	if code, out, _ := cli(t, append([]string{"why", "fs.list", "--role", "support-lead"}, deploy...)...); code != 0 {
		t.Errorf("why fs.list --role support-lead: exit %d\n%s", code, out)
	}
	for _, c := range []struct {
		roles []string
		want  string
	}{{nil, `"name":"roles","status":"warning"`}, {[]string{"support-lead"}, `"name":"roles","status":"ok"`}} {
		args := append([]string{"doctor", "--json"}, deploy...)
		for _, r := range c.roles {
			args = append(args, "--role", r)
		}
		_, out, _ := cli(t, args...)
		if !strings.Contains(out, c.want) {
			t.Errorf("doctor with roles %v does not report %s:\n%s", c.roles, c.want, out)
		}
	}
	if code, _, errs := cli(t, append([]string{"run", "go", "--role", "Support Lead"}, deploy...)...); code != 2 || !strings.Contains(errs, "--role") {
		t.Errorf("an invalid --role: exit %d %s", code, errs)
	}
}
