package pablo_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/approval"
	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/children"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/model"
)

// fanInModel plays the seed's bounded fan-in: the root spawns two
// readers, waits for both and answers with their results; a child answers
// "read: <its input>". It tells the agents apart by the first message of
// the request, and keeps every request it saw.
type fanInModel struct {
	mu   sync.Mutex
	seen []model.Request
}

const fanInRoot = "Compare the two reports."

func (m *fanInModel) Info() model.Info {
	return model.Info{Provider: "test", Model: "fan-in"}
}

func (m *fanInModel) Generate(_ context.Context, req *model.Request, emit func(string) error) (*model.Response, error) {
	m.mu.Lock()
	m.seen = append(m.seen, *req)
	m.mu.Unlock()
	first := req.Messages[0].Content
	if first != fanInRoot {
		text := "read: " + first
		return &model.Response{Text: text, FinishReason: model.FinishStop}, emit(text)
	}
	var results []string
	for _, msg := range req.Messages {
		if msg.Role == model.RoleTool {
			results = append(results, msg.Content)
		}
	}
	call := func(id, args string) model.ToolCall {
		return model.ToolCall{ID: id, Name: "subagent", Arguments: json.RawMessage(args)}
	}
	switch len(results) {
	case 0:
		return &model.Response{FinishReason: model.FinishToolCalls, ToolCalls: []model.ToolCall{
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
		return &model.Response{FinishReason: model.FinishToolCalls, ToolCalls: []model.ToolCall{
			call("w1", `{"action":"wait","agent_ids":[`+strings.Join(ids, ",")+`],"mode":"all","timeout_ms":60000}`),
		}}, nil
	}
	text := "synthesis of " + results[len(results)-1]
	return &model.Response{Text: text, FinishReason: model.FinishStop}, emit(text)
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
	if obj.Outcome.Status != event.StatusCompleted || !strings.Contains(*obj.Outcome.Output, "read: report") {
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

func (m *blockingTree) Info() model.Info {
	return model.Info{Provider: "test", Model: "blocking"}
}

func (m *blockingTree) Generate(ctx context.Context, req *model.Request, emit func(string) error) (*model.Response, error) {
	first := req.Messages[0].Content
	if first != fanInRoot {
		m.started <- first
		<-ctx.Done()
		return nil, &model.Error{Code: "provider_transport", Delivery: "may_have_been_sent", Err: ctx.Err()}
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
		if msg.Role == model.RoleTool && json.Unmarshal([]byte(msg.Content), &v) == nil && v.Subagent.Agent.AgentID != "" {
			ids = append(ids, `"`+v.Subagent.Agent.AgentID+`"`)
		}
	}
	if len(ids) == 0 {
		var calls []model.ToolCall
		for i := range m.n {
			calls = append(calls, model.ToolCall{ID: fmt.Sprint("s", i), Name: "subagent",
				Arguments: json.RawMessage(fmt.Sprintf(`{"action":"spawn","request":{"input":"child %d"}}`, i))})
		}
		return &model.Response{FinishReason: model.FinishToolCalls, ToolCalls: calls}, nil
	}
	return &model.Response{FinishReason: model.FinishToolCalls, ToolCalls: []model.ToolCall{{ID: "w", Name: "subagent",
		Arguments: json.RawMessage(`{"action":"wait","agent_ids":[` + strings.Join(ids, ",") + `],"mode":"all","timeout_ms":900000}`)}}}, nil
}

// TestRootCancelJoinsTheTree: cancelling the root while two children run
// and one is queued stops admission, settles the queued child without
// running it, cancels the active ones and joins them all before the root's
// terminal event; no goroutine of the tree outlives the task.
func TestRootCancelJoinsTheTree(t *testing.T) {
	before := runtime.NumGoroutine()
	_, task, m, store := startBlockedTree(t)
	task.Cancel()
	obj := task.Wait()
	if obj.Outcome.Status != event.StatusCancelled {
		t.Fatalf("root outcome %+v", obj.Outcome)
	}
	noQueuedChildRan(t, m)
	finished := map[string]string{}
	var last event.Event
	for ev := range task.Events() {
		if ev.Type == event.RunFinished {
			finished[ev.Agent.AgentID] = string(ev.Outcome.Status)
		}
		last = ev
	}
	if last.Type != event.RunFinished || last.Agent.Depth != 0 {
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
	noGoroutineLeft(t, before)
}

// startBlockedTree starts a fan-in root of three children under the
// default capacity: two run and block until cancelled, the third waits in
// the queue. It returns once the two are running.
func startBlockedTree(t *testing.T) (*pablo.Runtime, *pablo.Task, *blockingTree, ledger.Store) {
	t.Helper()
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
	return rt, task, m, store
}

// noQueuedChildRan fails if the queued child of startBlockedTree started.
func noQueuedChildRan(t *testing.T, m *blockingTree) {
	t.Helper()
	select {
	case in := <-m.started:
		t.Fatalf("the queued child %q ran after the tree was stopped", in)
	default:
	}
}

// noGoroutineLeft waits, boundedly, for the goroutines that are leaving
// (the task's own returns just after Done closes) to be gone, and fails if
// more than before remain: a leak stays.
func noGoroutineLeft(t *testing.T, before int) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > before && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines left, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}

// artifactModel: the root spawns a writer whose validated answer names
// the file it wrote as an artifact, waits, optionally rewrites the file
// (stale), then hands the artifact to a reader and waits for it.
type artifactModel struct {
	ws    string
	stale bool
	mu    sync.Mutex
	asked map[string]int // model requests per agent input
}

const (
	artifactRoot   = "Write then read."
	artifactWriter = "Write the report."
	artifactReader = "Read the handed-off report."
	artifactBody   = "the report\n"
)

func (m *artifactModel) Info() model.Info {
	return model.Info{Provider: "test", Model: "artifact"}
}

func (m *artifactModel) Generate(_ context.Context, req *model.Request, emit func(string) error) (*model.Response, error) {
	first := req.Messages[0].Content
	m.mu.Lock()
	m.asked[first]++
	m.mu.Unlock()
	call := func(id, name, args string) *model.Response {
		return &model.Response{FinishReason: model.FinishToolCalls, ToolCalls: []model.ToolCall{{ID: id, Name: name, Arguments: json.RawMessage(args)}}}
	}
	tools := 0
	var last string
	for _, msg := range req.Messages {
		if msg.Role == model.RoleTool {
			tools++
			last = msg.Content
		}
	}
	switch first {
	case artifactWriter:
		if tools == 0 {
			return call("w", "fs_write", `{"path":"report.md","text":`+strconv.Quote(artifactBody)+`,"expected_revision":null}`), nil
		}
		sum := sha256.Sum256([]byte(artifactBody))
		text := `{"artifact":{"path":"report.md","revision":"` + hex.EncodeToString(sum[:]) + `"}}`
		return &model.Response{Text: text, FinishReason: model.FinishStop}, emit(text)
	case artifactReader:
		text := "read it"
		return &model.Response{Text: text, FinishReason: model.FinishStop}, emit(text)
	}
	id := func(field string) string {
		var v struct {
			Subagent struct {
				Agent struct {
					AgentID string `json:"agent_id"`
				} `json:"agent"`
				Settled []struct {
					AgentID  string `json:"agent_id"`
					ResultID string `json:"result_id"`
				} `json:"settled"`
			} `json:"subagent"`
		}
		json.Unmarshal([]byte(last), &v)
		if field == "agent" {
			return v.Subagent.Agent.AgentID
		}
		if len(v.Subagent.Settled) == 0 {
			return ""
		}
		return v.Subagent.Settled[0].AgentID + " " + v.Subagent.Settled[0].ResultID
	}
	switch tools {
	case 0:
		return call("s1", "subagent", `{"action":"spawn","request":{"input":"`+artifactWriter+`","capabilities":{"tools":["fs.write"]},
			"output_schema":{"type":"object","properties":{"artifact":{"type":"object","properties":{"path":{"type":"string"},"revision":{"type":"string"}},"required":["path","revision"],"additionalProperties":false}},"required":["artifact"],"additionalProperties":false}}}`), nil
	case 1:
		return call("w1", "subagent", `{"action":"wait","agent_ids":["`+id("agent")+`"],"mode":"all","timeout_ms":60000}`), nil
	case 2:
		agent, result, _ := strings.Cut(id("settled"), " ")
		if m.stale {
			os.WriteFile(filepath.Join(m.ws, "report.md"), []byte("replaced\n"), 0o600)
		}
		return call("s2", "subagent", `{"action":"spawn","request":{"input":"`+artifactReader+`","capabilities":{"tools":["fs.read"]},
			"handoffs":[{"source_agent_id":"`+agent+`","result_id":"`+result+`","kind":"artifact"}]}}`), nil
	case 3:
		return call("w2", "subagent", `{"action":"wait","agent_ids":["`+id("agent")+`"],"mode":"all","timeout_ms":60000}`), nil
	}
	return &model.Response{Text: last, FinishReason: model.FinishStop}, emit(last)
}

// TestArtifactHandoffIsVerifiedBeforeTheReaderStarts: a writer child's
// validated answer names the file it wrote; handed off as an artifact, the
// file is re-checked right before the reader starts, and a file changed in
// between fails the reader stale with no model call of its own.
func TestArtifactHandoffIsVerifiedBeforeTheReaderStarts(t *testing.T) {
	for _, stale := range []bool{false, true} {
		dir := t.TempDir()
		ws := filepath.Join(dir, "work")
		os.Mkdir(ws, 0o700)
		os.WriteFile(filepath.Join(dir, "deployment.toml"), []byte("schema_version = 1\n[options.filesystem]\nwrite = true\n[options.shell]\nenabled = false\n[options.children]\nenabled = true\n"), 0o600)
		d, err := pablo.Load(pablo.LoadOptions{Config: filepath.Join(dir, "deployment.toml"), Bindings: map[string]string{"workspace": ws}})
		if err != nil {
			t.Fatal(err)
		}
		m := &artifactModel{ws: ws, stale: stale, asked: map[string]int{}}
		rt, err := d.NewRuntime(context.Background(), pablo.HostOptions{Model: m})
		if err != nil {
			t.Fatal(err)
		}
		obj, err := rt.Run(context.Background(), artifactRoot)
		rt.Close()
		if err != nil || obj.Outcome.Status != event.StatusCompleted {
			t.Fatalf("stale=%v: %+v %v", stale, obj.Outcome, err)
		}
		out := *obj.Outcome.Output
		switch {
		case !stale && (!strings.Contains(out, `"status":"completed"`) || m.asked[artifactReader] != 1):
			t.Errorf("fresh artifact: the reader should have run once: %s (asked %d)", out, m.asked[artifactReader])
		case stale && (!strings.Contains(out, "stale_artifact") && !strings.Contains(out, "child_admission") || m.asked[artifactReader] != 0):
			t.Errorf("stale artifact: the reader must fail with no model call: %s (asked %d)", out, m.asked[artifactReader])
		}
	}
}

// TestChildCallsAskTheRootsApproverAndNarrowOnly: a child's call that needs
// approval goes to the task's one approver, labelled with the child's agent
// ID; a spawn asking for a tool the root lacks is refused and runs nothing.
func TestChildCallsAskTheRootsApproverAndNarrowOnly(t *testing.T) {
	set, err := authority.New(authority.Config{Native: []authority.ID{authority.Subagent}, Host: []authority.ID{"notes.read"},
		Layers: []authority.Layer{{ID: "case", Kind: authority.KindAuthority, Dimensions: map[authority.Dimension]*authority.Rules{
			"note": {Default: authority.Deny, Allow: []authority.Rule{{ID: "case.n1", Value: "N-1"}}},
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	script, err := pablo.ParseScript([]byte(`{"turns":[
		{"tool_calls":[{"id":"bad","name":"subagent","arguments":{"action":"spawn","request":{"input":"widen","capabilities":{"tools":["shell.run"]}}}}]},
		{"tool_calls":[{"id":"s1","name":"subagent","arguments":{"action":"spawn","request":{"input":"read the note","capabilities":{"tools":["notes.read"]}}}}]},
		{"tool_calls":[{"id":"w1","name":"subagent","arguments":{"action":"wait","agent_ids":["{{agent_id:s1}}"],"mode":"all","timeout_ms":60000}}]},
		{"text":["done"]}],
		"agents":[{"input":"read the note","turns":[{"tool_calls":[{"id":"n","name":"notes_read","arguments":{"note_id":"N-1"}}]},{"text":["read"]}]},
		          {"input":"widen","turns":[{"text":["must never run"]}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := pablo.NewRuntime(pablo.RuntimeOptions{Model: pablo.NewScriptModel(script), Authority: gate{set, "notes.read"},
		Catalogs: []pablo.ToolCatalog{notes{}}, Children: &children.Capacity{}})
	if err != nil {
		t.Fatal(err)
	}
	var asked []approval.Request
	task, err := rt.StartTask(context.Background(), pablo.TaskRequest{Input: "go", Approver: approverFunc(func(_ context.Context, req approval.Request) (approval.Answer, error) {
		asked = append(asked, req)
		return approval.AllowOnce, nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	var refusal string
	childAgents := map[string]bool{}
	for ev := range task.Events() {
		if ev.Agent.Depth > 0 {
			childAgents[ev.Agent.AgentID] = true
		}
		if ev.Type == event.ToolFinished && ev.CallID == "call_1_1" && ev.Agent.Depth == 0 { // the model's "bad"
			refusal = string(ev.Result)
		}
	}
	if obj := task.Wait(); obj.Outcome.Status != event.StatusCompleted {
		t.Fatalf("outcome %+v", obj.Outcome)
	}
	if !strings.Contains(refusal, "capability_not_inherited") {
		t.Errorf("a spawn widening the root: %s", refusal)
	}
	if len(childAgents) != 1 {
		t.Errorf("%d children ran, want only the narrowing one", len(childAgents))
	}
	if len(asked) != 1 || !childAgents[asked[0].AgentID] || asked[0].Tool != "notes.read" {
		t.Fatalf("approval requests %+v, want the child's one call, under its agent ID", asked)
	}
}
