package pablo

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/mcp"
)

// TestIdempotencyKeyIsStableAndPerCall: the key is a function of task,
// agent and call ID alone (a retried delivery carries the same key), and
// any one of them changing changes it.
func TestIdempotencyKeyIsStableAndPerCall(t *testing.T) {
	k := IdempotencyKey("task", "agent", "c1")
	if k != IdempotencyKey("task", "agent", "c1") || !strings.HasPrefix(k, "idem_") || len(k) != len("idem_")+32 {
		t.Fatalf("key %q is not stable", k)
	}
	for _, other := range []string{IdempotencyKey("task2", "agent", "c1"), IdempotencyKey("task", "agent2", "c1"),
		IdempotencyKey("task", "agent", "c2"), IdempotencyKey("taska", "gent", "c1")} {
		if other == k {
			t.Errorf("a different call has the key %q", k)
		}
	}
}

// TestSideEffectsCarryTheirIdempotencyKey: shell.run gets the call's key in
// PABLO_IDEMPOTENCY_KEY and an MCP tools/call in _meta under
// mcp.IdempotencyMetaKey, the same key pablo.IdempotencyKey derives from
// the task, the agent and the call ID.
func TestSideEffectsCarryTheirIdempotencyKey(t *testing.T) {
	fault := buildFaultServer(t)
	for _, tc := range []struct{ name, body, call string }{
		{"Shell", "[options.shell]\nenabled = true\n", `{"name":"shell_run","arguments":{"command":"printenv PABLO_IDEMPOTENCY_KEY","cwd":"."}}`},
		{"MCP", mcpServerTOML(fault, "ok", ""), `{"name":"` + mcp.Alias(authority.MCPTool("records", "echo")) + `","arguments":{"message":"hi"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ws := filepath.Join(dir, "work")
			os.Mkdir(ws, 0o700)
			script := `{"turns":[{"tool_calls":[{"id":"c1",` + tc.call[1:] + `]},{"text":["done"]}]}`
			rt, err := scriptDeployment(t, dir, ws, script, tc.body).NewRuntime(context.Background(), HostOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			obj, events := runTask(t, rt, "go")
			if obj.Outcome.Status != StatusCompleted {
				t.Fatalf("outcome %+v", obj.Outcome)
			}
			var result, agent string
			for _, e := range events {
				if e.Type == EventToolFinished && e.CallID == "c1" {
					result, agent = string(e.Result), e.Agent.AgentID
				}
			}
			want := IdempotencyKey(*obj.RunID, agent, "c1")
			if !strings.Contains(result, want) {
				t.Errorf("result %s does not carry the key %s", result, want)
			}
		})
	}
}
