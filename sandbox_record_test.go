package pablo

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/mcp"
)

// TestEveryCallRecordsItsSandbox: the decision of a call that runs in a
// process names the sandbox it ran in, in the tool.started event and in
// the ledger's record; turning the sandbox off is recorded the same way,
// and so is a server's network = "allow".
func TestEveryCallRecordsItsSandbox(t *testing.T) {
	fault := buildFaultServer(t)
	shellCall := `{"turns":[{"tool_calls":[{"id":"c1","name":"shell_run","arguments":{"command":"true","cwd":"."}}]},{"text":["done"]}]}`
	mcpCall := `{"turns":[{"tool_calls":[{"id":"c1","name":"` + mcp.Alias(authority.MCPTool("records", "echo")) + `","arguments":{"message":"hi"}}]},{"text":["done"]}]}`
	for _, tc := range []struct {
		name, body, script, want string
	}{
		{"ShellDefault", "[options.shell]\nenabled = true\n", shellCall, "required filesystem=read-only network=deny"},
		{"ShellWrite", "[options.shell]\nenabled = true\n[options.filesystem]\nwrite = true\n", shellCall, "required filesystem=workspace-write network=deny"},
		// Off runs under a literal command policy, which bounds it without
		// an approval (docs/approvals.md).
		{"ShellOff", "[options.shell]\nenabled = true\n[options.shell.sandbox]\nmode = \"off\"\n[options.shell.commands]\ndefault = \"deny\"\n" +
			"allow = [{ id = \"t.true\", executable = \"/usr/bin/true\", args = [], match = \"exact\" }]\n", shellCall, "off"},
		{"MCPNetworkAllow", mcpServerTOML(fault, "ok", "[options.mcp.servers.records.sandbox]\nnetwork = \"allow\"\n"), mcpCall, "required filesystem=read-only network=allow"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ws := filepath.Join(dir, "work")
			os.Mkdir(ws, 0o700)
			store := ledger.NewMemoryStore()
			rt, err := scriptDeployment(t, dir, ws, tc.script, tc.body).NewRuntime(context.Background(), HostOptions{Store: store})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			obj, events := runTask(t, rt, "go")
			if obj.Outcome.Status != event.StatusCompleted {
				t.Fatalf("outcome %+v", obj.Outcome)
			}
			var started string
			for _, e := range events {
				if e.Type == event.ToolStarted && e.Call != nil {
					started = e.Call.Sandbox
				}
			}
			if started != tc.want {
				t.Errorf("tool.started sandbox %q, want %q", started, tc.want)
			}
			rep, err := ledger.RecoverTask(context.Background(), store, *obj.RunID)
			if err != nil {
				t.Fatal(err)
			}
			var recorded string
			for _, c := range rep.Completed {
				if c.Kind == ledger.ToolCallKind && c.Decision != nil {
					recorded = c.Decision.Sandbox
				}
			}
			if recorded != tc.want {
				t.Errorf("ledger decision sandbox %q, want %q", recorded, tc.want)
			}
		})
	}
}
