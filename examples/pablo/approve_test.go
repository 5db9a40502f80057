package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLedgerShowPrintsApprovals: a call that needs approval (here by
// options.approvals.filesystem_write) runs under `pablo run --approve`
// with its request and answer in the ledger, which `ledger show` prints
// bound to the call; without --approve there is no channel, and the call
// is denied under builtin.approval, recorded as no_channel.
func TestLedgerShowPrintsApprovals(t *testing.T) {
	for _, c := range []struct {
		name   string
		flags  []string
		status string
		want   []string
	}{
		{"Approved", []string{"--approve", "fs.write"}, "completed", []string{`rule "approval.requested": call c1 arguments sha256:`, `allowed by layer "approval" rule "approval.allow_once": call c1 arguments sha256:`, "effect write"}},
		{"NoChannel", nil, "policy_denied", []string{`denied by layer "approval" rule "approval.no_channel": call c1`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			ws := filepath.Join(dir, "work")
			os.Mkdir(ws, 0o700)
			cfg := filepath.Join(dir, "d.toml")
			os.WriteFile(cfg, []byte("schema_version = 1\n[options.model]\nprovider = \"script\"\nscript = { base = \"source\", path = \"s.json\" }\n[options.filesystem]\nwrite = true\n[options.approvals]\nfilesystem_write = \"required\"\n"), 0o600)
			os.WriteFile(filepath.Join(dir, "s.json"), []byte(`{"turns":[{"tool_calls":[{"id":"c1","name":"fs_write","arguments":{"path":"a.txt","text":"x","expected_revision":null}}]},{"text":["done"]}]}`), 0o600)
			store := filepath.Join(dir, "ledger.db")
			_, out, errs := cli(t, append([]string{"run", "go", "--json", "--config", cfg, "--bind", "workspace=" + ws, "--store", store}, c.flags...)...)
			var obj struct {
				RunID   string `json:"run_id"`
				Outcome struct {
					Status string `json:"status"`
				} `json:"outcome"`
			}
			if json.Unmarshal([]byte(out), &obj) != nil || obj.Outcome.Status != c.status {
				t.Fatalf("run: %s %s, want %s", out, errs, c.status)
			}
			_, show, _ := cli(t, "ledger", "show", "--store", store, obj.RunID)
			for _, w := range c.want {
				if !strings.Contains(show, w) {
					t.Errorf("ledger show does not say %q:\n%s", w, show)
				}
			}
		})
	}
}
