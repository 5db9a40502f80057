package ledger

import (
	"errors"
	"testing"
	"time"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/internal/ids"
	"github.com/pabloagent/pablo/ledger/outcome"
)

// A resumed root accounts exactly as the root whose records it reads:
// every agent's counters (charges, reservations of open calls, unknown
// charges, events), its numbering (N, root_seq, each agent's seq) and its
// open calls, so every charge made before a crash stays charged.
func TestResumeRebuildsTheRootExactly(t *testing.T) {
	limits := Limits{ModelCalls: Max(20), ToolCalls: Max(20), TotalTokens: Max(100000), Events: Max(1000), DurationMillis: Max(60000)}
	r, store, clock := newRoot(t, limits)
	root := r.RootAgentID()
	child, err := r.StartAgent(bg, AgentSpec{ParentID: root, Limits: Limits{ModelCalls: Max(5)}})
	if err != nil {
		t.Fatal(err)
	}
	bound := ModelCall{TokenBound: Max(1000)}
	if err := modelCall(t, r, root, bound, ModelSettlement{Status: outcome.Completed, Delivery: outcome.ResponseReceived, Reported: true, Usage: usage(100, 20)}); err != nil {
		t.Fatal(err)
	}
	if err := modelCall(t, r, child, bound, ModelSettlement{Status: outcome.Failed, Delivery: outcome.MayHaveBeenSent}); err != nil {
		t.Fatal(err)
	}
	if err := modelCall(t, r, child, bound, ModelSettlement{Status: outcome.Failed, Delivery: outcome.NotSent}); err != nil {
		t.Fatal(err)
	}
	allow := authority.Decision{Allowed: true, Layer: "l", RuleID: "r"}
	for i, c := range []struct {
		id      string
		d       authority.Decision
		settle  *ToolSettlement
		dispath bool
	}{
		{"t1", allow, &ToolSettlement{Status: outcome.ToolCompleted, Delivery: outcome.ResponseReceived}, true},
		{"t2", authority.Decision{Layer: "l", RuleID: "no"}, &ToolSettlement{Status: outcome.ToolPolicyDenied, Delivery: outcome.NotSent}, false},
		{"t3", allow, &ToolSettlement{Status: outcome.ToolRecoverableError, Delivery: outcome.NotSent, Counted: true}, false},
		{"t4", allow, nil, true},  // dispatched, never settled: unknown
		{"t5", allow, nil, false}, // admitted, never dispatched: retryable
	} {
		if err := r.AdmitToolCall(bg, root, ToolCall{ID: c.id, Name: "fs.write", Decision: c.d, IdempotencyKey: "k" + c.id}); err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		if c.dispath {
			if err := r.Dispatch(bg, root, c.id); err != nil {
				t.Fatal(err)
			}
		}
		if c.settle != nil {
			if err := r.SettleToolCall(bg, root, c.id, *c.settle); err != nil {
				t.Fatal(err)
			}
		}
	}
	open, err := r.ReserveModelCall(bg, root, bound) // in flight: its bound stays reserved
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Dispatch(bg, root, open); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Append(bg, child, "note", nil); err != nil {
		t.Fatal(err)
	}
	if err := r.Flush(bg); err != nil {
		t.Fatal(err)
	}
	want := map[string]Accounting{root: mustAccounting(t, r, root), child: mustAccounting(t, r, child)}

	clock.Advance(time.Minute) // the host was down a minute
	rs, err := Resume(bg, ResumeOptions{Store: store, TaskID: r.ID(), Clock: clock, IDs: ids.NewSequential(100)})
	if err != nil {
		t.Fatal(err)
	}
	for agent, acc := range want {
		if got := mustAccounting(t, rs.Root, agent); got != acc {
			t.Errorf("agent %s: resumed accounting\n%+v\nwant\n%+v", agent, got, acc)
		}
	}
	var openIDs []string
	for _, c := range rs.OpenCalls() {
		openIDs = append(openIDs, c.CallID+":"+string(c.State))
	}
	if got := len(openIDs); got != 3 {
		t.Fatalf("open calls %v, want t4 dispatched, t5 admitted and the model call in flight", openIDs)
	}
	// Numbering continues: the next event follows the last one.
	before, _ := store.Records(bg, r.ID())
	ev, err := rs.Root.Append(bg, root, "after", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.Root.Flush(bg); err != nil {
		t.Fatal(err)
	}
	after, _ := store.Records(bg, r.ID())
	if last := after[len(after)-1]; last.N != before[len(before)-1].N+1 || ev.RootSeq != rs.Report.LastRootSeq+1 || ev.Seq != 1 {
		t.Fatalf("numbering: N %d after %d, root_seq %d after %d, seq %d", last.N, before[len(before)-1].N, ev.RootSeq, rs.Report.LastRootSeq, ev.Seq)
	}
	// The deadline is still the original start's, a minute closer.
	if d, ok := rs.Root.Deadline(root); !ok || !d.Equal(rs.Started.Add(time.Minute)) {
		t.Fatalf("deadline %v, want the original start plus the duration ceiling (%v)", d, rs.Started.Add(time.Minute))
	}
	// The open calls settle as they would have: the one in flight keeps
	// its bound charged.
	if err := rs.Root.SettleModelCall(bg, root, open, ModelSettlement{Status: outcome.Failed, Delivery: outcome.MayHaveBeenSent}); err != nil {
		t.Fatal(err)
	}
	if got := mustAccounting(t, rs.Root, root).ChargedTokens.N; got != want[root].ChargedTokens.N+1000 {
		t.Fatalf("charged tokens %d after settling the call in flight", got)
	}
}

// A task whose root finished is never resumed: ErrTaskSettled, with its
// outcome.
func TestResumeRefusesASettledTask(t *testing.T) {
	r, store, _ := newRoot(t, Limits{})
	if _, err := r.Finish(bg, r.RootAgentID(), Finish{Outcome: Outcome{Status: outcome.Completed}}); err != nil {
		t.Fatal(err)
	}
	_, err := Resume(bg, ResumeOptions{Store: store, TaskID: r.ID()})
	var se *SettledError
	if !errors.Is(err, ErrTaskSettled) || !errors.As(err, &se) || se.Outcome.Status != outcome.Completed {
		t.Fatalf("err = %v", err)
	}
}
