package pablo

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pabloagent/pablo/approval"
	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/mcp"
)

// TestUnrestrictedWithApprovalAsksAboutEveryCall: under network
// "unrestricted-with-approval" every call of the tool asks the approver,
// even the same call again after an "allow for this task" answer, and the
// request says why (builtin.approval.unrestricted_network, the sandbox's
// network); under network "allow" that answer covers the repeated call.
// It holds for shell.run and for a stdio MCP server's tool.
func TestUnrestrictedWithApprovalAsksAboutEveryCall(t *testing.T) {
	bin := buildFaultServer(t)
	mcpTool := mcp.Alias("mcp/records/env")
	server := func(network string) string {
		return "[options.mcp.servers.records]\ntransport = \"stdio\"\ncommand = \"" + bin + "\"\nargs = [\"-mode\", \"ok\"]\nsandbox = { network = \"" + network + "\" }\n"
	}
	shell := func(network string) string {
		return "[options.shell]\nenabled = true\n[options.shell.sandbox]\nnetwork = \"" + network + "\"\n"
	}
	twice := func(name, args string) string {
		call := func(id string) string { return `{"id":"` + id + `","name":"` + name + `","arguments":` + args + `}` }
		return `{"turns":[{"tool_calls":[` + call("c1") + `]},{"tool_calls":[` + call("c2") + `]},{"text":["done"]}]}`
	}
	for _, c := range []struct {
		name, body, script string
		tool               authority.ID
		asks               int
		rule               string
	}{
		{"ShellUnrestricted", shell("unrestricted-with-approval"), twice("shell_run", `{"command":"ls","cwd":"."}`), authority.ShellRun, 2, authority.RuleApprovalUnrestrictedNetwork},
		{"ShellAllow", shell("allow"), twice("shell_run", `{"command":"ls","cwd":"."}`), authority.ShellRun, 1, authority.RuleApprovalShellNetwork},
		{"MCPUnrestricted", server("unrestricted-with-approval"), twice(mcpTool, `{}`), "mcp/records/env", 2, authority.RuleApprovalUnrestrictedNetwork},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			ws := filepath.Join(dir, "work")
			os.Mkdir(ws, 0o700)
			os.WriteFile(filepath.Join(dir, "script.json"), []byte(c.script), 0o600)
			doc := "schema_version = 1\n[options.model]\nprovider = \"script\"\nscript = { base = \"source\", path = \"script.json\" }\n" + c.body
			os.WriteFile(filepath.Join(dir, "deployment.toml"), []byte(doc), 0o600)
			d, err := Load(LoadOptions{Config: filepath.Join(dir, "deployment.toml"), Bindings: map[string]string{"workspace": ws}})
			if err != nil {
				t.Fatal(err)
			}
			rt, err := d.NewRuntime(context.Background(), HostOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			var mu sync.Mutex
			var asked []approval.Request
			ap := answerFunc(func(_ context.Context, req approval.Request) (approval.Answer, error) {
				mu.Lock()
				defer mu.Unlock()
				asked = append(asked, req)
				return approval.AllowForTask, nil
			})
			task, err := rt.StartTask(context.Background(), TaskRequest{Input: "go", Approver: ap})
			if err != nil {
				t.Fatal(err)
			}
			for range task.Events() {
			}
			obj := task.Wait()
			if obj.Outcome.Status != event.StatusCompleted {
				b, _ := json.Marshal(obj.Outcome)
				t.Fatalf("outcome %s", b)
			}
			if len(asked) != c.asks {
				t.Fatalf("asked %d times, want %d", len(asked), c.asks)
			}
			for _, req := range asked {
				if req.Tool != c.tool || authority.ApprovalSourceOf(req.Decision).RuleID != c.rule || req.Effect != authority.EffectNetwork {
					t.Errorf("request %s by %+v effect %s, want %s by %s, effect network", req.Tool, req.Decision.ApprovalBy, req.Effect, c.tool, c.rule)
				}
				if c.asks == 2 && !strings.Contains(req.Decision.Sandbox, "network=unrestricted-with-approval") {
					t.Errorf("request sandbox %q does not say unrestricted-with-approval", req.Decision.Sandbox)
				}
			}
		})
	}
}
