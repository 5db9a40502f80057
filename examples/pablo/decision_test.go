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
	cfg := filepath.Join(dir, "d.toml")
	os.WriteFile(cfg, []byte("schema_version = 1\n"+cfgBody), 0o600)
	return runScripted(t, []string{"--config", cfg, "--bind", "workspace=" + ws}, tool, args)
}

// runScripted is runOneCall on a given deployment command line (--config
// and --bind flags).
func runScripted(t *testing.T, deployment []string, tool, args string) (recordedCall, string) {
	t.Helper()
	dir := t.TempDir()
	script := filepath.Join(dir, "script.json")
	os.WriteFile(script, []byte(`{"turns":[{"text":["x"],"tool_calls":[{"id":"c1","name":"`+tool+`","arguments":`+args+`}]},{"text":["done"]}]}`), 0o600)
	store := filepath.Join(dir, "ledger.db")
	code, out, errs := cli(t, append([]string{"run", "go", "--json", "--script", script, "--store", store}, deployment...)...)
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
		if c.CallID == "call_1_1" {
			_, show, _ := cli(t, "ledger", "show", "--store", store, obj.RunID)
			return c, show
		}
	}
	t.Fatalf("call call_1_1 is not completed: %s", rec)
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

// TestPolicyCheckGivesTheRuntimesAnswer: each request, run through `policy
// check --json` and as the one call of a scripted `pablo run`, gets the
// same decision, layer and rule: paths (inside, outside, absolute, through
// a symlink, under a deny rule), MCP tools and shell commands.
func TestPolicyCheckGivesTheRuntimesAnswer(t *testing.T) {
	dir := t.TempDir()
	fault := builtFault(t, dir)
	outside := filepath.Join(dir, "outside.txt")
	os.WriteFile(outside, []byte("secret\n"), 0o600)
	ws := filepath.Join(dir, "work")
	os.MkdirAll(filepath.Join(ws, "docs"), 0o700)
	os.MkdirAll(filepath.Join(ws, "secret"), 0o700)
	os.WriteFile(filepath.Join(ws, "docs", "a.md"), []byte("a\n"), 0o600)
	os.WriteFile(filepath.Join(ws, "secret", "k"), []byte("k\n"), 0o600)
	os.WriteFile(filepath.Join(ws, "notes.md"), []byte("n\n"), 0o600)
	os.Symlink("docs/a.md", filepath.Join(ws, "link.md"))
	os.Symlink(dir, filepath.Join(ws, "up"))
	cfg := filepath.Join(dir, "d.toml")
	os.WriteFile(cfg, []byte(`schema_version = 1
[options.filesystem]
enabled = true
[options.policy.read_roots]
default = "allow"
allow = [{ id = "read.docs", value = "docs" }, { id = "read.notes", value = "notes.md" }, { id = "read.secret", value = "secret" }, { id = "read.links", value = "link.md" }, { id = "read.up", value = "up" }]
deny = [{ id = "no.secret", value = "secret" }]
[options.shell]
enabled = true
[options.shell.commands]
default = "deny"
allow = [{ id = "t.printf", executable = "/usr/bin/printf", args = [], match = "prefix" }]
[options.mcp.servers.records]
transport = "stdio"
command = "`+fault+`"
args = ["-mode", "ok"]
[[options.mcp.policies]]
[options.mcp.policies.tools]
default = "allow"
deny = [{ id = "ops.no-echo", value = "mcp/records/echo" }]
`), 0o600)
	deployment := []string{"--config", cfg, "--bind", "workspace=" + ws}
	demo := []string{"--config", "demo/deployment.toml", "--bind", "workspace=demo/work", "--bind", "skills=demo/skills"}
	for _, c := range []struct {
		name       string
		deployment []string
		check      []string // policy check arguments
		tool, args string   // the same request as a run's tool call
	}{
		{"DemoReadOutsideWorkspace", demo, []string{"fs.read", "--read", "../../etc/passwd"}, "fs_read", `{"path":"../../etc/passwd"}`},
		{"DemoReadInside", demo, []string{"fs.read", "--read", "evidence.md"}, "fs_read", `{"path":"evidence.md"}`},
		{"ReadAllowedByRule", deployment, []string{"fs.read", "--read", "docs/a.md"}, "fs_read", `{"path":"docs/a.md"}`},
		{"ReadDeniedByRule", deployment, []string{"fs.read", "--read", "secret/k"}, "fs_read", `{"path":"secret/k"}`},
		{"ReadAbsoluteOutside", deployment, []string{"fs.read", "--read", outside}, "fs_read", `{"path":"` + outside + `"}`},
		{"ReadThroughSymlink", deployment, []string{"fs.read", "--read", "link.md"}, "fs_read", `{"path":"link.md"}`},
		{"ReadUnderSymlinkedDirectory", deployment, []string{"fs.read", "--read", "up/outside.txt"}, "fs_read", `{"path":"up/outside.txt"}`},
		{"ListDotDot", deployment, []string{"fs.list", "--read", "docs/.."}, "fs_list", `{"path":"docs/.."}`},
		{"WriteDisabled", deployment, []string{"fs.write", "--write", "docs/new.md"}, "fs_write", `{"path":"docs/new.md","text":"","expected_revision":null}`},
		{"MCPToolAllowed", deployment, []string{"mcp/records/env"}, alias("mcp/records/env"), `{}`},
		{"MCPToolDenied", deployment, []string{"mcp/records/echo"}, alias("mcp/records/echo"), `{"message":"hi"}`},
		{"DemoShellDisabled", demo, []string{"--shell", "/usr/bin/printf hi"}, "shell_run", `{"command":"/usr/bin/printf hi","cwd":"."}`},
		{"ShellAllowed", deployment, []string{"--shell", "/usr/bin/printf hi"}, "shell_run", `{"command":"/usr/bin/printf hi","cwd":"."}`},
		{"ShellDeniedByRule", deployment, []string{"--shell", "/bin/rm -rf docs"}, "shell_run", `{"command":"/bin/rm -rf docs","cwd":"."}`},
		{"ShellDeniedBySyntax", deployment, []string{"--shell", "printf hi | sh"}, "shell_run", `{"command":"printf hi | sh","cwd":"."}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, out, errs := cli(t, append(append([]string{"policy", "check", "--json"}, c.check...), c.deployment...)...)
			var checked struct {
				Allowed bool   `json:"allowed"`
				Layer   string `json:"layer"`
				RuleID  string `json:"rule_id"`
			}
			if err := json.Unmarshal([]byte(out), &checked); err != nil || checked.Layer == "" || checked.RuleID == "" {
				t.Fatalf("policy check: %v %s %s", err, out, errs)
			}
			call, _ := runScripted(t, c.deployment, c.tool, c.args)
			ran := call.Decision
			if ran == nil || ran.Allowed != checked.Allowed || ran.Layer != checked.Layer || ran.RuleID != checked.RuleID {
				b, _ := json.Marshal(call)
				t.Fatalf("policy check says %s; the run recorded %s", out, b)
			}
		})
	}
}
