package pablo_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/children"
	"github.com/pabloagent/pablo/ledger"
)

// fanInModel plays the seed's bounded fan-in: the root spawns two
// readers, waits for both and answers with their results; a child answers
// "read: <its input>". It tells the agents apart by the first message of
// the request, and keeps every request it saw.
type fanInModel struct {
	mu   sync.Mutex
	seen []pablo.ModelRequest
}

const fanInRoot = "Compare the two reports."

func (m *fanInModel) Info() pablo.ModelInfo {
	return pablo.ModelInfo{Provider: "test", Model: "fan-in"}
}

func (m *fanInModel) Generate(_ context.Context, req *pablo.ModelRequest, emit func(string) error) (*pablo.ModelResponse, error) {
	m.mu.Lock()
	m.seen = append(m.seen, *req)
	m.mu.Unlock()
	first := req.Messages[0].Content
	if first != fanInRoot {
		text := "read: " + first
		return &pablo.ModelResponse{Text: text, FinishReason: pablo.FinishStop}, emit(text)
	}
	var results []string
	for _, msg := range req.Messages {
		if msg.Role == pablo.RoleTool {
			results = append(results, msg.Content)
		}
	}
	call := func(id, args string) pablo.ToolCall {
		return pablo.ToolCall{ID: id, Name: "subagent", Arguments: json.RawMessage(args)}
	}
	switch len(results) {
	case 0:
		return &pablo.ModelResponse{FinishReason: pablo.FinishToolCalls, ToolCalls: []pablo.ToolCall{
			call("s1", `{"action":"spawn","request":{"input":"report A","capabilities":{"tools":[]}}}`),
			call("s2", `{"action":"spawn","request":{"input":"report B","capabilities":{"tools":[]}}}`),
		}}, nil
	case 2:
		var ids []string
		for _, r := range results {
			var v struct {
				Subagent struct {
					Agent struct {
						AgentID string `json:"agent_id"`
					} `json:"agent"`
				} `json:"subagent"`
			}
			if err := json.Unmarshal([]byte(r), &v); err != nil || v.Subagent.Agent.AgentID == "" {
				return nil, fmt.Errorf("spawn result %s: %v", r, err)
			}
			ids = append(ids, `"`+v.Subagent.Agent.AgentID+`"`)
		}
		return &pablo.ModelResponse{FinishReason: pablo.FinishToolCalls, ToolCalls: []pablo.ToolCall{
			call("w1", `{"action":"wait","agent_ids":[`+strings.Join(ids, ",")+`],"mode":"all","timeout_ms":60000}`),
		}}, nil
	}
	text := "synthesis of " + results[len(results)-1]
	return &pablo.ModelResponse{Text: text, FinishReason: pablo.FinishStop}, emit(text)
}

// TestChildrenRunOnTheRootLedger: with children enabled the root model sees
// one subagent tool; each child runs as its own agent of the root's task
// (its events in the task's one stream with its agent and the tree's
// root_seq, its calls in the root's ledger), sees its own input and never
// the parent's transcript, cannot spawn, and settles before the root's
// terminal event.
func TestChildrenRunOnTheRootLedger(t *testing.T) {
	set, err := authority.New(authority.Config{Native: []authority.ID{authority.Subagent}})
	if err != nil {
		t.Fatal(err)
	}
	m := &fanInModel{}
	store := ledger.NewMemoryStore()
	rt, err := pablo.NewRuntime(pablo.RuntimeOptions{Model: m, Authority: set, Store: store, Children: &children.Capacity{}})
	if err != nil {
		t.Fatal(err)
	}
	task, err := rt.Start(context.Background(), fanInRoot)
	if err != nil {
		t.Fatal(err)
	}
	agents := map[string][]string{}
	var root string
	var last uint64
	for ev := range task.Events() {
		if ev.RootSeq != last+1 {
			t.Fatalf("root_seq %d after %d", ev.RootSeq, last)
		}
		last = ev.RootSeq
		agents[ev.Agent.AgentID] = append(agents[ev.Agent.AgentID], string(ev.Type))
		if ev.Agent.Depth == 0 {
			root = ev.Agent.AgentID
		} else if ev.Agent.Kind != "local_acp_temporary" || ev.Agent.Depth != 1 || ev.Agent.ParentAgentID == "" || ev.Agent.RootRunID != task.ID() {
			t.Errorf("child event %s: agent %+v", ev.Type, ev.Agent)
		}
	}
	obj := task.Wait()
	if obj.Outcome.Status != pablo.StatusCompleted || !strings.Contains(*obj.Outcome.Output, "read: report") {
		t.Fatalf("root outcome %+v", obj.Outcome)
	}
	if len(agents) != 3 {
		t.Fatalf("agents %v, want the root and two children", agents)
	}
	for id, types := range agents {
		if types[len(types)-1] != "run.finished" {
			t.Errorf("agent %s ends with %s", id, types[len(types)-1])
		}
	}
	if got := agents[root]; got[len(got)-1] != "run.finished" {
		t.Fatalf("root events %v", got)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, req := range m.seen {
		if req.Messages[0].Content == fanInRoot {
			if len(req.Tools) != 1 || req.Tools[0].Name != "subagent" {
				t.Errorf("the root sees tools %v, want the one subagent tool", req.Tools)
			}
			continue
		}
		for _, msg := range req.Messages {
			if strings.Contains(msg.Content, fanInRoot) {
				t.Errorf("a child saw its parent's transcript: %q", msg.Content)
			}
		}
		for _, tool := range req.Tools {
			if tool.Name == "subagent" {
				t.Error("a child was offered subagent: depth is one")
			}
		}
	}
	rep, err := ledger.RecoverTask(context.Background(), store, task.ID())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Agents) != 3 || len(rep.Unknown) != 0 || len(rep.Retryable) != 0 {
		t.Fatalf("the ledger holds the tree: %+v", rep)
	}
	for _, a := range rep.Agents {
		if a.Outcome == nil {
			t.Errorf("agent %s has no terminal record", a.AgentID)
		}
	}
}

// blockingTree is a model whose root spawns n children and waits for all
// of them, and whose children block until they are cancelled. started
// receives each child's input as its first request arrives.
type blockingTree struct {
	n       int
	started chan string
}

func (m *blockingTree) Info() pablo.ModelInfo {
	return pablo.ModelInfo{Provider: "test", Model: "blocking"}
}

func (m *blockingTree) Generate(ctx context.Context, req *pablo.ModelRequest, emit func(string) error) (*pablo.ModelResponse, error) {
	first := req.Messages[0].Content
	if first != fanInRoot {
		m.started <- first
		<-ctx.Done()
		return nil, &pablo.ModelError{Code: "provider_transport", Delivery: "may_have_been_sent", Err: ctx.Err()}
	}
	var ids []string
	for _, msg := range req.Messages {
		var v struct {
			Subagent struct {
				Agent struct {
					AgentID string `json:"agent_id"`
				} `json:"agent"`
			} `json:"subagent"`
		}
		if msg.Role == pablo.RoleTool && json.Unmarshal([]byte(msg.Content), &v) == nil && v.Subagent.Agent.AgentID != "" {
			ids = append(ids, `"`+v.Subagent.Agent.AgentID+`"`)
		}
	}
	if len(ids) == 0 {
		var calls []pablo.ToolCall
		for i := range m.n {
			calls = append(calls, pablo.ToolCall{ID: fmt.Sprint("s", i), Name: "subagent",
				Arguments: json.RawMessage(fmt.Sprintf(`{"action":"spawn","request":{"input":"child %d"}}`, i))})
		}
		return &pablo.ModelResponse{FinishReason: pablo.FinishToolCalls, ToolCalls: calls}, nil
	}
	return &pablo.ModelResponse{FinishReason: pablo.FinishToolCalls, ToolCalls: []pablo.ToolCall{{ID: "w", Name: "subagent",
		Arguments: json.RawMessage(`{"action":"wait","agent_ids":[` + strings.Join(ids, ",") + `],"mode":"all","timeout_ms":900000}`)}}}, nil
}

// TestRootCancelJoinsTheTree: cancelling the root while two children run
// and one is queued stops admission, settles the queued child without
// running it, cancels the active ones and joins them all before the root's
// terminal event; no goroutine of the tree outlives the task.
func TestRootCancelJoinsTheTree(t *testing.T) {
	before := runtime.NumGoroutine()
	set, _ := authority.New(authority.Config{Native: []authority.ID{authority.Subagent}})
	m := &blockingTree{n: 3, started: make(chan string, 3)}
	store := ledger.NewMemoryStore()
	rt, err := pablo.NewRuntime(pablo.RuntimeOptions{Model: m, Authority: set, Store: store, Children: &children.Capacity{}})
	if err != nil {
		t.Fatal(err)
	}
	task, err := rt.Start(context.Background(), fanInRoot)
	if err != nil {
		t.Fatal(err)
	}
	<-m.started
	<-m.started
	task.Cancel()
	obj := task.Wait()
	if obj.Outcome.Status != pablo.StatusCancelled {
		t.Fatalf("root outcome %+v", obj.Outcome)
	}
	select {
	case in := <-m.started:
		t.Fatalf("the queued child %q ran after the root was cancelled", in)
	default:
	}
	finished := map[string]string{}
	var last pablo.Event
	for ev := range task.Events() {
		if ev.Type == pablo.EventRunFinished {
			finished[ev.Agent.AgentID] = string(ev.Outcome.Status)
		}
		last = ev
	}
	if last.Type != pablo.EventRunFinished || last.Agent.Depth != 0 {
		t.Fatalf("the last event is %s of %+v, want the root's run.finished", last.Type, last.Agent)
	}
	active := 0
	for id, status := range finished {
		if id != last.Agent.AgentID {
			active++
			if status != "cancelled" {
				t.Errorf("child %s ended %s", id, status)
			}
		}
	}
	if active != 2 {
		t.Errorf("%d children have a terminal event, want the 2 that ran: %v", active, finished)
	}
	rep, err := ledger.RecoverTask(context.Background(), store, task.ID())
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range rep.Agents {
		if a.Outcome == nil {
			t.Errorf("agent %s (%s) has no terminal record", a.AgentID, a.Kind)
		}
	}
	// The task's goroutine returns just after Done closes: give the
	// goroutines that are leaving a moment to be gone (a leak stays).
	for end := time.Now().Add(2 * time.Second); runtime.NumGoroutine() > before && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines after the task, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}
