package ledger_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/pabloagent/pablo/ledger/outcome"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/internal/ids"
	"github.com/pabloagent/pablo/ledger"
)

// fixedClock is a host's clock that always reads one time: a Clock reads
// the time and arms timers.
type fixedClock struct{ at time.Time }

func (c fixedClock) Now() time.Time { return c.at }

func (fixedClock) AfterFunc(d time.Duration, f func()) ledger.Timer { return time.AfterFunc(d, f) }

// Example walks one root task through the engine's per-step path on a memory
// store, then recovers it as a host would after a restart.
func Example() {
	ctx := context.Background()
	store := ledger.NewMemoryStore()
	defer store.Close()
	clock := fixedClock{time.Date(2026, 11, 10, 12, 0, 0, 0, time.UTC)}
	root, err := ledger.NewRoot(ctx, ledger.Options{
		Store:       store,
		Limits:      ledger.Limits{ModelCalls: ledger.Max(4), TotalTokens: ledger.Max(10_000), ToolCalls: ledger.Max(8)},
		InputDigest: "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		Fingerprint: "sha256:deployment",
		Clock:       clock,
		IDs:         ids.NewSequential(0),
	})
	if err != nil {
		panic(err)
	}
	agent := root.RootAgentID()

	// Model call: reserve the attested bound, dispatch, settle the actual.
	call, err := root.ReserveModelCall(ctx, agent, ledger.ModelCall{Route: "default", TokenBound: ledger.Max(2_000)})
	if err != nil {
		panic(err)
	}
	_ = root.Dispatch(ctx, agent, call)
	_ = root.SettleModelCall(ctx, agent, call, ledger.ModelSettlement{
		Status: outcome.Completed, Delivery: outcome.ResponseReceived,
		Reported: true, Usage: ledger.Usage{InputTokens: ledger.Count{N: 420}, OutputTokens: ledger.Count{N: 82}},
	})

	// Tool call: admit with the authority's decision, dispatch, settle with
	// a content-addressed result.
	allow := authority.Decision{Allowed: true, Layer: "policy", RuleID: "read-notes"}
	_ = root.AdmitToolCall(ctx, agent, ledger.ToolCall{ID: "call_1", Name: "mcp/notes/read_note", Decision: allow})
	_, _ = root.Append(ctx, agent, "tool.started", json.RawMessage(`{"call":{"id":"call_1"}}`))
	_ = root.Dispatch(ctx, agent, "call_1")
	ref, _ := root.PutResult(ctx, map[string]string{"note_id": "N-1", "text": "hello"})
	_ = root.SettleToolCall(ctx, agent, "call_1", ledger.ToolSettlement{
		Status: outcome.ToolCompleted, Delivery: outcome.ResponseReceived, Result: ref,
	})

	// A second tool call is dispatched and then the process "crashes".
	_ = root.AdmitToolCall(ctx, agent, ledger.ToolCall{ID: "call_2", Name: "fs.write", Decision: allow})
	_ = root.Dispatch(ctx, agent, "call_2")

	acc, _ := root.Accounting(agent)
	fmt.Println("model calls:", acc.ModelCalls, "tool calls:", acc.ToolCalls, "charged tokens:", acc.ChargedTokens)

	report, err := ledger.Recover(ctx, store)
	if err != nil {
		panic(err)
	}
	task := report.Tasks[0]
	for _, c := range task.Completed {
		fmt.Println("completed:", c.CallID, c.Status)
	}
	for _, c := range task.Unknown {
		fmt.Println("unknown (never replay):", c.CallID, c.Name)
	}
	fmt.Println("outcome recorded:", task.Outcome != nil)
	// Output:
	// model calls: 1 tool calls: 2 charged tokens: 502
	// completed: 00000000-0000-4000-8000-000000000003 completed
	// completed: call_1 completed
	// unknown (never replay): call_2 fs.write
	// outcome recorded: false
}
