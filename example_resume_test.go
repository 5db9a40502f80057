package pablo_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/ledger"
)

// tickets is a host tool with a side effect: each call opens a ticket,
// carrying the call's idempotency key so the ticket system could
// deduplicate it.
type tickets struct{ opened atomic.Int32 }

func (*tickets) Tools() []pablo.ToolSpec {
	return []pablo.ToolSpec{{ID: "tickets.open", Description: "Open a ticket.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"title":{"type":"string"}},"required":["title"],"additionalProperties":false}`)}}
}

func (t *tickets) Call(_ context.Context, call pablo.ToolInvocation) pablo.ToolResult {
	t.opened.Add(1)
	return pablo.ToolCompleted(map[string]any{"ticket": "T-1", "key": call.IdempotencyKey})
}

// stopsAfterDispatch stands for a host killed right after a tool call
// left the process: the call's dispatch is durable, nothing after it is.
type stopsAfterDispatch struct {
	ledger.Store
	stopped atomic.Bool
}

func (s *stopsAfterDispatch) Append(ctx context.Context, recs []ledger.Record) error {
	if s.stopped.Load() {
		return errors.New("the host stopped")
	}
	err := s.Store.Append(ctx, recs)
	for _, r := range recs {
		if r.Kind == ledger.RecordCall && r.Call.Kind == ledger.ToolCallKind && r.Call.State == ledger.CallDispatched {
			s.stopped.Store(true)
		}
	}
	return err
}

// A host stopped after a tool call with a side effect left the process,
// before its result was recorded. Another runtime on the same store
// resumes the task: the call is never run again, the model is told its
// outcome is unknown (with its idempotency key), and the task goes on
// from its ledger.
func ExampleRuntime_Resume() {
	set, _ := authority.New(authority.Config{Host: []authority.ID{"tickets.open"}})
	script, _ := pablo.ParseScript([]byte(`{"turns":[
		{"tool_calls":[{"name":"tickets_open","arguments":{"title":"Renew the contract"}}]},
		{"text":["The ticket may already be open; I will check before opening another."]}]}`))
	store := ledger.NewMemoryStore() // a bbolt file, or a PostgreSQL database a fleet shares
	tool := &tickets{}
	opts := pablo.RuntimeOptions{Model: pablo.NewScriptModel(script), Authority: set, Catalogs: []pablo.ToolCatalog{tool}}

	// The first host.
	first := opts
	first.Store = &stopsAfterDispatch{Store: store}
	rt, _ := pablo.NewRuntime(first)
	task, _ := rt.Start(context.Background(), "Open a ticket to renew the contract.")
	task.Wait()
	rt.Close()

	// Any host with the store: the same task ID, continued.
	opts.Store = store
	rt, _ = pablo.NewRuntime(opts)
	defer rt.Close()
	resumed, err := rt.Resume(context.Background(), task.ID())
	if err != nil {
		fmt.Println(err)
		return
	}
	obj := resumed.Wait()
	fmt.Println(obj.Outcome.Status, *obj.Outcome.Output)
	fmt.Println("unknown:", obj.Resume.Unknown, "completed:", obj.Resume.Completed)
	fmt.Println("tickets opened:", tool.opened.Load())
	// Output:
	// completed The ticket may already be open; I will check before opening another.
	// unknown: [call_1_1] completed: []
	// tickets opened: 1
}
