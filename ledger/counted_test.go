package ledger

import (
	"context"
	"testing"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/ledger/outcome"
)

// TestCountedSettlementNeverReadsAsSent: a call settled before it was
// dispatched with Counted (an approval rejection) spends a tool call of the
// agent and its ancestors, and its records say it never left: recovery
// classes it completed, never unknown, and no dispatch record exists.
func TestCountedSettlementNeverReadsAsSent(t *testing.T) {
	ctx := context.Background()
	store := NewMemoryStore()
	r, err := NewRoot(ctx, Options{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	a := r.RootAgentID()
	if err := r.AdmitToolCall(ctx, a, ToolCall{ID: "c1", Name: "shell.run", Decision: authority.Decision{Allowed: true}}); err != nil {
		t.Fatal(err)
	}
	if err := r.SettleToolCall(ctx, a, "c1", ToolSettlement{Status: outcome.ToolRecoverableError, Delivery: outcome.NotSent, Error: "approval_rejected", Counted: true}); err != nil {
		t.Fatal(err)
	}
	acc, err := r.Accounting(a)
	if err != nil || acc.ToolCalls.String() != "1" {
		t.Fatalf("tool_calls %v, %v: a counted settlement spends one", acc.ToolCalls, err)
	}
	if err := r.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	recs, _ := store.Records(ctx, r.ID())
	for _, rec := range recs {
		if rec.Kind == RecordCall && rec.Call.State == CallDispatched {
			t.Fatalf("a dispatch record for a call that never left: %+v", rec.Call)
		}
	}
	rep, err := RecoverTask(ctx, store, r.ID())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Unknown) != 0 || len(rep.Retryable) != 0 || len(rep.Completed) != 1 || rep.Completed[0].Delivery != outcome.NotSent {
		t.Fatalf("recovery: %+v", rep)
	}
}
