package pablo

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger"
)

// TestChildToolListKeepsNoUnnamedMCPTool: a child spawned with a tool list
// and no mcp_servers keeps exactly the tools the list names, whatever MCP
// servers it inherits. Over a real MCP server (the fault server, as
// records), a child with tools [] or ["fs.read"] is offered no MCP tool
// (its dispatch snapshot lists none) and its call to one runs nothing;
// a child whose request itself names mcp_servers ["records"] keeps that
// server's tools (the server rule) and its call completes. A child with
// mcp_servers [] has no server at all, whatever its tools; a null tool
// list inherits the parent's, records' tools included.
func TestChildToolListKeepsNoUnnamedMCPTool(t *testing.T) {
	bin := buildFaultServer(t)
	for _, c := range []struct {
		name         string
		capabilities string
		keepsRecords bool
		// denial is the rule the child's call is denied by.
		denial string
	}{
		{"no tools", `{"tools":[]}`, false, "builtin.mcp.tools."},
		{"fs.read alone", `{"tools":["fs.read"]}`, false, "builtin.mcp.tools."},
		{"fs.read and the records server", `{"tools":["fs.read"],"mcp_servers":["records"]}`, true, ""},
		{"no MCP server", `{"mcp_servers":[]}`, false, "builtin.mcp.unconfigured_server"},
		{"no tools and no MCP server", `{"tools":[],"mcp_servers":[]}`, false, "builtin.mcp.unconfigured_server"},
		{"the tools inherited by null", `{"tools":null}`, true, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			script := `{"turns":[
				{"tool_calls":[{"id":"s1","name":"subagent","arguments":{"action":"spawn","request":{"input":"use records","capabilities":` + c.capabilities + `}}}]},
				{"tool_calls":[{"id":"w1","name":"subagent","arguments":{"action":"wait","agent_ids":["{{agent_id:s1}}"],"mode":"all","timeout_ms":60000}}]},
				{"text":["root done"]}],
				"agents":[{"input":"use records","turns":[
					{"tool_calls":[{"id":"m1","name":"mcp/records/echo","arguments":{"message":"hi"}}]},
					{"text":["child done"]}]}]}`
			dir := t.TempDir()
			ws := filepath.Join(dir, "work")
			os.Mkdir(ws, 0o700)
			d := scriptDeployment(t, dir, ws, script, "[options.shell]\nenabled = false\n[options.children]\nenabled = true\n"+mcpServerTOML(bin, "ok", ""))
			store := ledger.NewMemoryStore()
			rt, err := d.NewRuntime(context.Background(), HostOptions{Store: store})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			obj, events := runTask(t, rt, "go")
			if obj.Outcome.Status != event.StatusCompleted {
				b, _ := json.Marshal(obj)
				t.Fatalf("root outcome: %s", b)
			}
			rep, err := ledger.RecoverTask(context.Background(), store, *obj.RunID)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Snapshots) != 2 || rep.Snapshots[1].Snapshot == nil {
				t.Fatalf("want the root's and the child's snapshots, got %+v", rep.Snapshots)
			}
			root, child := rep.Snapshots[0].Snapshot, rep.Snapshots[1].Snapshot
			if _, ok := entry(root, "tool:mcp/records/echo"); !ok {
				t.Fatal("the root is not offered the records server's tools: the test proves nothing")
			}
			var mcpEntries []string
			for _, e := range child.Admitted {
				if strings.HasPrefix(e.ID, "tool:mcp/") || strings.HasPrefix(e.ID, "mcp:") {
					mcpEntries = append(mcpEntries, e.ID)
				}
			}
			if c.keepsRecords != (len(mcpEntries) > 0) {
				t.Errorf("the child's snapshot lists MCP entries %v; want the records server's tools: %v", mcpEntries, c.keepsRecords)
			}
			var call, finished *event.Event
			for i, ev := range events {
				switch {
				case ev.Type == event.ToolFinished && ev.CallID == "call_1_1" && ev.Agent.Depth == 1: // the child's m1
					call = &events[i]
				case ev.Type == event.RunFinished && ev.Agent.Depth == 1:
					finished = &events[i]
				}
			}
			if finished == nil || finished.Outcome == nil {
				t.Fatal("the child has no run.finished")
			}
			if c.keepsRecords {
				if call == nil || !strings.Contains(string(call.Result), `"status":"completed"`) || finished.Outcome.Status != event.StatusCompleted {
					b, _ := json.Marshal(finished)
					t.Fatalf("the child's call to a tool of the server it named did not complete: %s\n%s", resultOf(call), b)
				}
				return
			}
			// The call is denied before it runs: the child ends
			// policy_denied by its own layer's rule, having called nothing.
			if call != nil || finished.Outcome.Status != event.StatusPolicyDenied || finished.Accounting == nil || finished.Accounting.ToolCalls.N != 0 {
				b, _ := json.Marshal(finished)
				t.Fatalf("the child's call to mcp/records/echo was not denied: %s\n%s", resultOf(call), b)
			}
			if b, _ := json.Marshal(finished.Outcome); !strings.Contains(string(b), c.denial) {
				t.Errorf("the denial names no %s rule: %s", c.denial, b)
			}
		})
	}
}

// resultOf is the result of a tool.finished event, or "no call".
func resultOf(ev *event.Event) string {
	if ev == nil {
		return "no call"
	}
	return string(ev.Result)
}
