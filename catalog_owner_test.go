package pablo

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/ledger/outcome"
	"github.com/pabloagent/pablo/mcp"
)

// closingCatalog is a host tool that holds a resource: it counts its
// Close calls and refuses calls once closed.
type closingCatalog struct {
	id     authority.ID
	closed atomic.Int32
}

func (c *closingCatalog) Tools() []authority.ToolSpec {
	return []authority.ToolSpec{{ID: c.id, Description: "notes",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`)}}
}

func (c *closingCatalog) Call(context.Context, authority.Call) ledger.ToolResult {
	if c.closed.Load() > 0 {
		return ledger.ToolResult{Status: outcome.ToolIOFailed, Code: outcome.FailToolExecution, Delivery: outcome.NotSent}
	}
	return ledger.ToolResult{Status: outcome.ToolCompleted}
}

func (c *closingCatalog) Close() error {
	c.closed.Add(1)
	return nil
}

// TestHostCatalogOutlivesItsTasks: what the host passes in
// (RuntimeOptions.Catalogs) the host owns. A real MCP catalog the host
// opened once and a host catalog that is an io.Closer serve two tasks in a
// row, and neither task nor Runtime.Shutdown closes them; what a task
// opened itself (OpenCatalogs) is closed when that task settles.
func TestHostCatalogOutlivesItsTasks(t *testing.T) {
	t.Parallel()
	bin := buildFaultServer(t)
	set, err := authority.New(authority.Config{Host: []authority.ID{"host.notes", "task.notes"},
		MCPServers: map[string]authority.MCPServer{"shared": {Launcher: bin}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	srv := mcp.Server{Name: "shared", Transport: mcp.Stdio, Command: bin, Args: []string{"-mode", "ok"}, Required: true,
		StartupTimeout: 5 * time.Second, OperationTimeout: 5 * time.Second, Sandbox: mcp.Sandbox{Mode: "off"}}
	shared, err := mcp.Open(ctx, mcp.Options{Servers: []mcp.Server{srv}, Authority: set})
	if err != nil {
		t.Fatal(err)
	}
	defer shared.Close()
	host := &closingCatalog{id: "host.notes"}
	var perTask []*closingCatalog

	echo := authority.MCPTool("shared", "echo")
	script := mustScript(t, `{"turns":[{"tool_calls":[`+
		`{"name":"`+mcp.Alias(echo)+`","arguments":{"message":"hello"}},`+
		`{"name":"host_notes","arguments":{"path":"a"}},`+
		`{"name":"task_notes","arguments":{"path":"b"}}]},{"text":["done"]}]}`)
	var finished []event.Event
	rt, err := NewRuntime(RuntimeOptions{Model: NewScriptModel(script), Authority: set, Catalogs: []ToolCatalog{shared, host},
		OpenCatalogs: func(context.Context, TaskInfo) ([]ToolCatalog, error) {
			c := &closingCatalog{id: "task.notes"}
			perTask = append(perTask, c)
			return []ToolCatalog{c}, nil
		},
		Sink: func(ev event.Event) error {
			if ev.Type == event.ToolFinished {
				finished = append(finished, ev)
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	for task := 1; task <= 2; task++ {
		finished = finished[:0]
		obj, _ := rt.Run(ctx, "go")
		if obj.Outcome.Status != event.StatusCompleted {
			b, _ := json.Marshal(obj.Outcome)
			t.Fatalf("task %d: outcome %s", task, b)
		}
		if len(finished) != 3 {
			t.Fatalf("task %d: %d tool.finished events, want 3", task, len(finished))
		}
		for _, ev := range finished {
			if !strings.Contains(string(ev.Result), `"status":"completed"`) {
				t.Errorf("task %d: %s: %s (the host's catalog was closed by an earlier task?)", task, ev.Name, ev.Result)
			}
		}
		if n := host.closed.Load(); n != 0 {
			t.Errorf("task %d closed the host's catalog %d times; the host owns it", task, n)
		}
		if n := perTask[task-1].closed.Load(); n != 1 {
			t.Errorf("task %d closed the catalog it opened itself %d times, want once", task, n)
		}
	}
	if err := rt.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if n := host.closed.Load(); n != 0 {
		t.Errorf("Shutdown closed the host's catalog %d times; the host owns it", n)
	}
	// The host's MCP session is still open: the host can still call it.
	if r := shared.Call(ctx, authority.Call{ID: "after", Tool: echo, Arguments: []byte(`{"message":"hello"}`)}); r.Status != outcome.ToolCompleted {
		t.Errorf("the host's MCP catalog after two tasks and Shutdown: %+v, want completed", r)
	}
}
