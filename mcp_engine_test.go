package pablo

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/mcp"
)

// buildFaultServer builds the MCP fault server of examples/mcpservers.
func buildFaultServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "fault")
	if out, err := exec.Command("go", "build", "-o", bin, "./examples/mcpservers/fault").CombinedOutput(); err != nil {
		t.Fatalf("build fault server: %v\n%s", err, out)
	}
	return bin
}

// runMCPTask runs one task of a deployment with an MCP server and a script.
func runMCPTask(t *testing.T, body, script string, env map[string]string) (*TaskObject, []event.Event, []ledger.Record) {
	t.Helper()
	obj, events, store := runScriptHost(t, body, script, nil, HostOptions{LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	recs, err := store.Records(context.Background(), *obj.RunID)
	if err != nil {
		t.Fatal(err)
	}
	return obj, events, recs
}

// runRecordsTask runs script against the fault server as "records", whose
// PABLO_TEST_TOKEN is the credential tok-4242-secret.
func runRecordsTask(t *testing.T, bin, script string) (*TaskObject, []event.Event, []ledger.Record) {
	body := "[credentials.records]\nconsumer = \"mcp.environment\"\nsources = [{ kind = \"environment\", name = \"RECORDS_TOKEN\" }]\n" +
		mcpServerTOML(bin, "ok", "env = { PABLO_TEST_TOKEN = \"records\" }\n")
	return runMCPTask(t, body, script, map[string]string{"RECORDS_TOKEN": "tok-4242-secret"})
}

func mcpServerTOML(bin, mode string, extra string) string {
	return "[options.mcp.servers.records]\ntransport = \"stdio\"\ncommand = \"" + bin + "\"\nargs = [\"-mode\", \"" + mode + "\"]\n" + extra
}

func TestMCPToolCallThroughTheEngine(t *testing.T) {
	bin := buildFaultServer(t)
	alias := mcp.Alias(authority.MCPTool("records", "env"))
	script := `{"turns":[{"text":["Checking."],"tool_calls":[{"name":"` + alias + `","arguments":{}}]},{"text":["Found it."]}]}`
	obj, events, recs := runRecordsTask(t, bin, script)
	if obj.Outcome.Status != event.StatusCompleted {
		b, _ := json.Marshal(obj)
		t.Fatalf("outcome: %s", b)
	}
	var finished *event.Event
	for i := range events {
		if events[i].Type == event.ToolFinished {
			finished = &events[i]
		}
	}
	if finished == nil || finished.Name != "mcp/records/env" {
		t.Fatalf("no tool.finished for the MCP tool: %+v", events)
	}
	res := string(finished.Result)
	if !strings.Contains(res, `"status":"completed"`) || !strings.Contains(res, "PABLO_TEST_TOKEN") {
		t.Fatalf("result %s", res)
	}
	all, _ := json.Marshal(events)
	recJSON, _ := json.Marshal(recs)
	for _, blob := range [][]byte{all, recJSON} {
		if strings.Contains(string(blob), "tok-4242-secret") {
			t.Fatal("the credential value leaked into events or the ledger")
		}
	}
	if !strings.Contains(string(recJSON), "mcp/records/env") || !strings.Contains(string(recJSON), "sha256:") || !strings.Contains(string(recJSON), "protocol 2025-11-25") {
		t.Fatalf("no admission decision with definition digest and version in the ledger: %s", recJSON)
	}
}

func TestRequiredMCPServerFailureFailsBeforeAnyModelCall(t *testing.T) {
	bin := buildFaultServer(t)
	script := `{"turns":[{"text":["never"]}]}`
	obj, _, _ := runMCPTask(t, mcpServerTOML(bin, "version", ""), script, nil)
	if obj.Outcome.Status != event.StatusFailed || obj.Accounting.ModelCalls.N != 0 {
		b, _ := json.Marshal(obj)
		t.Fatalf("outcome: %s", b)
	}
}

func TestMCPToolDeniedByPolicyIsNotShown(t *testing.T) {
	bin := buildFaultServer(t)
	alias := mcp.Alias(authority.MCPTool("records", "echo"))
	script := `{"turns":[{"text":["x"],"tool_calls":[{"name":"` + alias + `","arguments":{"message":"hi"}}]},{"text":["done"]}]}`
	body := mcpServerTOML(bin, "ok", "") +
		"[[options.mcp.policies]]\n[options.mcp.policies.tools]\ndefault = \"allow\"\ndeny = [{ id = \"ops.no-echo\", value = \"mcp/records/echo\" }]\n"
	obj, _, _ := runMCPTask(t, body, script, nil)
	if obj.Outcome.Status != event.StatusPolicyDenied || obj.Accounting.ToolCalls.N != 0 {
		b, _ := json.Marshal(obj)
		t.Fatalf("outcome: %s", b)
	}
}

// An MCP server's progress reaches the host as tool.output events on the
// "progress" stream while the call runs, with credentials masked.
func TestMCPProgressStreamsAsToolOutput(t *testing.T) {
	bin := buildFaultServer(t)
	alias := mcp.Alias(authority.MCPTool("records", "work"))
	script := `{"turns":[{"text":["Working."],"tool_calls":[{"name":"` + alias + `","arguments":{}}]},{"text":["Done."]}]}`
	obj, events, _ := runRecordsTask(t, bin, script)
	if obj.Outcome.Status != event.StatusCompleted {
		t.Fatalf("outcome %+v", obj.Outcome)
	}
	var progress []string
	started, finished := -1, -1
	for i, ev := range events {
		switch {
		case ev.Type == event.ToolStarted:
			started = i
		case ev.Type == event.ToolFinished:
			finished = i
		case ev.Type == event.ToolOutput && ev.Stream == "progress":
			if ev.Name != "mcp/records/work" || started < 0 || finished >= 0 {
				t.Fatalf("progress event out of place: %+v", ev)
			}
			progress = append(progress, ev.Text)
		}
	}
	if strings.Join(progress, "") != "reading\nchecking\ntoken [redacted]\n" {
		t.Fatalf("progress %q", progress)
	}
}
