package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/pabloagent/pablo/clock"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger"
)

// fixedClock is a clock.Clock that reads a set time and never fires.
type fixedClock struct{ now time.Time }

func (c *fixedClock) Now() time.Time { return c.now }

func (c *fixedClock) AfterFunc(time.Duration, func()) clock.Timer {
	panic("the inspector starts no timer")
}

// leasedStore is a ledger store shared with another process (as the
// PostgreSQL store is): live says whether that process still holds
// every task's lease (read by the server's goroutines while a test
// ends the lease).
type leasedStore struct {
	*ledger.MemoryStore
	live atomic.Bool
}

func (s *leasedStore) Lease(_ context.Context, taskID string) (ledger.Lease, error) {
	return ledger.Lease{TaskID: taskID, Owner: "other-process", Token: 1, Live: s.live.Load(), Released: !s.live.Load()}, nil
}

// liveTaskRecords are the records a running task has written so far: its
// start, a finished context compaction, and a spawn that hands an
// earlier child's result to a new child.
func liveTaskRecords(t *testing.T, at time.Time) []ledger.Record {
	t.Helper()
	const (
		id     = "task-live"
		source = "0190f5a8-7a4e-7c1e-8f3a-111111111111"
		result = "0190f5a8-7a4e-7c1e-8f3a-222222222222"
	)
	after, window := "2048", "8192"
	payload := func(v any) json.RawMessage {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	compaction := func(status string, afterBytes *string) json.RawMessage {
		return payload(map[string]any{"type": "context.compaction." + map[bool]string{true: "started", false: "finished"}[status == "running"],
			"compaction": event.Compaction{SchemaVersion: event.CompactionSchemaVersion, ID: "compaction_1", Trigger: "threshold", Status: status,
				BeforeBytes: "65536", AfterBytes: afterBytes, BeforeEstimatedTokens: "16384", WindowTokens: &window, RemovedTurns: "6",
				ReplacedHistorySHA256: "sha256:" + strings.Repeat("ab", 32)}})
	}
	spawn := payload(map[string]any{"type": "tool.started", "call": event.Call{ID: "call_2_1", Name: "subagent",
		Arguments: payload(map[string]any{"action": "spawn", "request": map[string]any{"input": "check the handed-over findings",
			"handoffs": []any{map[string]any{"source_agent_id": source, "result_id": result, "kind": "inline"}}}})}})
	var recs []ledger.Record
	add := func(r ledger.Record) {
		r.TaskID, r.N, r.Time = id, uint64(len(recs)+1), at
		if r.Kind == ledger.RecordEvent {
			r.Event.RootID, r.Event.AgentID, r.Event.Time = id, "root", at
			r.Event.RootSeq, r.Event.Seq = r.N, r.N
		}
		recs = append(recs, r)
	}
	add(ledger.Record{Kind: ledger.RecordTask, Task: &ledger.TaskRecord{TaskID: id, RootAgentID: "root"}})
	add(ledger.Record{Kind: ledger.RecordAgent, Agent: &ledger.AgentRecord{AgentID: "root", Kind: "root"}})
	add(ledger.Record{Kind: ledger.RecordEvent, Event: ledger.Event{Type: string(event.CompactionStarted), Payload: compaction("running", nil)}})
	add(ledger.Record{Kind: ledger.RecordEvent, Event: ledger.Event{Type: string(event.CompactionFinished), Payload: compaction("completed", &after)}})
	add(ledger.Record{Kind: ledger.RecordEvent, Event: ledger.Event{Type: string(event.ToolStarted), Payload: spawn}})
	return recs
}

// TestInspectorTaskPageFollowsALiveTask: the page of a task another
// process is running (its lease live) shows the records written so far
// (the compaction record, the spawn's handoff), says when it read them
// (the injected clock) and reloads itself; once the lease has ended, the
// same page shows the recovery report and no longer reloads.
func TestInspectorTaskPageFollowsALiveTask(t *testing.T) {
	at := time.Date(2026, 12, 5, 3, 4, 5, 0, time.UTC)
	mem := ledger.NewMemoryStore()
	if err := mem.Append(context.Background(), liveTaskRecords(t, at)); err != nil {
		t.Fatal(err)
	}
	store := &leasedStore{MemoryStore: mem}
	store.live.Store(true)
	c := readinessCases(t)[0]
	p, err := parseArgs(c.args, "inspect")
	if err != nil {
		t.Fatal(err)
	}
	stacks, err := loadStacks(context.Background(), p, inspectHost(c.bubblewrap))
	if err != nil {
		t.Fatal(err)
	}
	in, err := newInspector(stacks, store, false)
	if err != nil {
		t.Fatal(err)
	}
	clk := &fixedClock{now: at.Add(90 * time.Second)}
	in.clock = clk
	srv := httptest.NewServer(in)
	defer srv.Close()

	code, page := get(t, srv, "/task?id=task-live")
	if code != http.StatusOK {
		t.Fatalf("the page of a live task answered %d:\n%s", code, page)
	}
	for _, want := range []string{
		`<meta http-equiv="refresh" content="2">`, `data-live="true"`, "read at 2026-12-05 03:05:35Z", "3 events so far",
		`data-compaction="compaction_1"`, "threshold", "completed", "65536 → 2048", "16384 → – (8192)",
		`data-handoff="0190f5a8-7a4e-7c1e-8f3a-222222222222"`, "call_2_1", "0190f5a8-7a4e-7c1e-8f3a-111111111111", "inline",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page of a live task lacks %q:\n%s", want, page)
		}
	}
	if strings.Count(page, "data-compaction=") != 1 {
		t.Errorf("the compaction's started and finished events make one record, the page shows %d", strings.Count(page, "data-compaction="))
	}
	if _, list := get(t, srv, "/tasks"); !strings.Contains(list, "in flight in another process") || !strings.Contains(list, `http-equiv="refresh"`) {
		t.Errorf("the Tasks page does not say the task is in flight, or does not reload:\n%s", list)
	}

	clk.now = clk.now.Add(2 * time.Second)
	if _, page = get(t, srv, "/task?id=task-live"); !strings.Contains(page, "read at 2026-12-05 03:05:37Z") {
		t.Errorf("a reload does not read the clock again:\n%s", page)
	}

	store.live.Store(false)
	_, page = get(t, srv, "/task?id=task-live")
	if strings.Contains(page, "http-equiv") || strings.Contains(page, "data-live") {
		t.Errorf("the page of a task whose lease has ended still reloads:\n%s", page)
	}
	if _, list := get(t, srv, "/tasks"); strings.Contains(list, "http-equiv") {
		t.Errorf("the Tasks page reloads with no task in flight")
	}
	if !strings.Contains(page, "interrupted (no terminal outcome recorded)") || !strings.Contains(page, `data-compaction="compaction_1"`) {
		t.Errorf("the page of a settled lease shows no recovery report or lost its records:\n%s", page)
	}
}

// TestInspectorTaskPageShowsTheAgentTree: a task whose root started a
// child that started a remote shows its agents as that tree, each agent
// nested under the one that started it, with its kind and outcome.
func TestInspectorTaskPageShowsTheAgentTree(t *testing.T) {
	at := time.Date(2026, 12, 5, 3, 4, 5, 0, time.UTC)
	recs := liveTaskRecords(t, at)
	for _, a := range []ledger.AgentRecord{{AgentID: "child-1", ParentID: "root", Kind: "child"}, {AgentID: "remote-1", ParentID: "child-1", Kind: "remote"}, {AgentID: "child-2", ParentID: "root", Kind: "child"}} {
		recs = append(recs, ledger.Record{TaskID: "task-live", N: uint64(len(recs) + 1), Time: at, Kind: ledger.RecordAgent, Agent: &a})
	}
	mem := ledger.NewMemoryStore()
	if err := mem.Append(context.Background(), recs); err != nil {
		t.Fatal(err)
	}
	store := &leasedStore{MemoryStore: mem} // the lease has ended
	c := readinessCases(t)[0]
	p, err := parseArgs(c.args, "inspect")
	if err != nil {
		t.Fatal(err)
	}
	stacks, err := loadStacks(context.Background(), p, inspectHost(c.bubblewrap))
	if err != nil {
		t.Fatal(err)
	}
	in, err := newInspector(stacks, store, false)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(in)
	defer srv.Close()
	code, page := get(t, srv, "/task?id=task-live")
	if code != http.StatusOK {
		t.Fatalf("the task page answered %d:\n%s", code, page)
	}
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	// parent is each agent's nearest enclosing agent on the page.
	parent := map[string]string{}
	kinds := map[string]string{}
	var walk func(*html.Node, string)
	walk = func(n *html.Node, in string) {
		if n.Type == html.ElementNode {
			if id, ok := attr(n, "data-agent"); ok {
				parent[id] = in
				kinds[id], _ = attr(n, "data-kind")
				in = id
			}
		}
		for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
			walk(ch, in)
		}
	}
	walk(doc, "")
	want := map[string]string{"root": "", "child-1": "root", "remote-1": "child-1", "child-2": "root"}
	for id, p := range want {
		if got, ok := parent[id]; !ok || got != p {
			t.Errorf("agent %s is under %q on the page (shown %t), want under %q", id, got, ok, p)
		}
	}
	if kinds["remote-1"] != "remote" || kinds["child-1"] != "child" {
		t.Errorf("the agents' kinds on the page are %v", kinds)
	}
	if !strings.Contains(page, "no outcome recorded") {
		t.Error("an agent with no outcome does not say so")
	}
	assertInert(t, "/task", page)
}
