package children

import (
	"context"
	"testing"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger/outcome"
)

// A restored child is settled as its snapshot says: wait returns it at
// once, it counts against Total, its result ID names it to a handoff, and
// nothing runs.
func TestRestoreRegistersASettledChild(t *testing.T) {
	tr, r, _ := newTree(t, func(o *Options) { o.Capacity.Total = 2 })
	out := `{"ok":true}`
	snap := Snapshot{AgentID: "child-a", Kind: KindLocal, State: StateSettled, ResultID: "result-a", Output: &out,
		Outcome: &event.Outcome{Status: outcome.Completed}, StructuredOutput: []byte(out)}
	if err := tr.Restore(snap); err != nil {
		t.Fatal(err)
	}
	wantCode(t, tr.Restore(snap), CodeDuplicateAgentID)
	w, err := tr.Wait(context.Background(), WaitRequest{AgentIDs: []string{"child-a"}, Mode: WaitAll})
	if err != nil || len(w.Settled) != 1 || w.Settled[0].ResultID != "result-a" || w.Settled[0].Outcome.Status != outcome.Completed {
		t.Fatalf("wait on the restored child: %+v %v", w, err)
	}
	if _, err := tr.Readmit(context.Background(), "child-b", Request{Input: "x", Handoffs: []Handoff{{SourceAgentID: "child-a", ResultID: "result-a", Kind: HandoffInline}}}); err == nil {
		t.Fatal("a child with handoffs was readmitted")
	}
	if r.startCount() != 0 {
		t.Fatalf("restoring started %d children", r.startCount())
	}
	if got := tr.Load().Total; got != 1 {
		t.Fatalf("total %d, want the restored child counted", got)
	}
}

// A readmitted child keeps its agent ID, is narrowed again against the
// parent's scope, and starts like a spawn; an ID the tree knows is
// refused, and so is a request the parent can no longer grant.
func TestReadmitStartsAChildUnderItsID(t *testing.T) {
	tr, r, _ := newTree(t, nil)
	s, err := tr.Readmit(context.Background(), "child-x", Request{Input: "go on", Capabilities: Capabilities{Tools: []string{"fs.read"}}})
	if err != nil || s.AgentID != "child-x" {
		t.Fatalf("readmit: %+v %v", s, err)
	}
	h := r.await(t, "child-x")
	if got := h.spec.Capabilities.Tools; len(got) != 1 || got[0] != "fs.read" {
		t.Fatalf("the readmitted child's tools: %v", got)
	}
	if _, err := tr.Readmit(context.Background(), "child-x", Request{Input: "again"}); err == nil {
		t.Fatal("an agent ID the tree knows was readmitted")
	}
	_, err = tr.Readmit(context.Background(), "child-y", Request{Input: "go on", Capabilities: Capabilities{Tools: []string{"shell.run"}}})
	if err == nil {
		t.Fatal("a request beyond the parent's scope was readmitted")
	}
	h.settle(completed("done"))
	if got := settledSnapshot(t, tr, "child-x"); got.Outcome.Status != outcome.Completed {
		t.Fatalf("the readmitted child settled %+v", got.Outcome)
	}
}

// SpawnedAgent and SettledSnapshots read the tool's own payloads.
func TestRecordedPayloadsReadBack(t *testing.T) {
	if id, ok := SpawnedAgent([]byte(`{"action":"spawn","agent":{"agent_id":"a1","state":"starting"}}`)); !ok || id != "a1" {
		t.Fatalf("spawn payload: %q %v", id, ok)
	}
	if _, ok := SpawnedAgent([]byte(`{"action":"wait","settled":[]}`)); ok {
		t.Fatal("a wait payload read as a spawn")
	}
	got := SettledSnapshots([]byte(`{"action":"wait","settled":[{"agent_id":"a1","state":"settled"}],"remaining":["a2"]}`))
	if len(got) != 1 || got[0].AgentID != "a1" {
		t.Fatalf("wait payload: %+v", got)
	}
}
