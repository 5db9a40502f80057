package ledger

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/ledger/outcome"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/internal/ids"
)

// scenario runs one task through every kind of call fate and returns its ID.
func scenario(t testing.TB, store Store) string {
	t.Helper()
	clock := newFakeClock()
	r, err := NewRoot(bg, Options{Store: store, Clock: clock, IDs: ids.NewSequential(0), InputDigest: "sha256:in", Fingerprint: "sha256:fp"})
	if err != nil {
		t.Fatal(err)
	}
	a := r.RootAgentID()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	allow := authority.Decision{Allowed: true, Layer: "policy", RuleID: "read-notes"}
	// Completed: a settled model call and a settled tool call with a result.
	must(modelCall(t, r, a, ModelCall{ID: "m1", Route: "default"}, ModelSettlement{Status: outcome.Completed, Delivery: outcome.ResponseReceived, Reported: true, Usage: usage(10, 5)}))
	ref, err := r.PutResult(bg, map[string]string{"note": "N-1"})
	must(err)
	must(r.AdmitToolCall(bg, a, ToolCall{ID: "t1", Name: "mcp/notes/read_note", ArgumentsDigest: "sha256:args", Decision: allow}))
	must(r.Dispatch(bg, a, "t1"))
	must(r.SettleToolCall(bg, a, "t1", ToolSettlement{Status: outcome.ToolCompleted, Delivery: outcome.ResponseReceived, Result: ref}))
	must(r.RecordDecision(bg, a, "subagent", authority.Decision{Allowed: true, Layer: "host"}))
	_, err = r.Append(bg, a, "tool.finished", json.RawMessage(`{"call_id":"t1"}`))
	must(err)
	// Unknown: dispatched, never settled; and settled with uncertain delivery.
	must(r.AdmitToolCall(bg, a, ToolCall{ID: "t2", Name: "fs.write", Decision: allow}))
	must(r.Dispatch(bg, a, "t2"))
	must(r.AdmitToolCall(bg, a, ToolCall{ID: "t3", Name: "shell.run", Decision: allow}))
	must(r.Dispatch(bg, a, "t3"))
	must(r.SettleToolCall(bg, a, "t3", ToolSettlement{Status: outcome.ToolTimedOut, Delivery: outcome.MayHaveBeenSent}))
	// Retryable: admitted, never dispatched, made durable by a later barrier.
	must(r.AdmitToolCall(bg, a, ToolCall{ID: "t4", Name: "fs.read", Decision: allow}))
	must(r.Flush(bg))
	return r.ID()
}

func TestRecoverSeparatesCompletedUnknownAndRetryable(t *testing.T) {
	t.Parallel()
	store := NewMemoryStore()
	id := scenario(t, store)
	rep, err := Recover(bg, store)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Tasks) != 1 || rep.Tasks[0].TaskID != id {
		t.Fatalf("tasks %+v", rep.Tasks)
	}
	task := rep.Tasks[0]
	callIDs := func(cs []CallReport) (out []string) {
		for _, c := range cs {
			out = append(out, c.CallID)
		}
		return out
	}
	if got := callIDs(task.Completed); !reflect.DeepEqual(got, []string{"m1", "t1"}) {
		t.Errorf("completed %v", got)
	}
	if got := callIDs(task.Unknown); !reflect.DeepEqual(got, []string{"t2", "t3"}) {
		t.Errorf("unknown %v", got)
	}
	if got := callIDs(task.Retryable); !reflect.DeepEqual(got, []string{"t4"}) {
		t.Errorf("retryable %v", got)
	}
	if task.Outcome != nil || task.InputDigest != "sha256:in" || task.Fingerprint != "sha256:fp" || len(task.Decisions) != 1 || len(task.Results) != 1 {
		t.Errorf("task state %+v", task)
	}
	if c := task.Completed[1]; c.Result != task.Results[0] || c.Decision == nil || c.Decision.RuleID != "read-notes" || c.ArgumentsDigest != "sha256:args" {
		t.Errorf("tool call lost its scope or result: %+v", c)
	}
}

func TestRecoverReportMarshalsToStableJSON(t *testing.T) {
	t.Parallel()
	var outs []string
	for range 2 {
		store := NewMemoryStore()
		scenario(t, store)
		rep, err := Recover(bg, store)
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(rep)
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, string(b))
	}
	if outs[0] != outs[1] {
		t.Fatalf("two identical runs marshal differently:\n%s\n%s", outs[0], outs[1])
	}
	empty, _ := json.Marshal(fold("x", nil))
	for _, field := range []string{`"agents":[]`, `"completed":[]`, `"unknown":[]`, `"retryable":[]`, `"outcome":null`} {
		if !strings.Contains(string(empty), field) {
			t.Errorf("empty report lacks %s: %s", field, empty)
		}
	}
}

func TestBoltStoreRoundTripsRecords(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	mem := NewMemoryStore()
	db, err := OpenBolt(path, BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id := scenario(t, db)
	scenario(t, mem)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Append(bg, []Record{{TaskID: "x", N: 1}}); err != ErrClosed {
		t.Fatalf("append after close: %v", err)
	}
	db, err = OpenBolt(path, BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	want, _ := mem.Records(bg, id)
	got, err := db.Records(bg, id)
	if err != nil {
		t.Fatal(err)
	}
	wj, _ := json.Marshal(want)
	gj, _ := json.Marshal(got)
	if string(wj) != string(gj) {
		t.Fatalf("bolt records differ from memory records:\n%s\n%s", gj, wj)
	}
	fromBolt, _ := Recover(bg, db)
	fromMem, _ := Recover(bg, mem)
	bj, _ := json.Marshal(fromBolt)
	mj, _ := json.Marshal(fromMem)
	if string(bj) != string(mj) {
		t.Fatalf("recovery differs:\n%s\n%s", bj, mj)
	}
	data, err := db.Result(bg, fromBolt.Tasks[0].Results[0])
	if err != nil || string(data) != `{"note":"N-1"}` {
		t.Fatalf("result %s %v", data, err)
	}
}

func TestBoltGroupCommitAcknowledgesEveryAppend(t *testing.T) {
	t.Parallel()
	db, err := OpenBolt(filepath.Join(t.TempDir(), "g.db"), BoltOptions{MaxBatch: 8})
	if err != nil {
		t.Fatal(err)
	}
	const workers, each = 16, 20
	done := make(chan error, workers)
	for w := range workers {
		go func() {
			task := "task-" + string(rune('a'+w))
			for i := range each {
				if err := db.Append(bg, []Record{{TaskID: task, N: uint64(i + 1), Kind: RecordEvent}}); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range workers {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	tasks, _ := db.Tasks(bg)
	if len(tasks) != workers {
		t.Fatalf("%d tasks", len(tasks))
	}
	for _, task := range tasks {
		recs, _ := db.Records(bg, task)
		if len(recs) != each {
			t.Fatalf("%s has %d records", task, len(recs))
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestSettledDenialIsTheRecordedDecision: a call the tool denied when it
// ran is recovered with the decision that denied it, not the admission's.
func TestSettledDenialIsTheRecordedDecision(t *testing.T) {
	r, store, _ := newRoot(t, Limits{})
	a := r.RootAgentID()
	deny := authority.Decision{Layer: "workspace", RuleID: "builtin.symlink", Reason: "a symlink"}
	if err := r.AdmitToolCall(bg, a, ToolCall{ID: "t1", Name: "fs.read", Decision: authority.Decision{Allowed: true, Layer: "configuration", RuleID: "builtin.configured"}}); err != nil {
		t.Fatal(err)
	}
	if err := r.Dispatch(bg, a, "t1"); err != nil {
		t.Fatal(err)
	}
	if err := r.SettleToolCall(bg, a, "t1", ToolSettlement{Status: outcome.ToolPolicyDenied, Delivery: outcome.ResponseReceived, Decision: deny}); err != nil {
		t.Fatal(err)
	}
	rep, err := RecoverTask(bg, store, r.ID())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Completed) != 1 || rep.Completed[0].Decision == nil || !reflect.DeepEqual(*rep.Completed[0].Decision, deny) {
		t.Fatalf("recovered %+v", rep.Completed)
	}
}
