package pablo_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/trace"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/model"
)

// notes is a host's own tool catalog: one read-only lookup, written against
// the pablo package alone.
type notes struct{}

func (notes) Tools() []pablo.ToolSpec {
	return []pablo.ToolSpec{{
		ID:          "notes.read",
		Description: "Read one note by ID.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"note_id":{"type":"string"}},"required":["note_id"],"additionalProperties":false}`),
		// The note a call names is a resource the authority scopes.
		Resources: func(args map[string]any) []authority.Resource {
			return []authority.Resource{{Kind: "note", Value: args["note_id"].(string)}}
		},
	}}
}

func (notes) Call(_ context.Context, call pablo.ToolInvocation) pablo.ToolResult {
	var args struct {
		NoteID string `json:"note_id"`
	}
	json.Unmarshal(call.Arguments, &args)
	return pablo.ToolCompleted(map[string]any{"note": map[string]any{"id": args.NoteID, "text": "Renewal is due 2027-01-01."}})
}

// A runtime assembled by hand: an authority that admits one host tool on one
// note, a scripted model and an in-memory ledger. No file, process or
// network is involved.
func ExampleNewRuntime() {
	set, _ := authority.New(authority.Config{
		Host: []authority.ID{"notes.read"},
		Layers: []authority.Layer{{ID: "case", Kind: authority.KindAuthority, Dimensions: map[authority.Dimension]*authority.Rules{
			"note": {Default: authority.Deny, Allow: []authority.Rule{{ID: "case.n1", Value: "N-1"}}},
		}}},
	})
	script, _ := pablo.ParseScript([]byte(`{"turns":[
		{"text":["Checking the note."],"tool_calls":[{"name":"notes_read","arguments":{"note_id":"N-1"}}]},
		{"text":["The renewal is due on 2027-01-01."]}]}`))
	rt, _ := pablo.NewRuntime(pablo.RuntimeOptions{
		Model:     pablo.NewScriptModel(script),
		Authority: set,
		Catalogs:  []pablo.ToolCatalog{notes{}},
	})
	task, _ := rt.Start(context.Background(), "When is the renewal due?")
	for ev := range task.Events() {
		if ev.Type == event.ToolFinished {
			fmt.Println(ev.Type, ev.Name)
		}
	}
	obj := task.Wait()
	fmt.Println(obj.Outcome.Status, *obj.Outcome.Output)
	// Output:
	// tool.finished notes.read
	// completed The renewal is due on 2027-01-01.
}

// The same runtime refuses a note outside the authorized set: the call is
// never executed and the task ends policy_denied with the deciding rule.
func ExampleNewRuntime_denied() {
	set, _ := authority.New(authority.Config{
		Host: []authority.ID{"notes.read"},
		Layers: []authority.Layer{{ID: "case", Kind: authority.KindAuthority, Dimensions: map[authority.Dimension]*authority.Rules{
			"note": {Default: authority.Deny, Allow: []authority.Rule{{ID: "case.n1", Value: "N-1"}}},
		}}},
	})
	script, _ := pablo.ParseScript([]byte(`{"turns":[
		{"text":["Approved by the admin, reading N-2."],"tool_calls":[{"name":"notes_read","arguments":{"note_id":"N-2"}}]},
		{"text":["done"]}]}`))
	rt, _ := pablo.NewRuntime(pablo.RuntimeOptions{Model: pablo.NewScriptModel(script), Authority: set, Catalogs: []pablo.ToolCatalog{notes{}}})
	obj, _ := rt.Run(context.Background(), "Read N-2")
	rule, _ := json.Marshal(obj.Outcome.Rule)
	fmt.Println(obj.Outcome.Status, string(rule), obj.Accounting.ToolCalls)
	// Output: policy_denied {"configured":{"id":"builtin.note.allowlist_miss"}} 0
}

// A host that was called inside a trace passes the caller's W3C context on:
// the task joins that trace, and its events and task object carry its ID.
func ExampleParseTraceContext() {
	sc, err := pablo.ParseTraceContext("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "vendor=opaque")
	if err != nil {
		fmt.Println(err)
		return
	}
	script, _ := pablo.ParseScript([]byte(`{"turns":[{"text":["ok"]}]}`))
	set, _ := authority.New(authority.Config{})
	rt, _ := pablo.NewRuntime(pablo.RuntimeOptions{Model: pablo.NewScriptModel(script), Authority: set})
	obj, _ := rt.Run(trace.ContextWithRemoteSpanContext(context.Background(), sc), "go")
	fmt.Println(*obj.TraceID)
	_, err = pablo.ParseTraceContext("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", "")
	fmt.Println(errors.Is(err, pablo.ErrTraceContext))
	// Output:
	// 4bf92f3577b34da6a3ce929d0e0e4736
	// true
}

// waitingModel answers nothing: each call waits until its context ends,
// like a slow provider.
type waitingModel struct{ called chan<- struct{} }

func (waitingModel) Info() model.Info {
	return model.Info{Provider: "example", Model: "waiting"}
}

func (m waitingModel) Generate(ctx context.Context, _ *model.Request, _ func(string) error) (*model.Response, error) {
	m.called <- struct{}{}
	<-ctx.Done()
	return nil, ctx.Err()
}

// A host stopping (on exit, or a signal) shuts its runtime down: no task
// starts any more, the running ones are cancelled with a reason that names
// the shutdown, and Shutdown returns once each has settled and the
// runtime's resources are released.
func ExampleRuntime_Shutdown() {
	set, _ := authority.New(authority.Config{})
	called := make(chan struct{}, 1)
	rt, _ := pablo.NewRuntime(pablo.RuntimeOptions{Model: waitingModel{called}, Authority: set})
	task, _ := rt.Start(context.Background(), "Summarize the quarter.")
	<-called // the task is in its model call

	ctx, cancel := context.WithTimeout(context.Background(), pablo.DefaultShutdownTimeout)
	defer cancel()
	if err := rt.Shutdown(ctx); err != nil {
		fmt.Println(err) // a *ShutdownError names the tasks still running
		return
	}
	out := task.Wait().Outcome
	fmt.Println(out.Status)
	fmt.Println(out.Reason)
	_, err := rt.Start(context.Background(), "One more?")
	fmt.Println(errors.Is(err, pablo.ErrShutdown))
	// Output:
	// cancelled
	// runtime_shutdown: the host shut the runtime down (Runtime.Shutdown) before the task settled
	// true
}
