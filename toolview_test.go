package pablo

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger/outcome"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/ledger"
)

// listingCatalog counts how often its tools are listed.
type listingCatalog struct {
	id     authority.ID
	listed atomic.Int32
}

func (c *listingCatalog) Tools() []authority.ToolSpec {
	c.listed.Add(1)
	return []authority.ToolSpec{{ID: c.id, Description: "counts",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`)}}
}

func (c *listingCatalog) Call(context.Context, authority.Call) ledger.ToolResult {
	return ledger.ToolResult{Status: outcome.ToolCompleted}
}

// TestRuntimeCompilesToolSchemasOnce: the tools of a runtime's own catalogs
// are listed, decided and compiled once for the runtime, not once a task;
// a task's own catalogs are added on top of them, and both stay callable.
func TestRuntimeCompilesToolSchemasOnce(t *testing.T) {
	t.Parallel()
	shared := &listingCatalog{id: "bench.shared"}
	var perTask []*listingCatalog
	set, err := authority.New(authority.Config{Host: []authority.ID{"bench.shared", "bench.task"}})
	if err != nil {
		t.Fatal(err)
	}
	script := mustScript(t, `{"turns":[{"tool_calls":[{"name":"bench_shared","arguments":{"path":"a"}},{"name":"bench_task","arguments":{"path":"b"}}]},{"text":["done"]}]}`)
	rt, err := NewRuntime(RuntimeOptions{Model: NewScriptModel(script), Authority: set, Catalogs: []ToolCatalog{shared},
		OpenCatalogs: func(context.Context, TaskInfo) ([]ToolCatalog, error) {
			c := &listingCatalog{id: "bench.task"}
			perTask = append(perTask, c)
			return []ToolCatalog{c}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	const tasks = 3
	for range tasks {
		if obj, _ := rt.Run(context.Background(), "go"); obj.Outcome.Status != event.StatusCompleted {
			t.Fatalf("outcome %+v", obj.Outcome)
		}
	}
	if n := shared.listed.Load(); n != 1 {
		t.Errorf("the runtime's catalog was listed and compiled %d times for %d tasks, want once", n, tasks)
	}
	for i, c := range perTask {
		if n := c.listed.Load(); n != 1 {
			t.Errorf("task %d's own catalog was listed %d times, want once", i, n)
		}
	}
}
