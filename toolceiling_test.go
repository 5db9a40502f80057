package pablo_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/ledger/outcome"
)

// ranNotes is the notes catalog counting the calls that ran.
type ranNotes struct {
	notes
	ran *atomic.Int32
}

func (n ranNotes) Call(ctx context.Context, call pablo.ToolInvocation) pablo.ToolResult {
	n.ran.Add(1)
	return n.notes.Call(ctx, call)
}

// TestOneTurnOfThreeToolCallsUnderAToolCallCeilingOfOneRunsOne: one model
// turn proposes three allowed tool calls under tool_calls = 1, through the
// public runtime: exactly one runs, the task ends limit_exceeded on
// tool_calls and the ledger counts one call. The engine admits and
// dispatches one call before it admits the next; the window between an
// admission and its dispatch, where an outstanding reservation must count,
// is the ledger's TestOutstandingReservationsCountAgainstTheCeiling.
func TestOneTurnOfThreeToolCallsUnderAToolCallCeilingOfOneRunsOne(t *testing.T) {
	t.Parallel()
	set, err := authority.New(authority.Config{
		Host: []authority.ID{"notes.read"},
		Layers: []authority.Layer{{ID: "case", Kind: authority.KindAuthority, Dimensions: map[authority.Dimension]*authority.Rules{
			"note": {Default: authority.Deny, Allow: []authority.Rule{{ID: "case.n1", Value: "N-1"}}},
		}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := pablo.ParseScript([]byte(`{"turns":[
		{"tool_calls":[
			{"id":"c1","name":"notes_read","arguments":{"note_id":"N-1"}},
			{"id":"c2","name":"notes_read","arguments":{"note_id":"N-1"}},
			{"id":"c3","name":"notes_read","arguments":{"note_id":"N-1"}}]},
		{"text":["done"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var ran atomic.Int32
	rt, err := pablo.NewRuntime(pablo.RuntimeOptions{Model: pablo.NewScriptModel(sc), Authority: set,
		Catalogs: []pablo.ToolCatalog{ranNotes{ran: &ran}}, Store: ledger.NewMemoryStore(),
		Limits: ledger.Limits{ToolCalls: ledger.Max(1)}})
	if err != nil {
		t.Fatal(err)
	}
	task, err := rt.StartTask(t.Context(), pablo.TaskRequest{Input: "read the note three times"})
	if err != nil {
		t.Fatal(err)
	}
	obj := task.Wait()
	b, _ := json.Marshal(obj)
	if n := ran.Load(); n != 1 {
		t.Fatalf("%d of 3 tool calls ran under tool_calls = 1\n%s", n, b)
	}
	if o := obj.Outcome; o == nil || o.Status != outcome.LimitExceeded || o.Limit != outcome.LimitToolCalls {
		t.Fatalf("the task ended %+v, want limit_exceeded on tool_calls\n%s", o, b)
	}
	if obj.Accounting == nil || obj.Accounting.ToolCalls.N != 1 {
		t.Fatalf("the ledger counted %v tool calls, want 1\n%s", obj.Accounting, b)
	}
}
