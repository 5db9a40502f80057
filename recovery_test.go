package pablo

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/ledger/outcome"
	"github.com/pabloagent/pablo/model"
)

// mistakenModel answers with its turns in order and keeps every request,
// so a test can read what the model was told.
type mistakenModel struct {
	mu    sync.Mutex
	turns []model.Response
	reqs  []model.Request
}

func (m *mistakenModel) Info() model.Info { return model.Info{Provider: "test", Model: "mistaken"} }

func (m *mistakenModel) Generate(_ context.Context, req *model.Request, _ func(string) error) (*model.Response, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reqs = append(m.reqs, *req)
	r := m.turns[min(len(m.reqs)-1, len(m.turns)-1)]
	return &r, nil
}

// told is what the model was told about the calls of its turn-th turn
// (1-based): the tool results of the request after it, by call ID.
func (m *mistakenModel) told(t *testing.T, turn int) map[string]map[string]any {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]map[string]any{}
	if turn >= len(m.reqs) {
		t.Fatalf("no request followed turn %d", turn)
	}
	msgs := m.reqs[turn].Messages
	for i := len(msgs) - 1; i >= 0 && msgs[i].Role == model.RoleTool; i-- {
		var v map[string]any
		json.Unmarshal([]byte(msgs[i].Content), &v)
		out[msgs[i].ToolCallID] = v
	}
	return out
}

func calls(cs ...model.ToolCall) model.Response {
	return model.Response{FinishReason: model.FinishToolCalls, ToolCalls: cs}
}

func call(id, name, args string) model.ToolCall {
	return model.ToolCall{ID: id, Name: name, Arguments: json.RawMessage(args)}
}

var doneTurn = model.Response{Text: "done", FinishReason: model.FinishStop}

// runMistaken runs one task of m on a deployment with body (after the
// file tools' section) and a workspace holding a.txt.
func runMistaken(t *testing.T, m *mistakenModel, body string) (*TaskObject, *ledger.MemoryStore) {
	t.Helper()
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("alpha\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "deployment.toml"), []byte("schema_version = 1\n[options.shell]\nenabled = false\n"+body), 0o600)
	d, err := Load(LoadOptions{Config: filepath.Join(dir, "deployment.toml"), Bindings: map[string]string{"workspace": ws}})
	if err != nil {
		t.Fatal(err)
	}
	store := ledger.NewMemoryStore()
	rt, err := d.NewRuntime(context.Background(), HostOptions{Model: m, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	obj, _ := runTask(t, rt, "Read a.txt.")
	return obj, store
}

// callRecord is the ledger's record of the task's call callID.
func callRecord(t *testing.T, store *ledger.MemoryStore, runID, callID string) ledger.CallReport {
	t.Helper()
	rep, err := ledger.RecoverTask(context.Background(), store, runID)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Completed {
		if c.CallID == callID {
			return c
		}
	}
	t.Fatalf("no record of %s: %+v", callID, rep.Completed)
	return ledger.CallReport{}
}

// TestMisselectionGoesBackToTheModel: arguments that fail the schema and
// a tool that is not offered each go back to the model as a typed tool
// result (the status, the JSON pointer and the rule, the tools it may
// call), never reaching a tool; the model corrects itself and the task
// completes. The ledger records each mistaken call as it always did, not
// dispatched.
func TestMisselectionGoesBackToTheModel(t *testing.T) {
	t.Parallel()
	m := &mistakenModel{turns: []model.Response{
		calls(call("w1", "fs_read", `{"file":"a.txt"}`)),
		calls(call("w2", "fs_open", `{"path":"a.txt"}`)),
		calls(call("w3", "fs_read", `{"path":"a.txt"}`)),
		doneTurn,
	}}
	obj, store := runMistaken(t, m, "")
	// One tool call is charged: the mistaken ones never dispatched.
	if obj.Outcome.Status != event.StatusCompleted || obj.Accounting.ToolCalls.N != 1 {
		b, _ := json.Marshal(obj)
		t.Fatalf("outcome %s", b)
	}
	wrong := m.told(t, 1)["w1"]
	e, _ := wrong["error"].(map[string]any)
	if wrong["status"] != "invalid_arguments" || wrong["tool"] != "fs_read" || e["pointer"] != "/file" || e["rule"] != "extra_field" || wrong["recoverable_errors_left"] != float64(2) {
		t.Fatalf("told about the wrong argument: %v", wrong)
	}
	if !strings.Contains(jsonOf(wrong["tools"]), `"fs_read"`) {
		t.Fatalf("the tools it may call: %v", wrong["tools"])
	}
	unknown := m.told(t, 2)["w2"]
	if unknown["status"] != "tool_unavailable" || unknown["tool"] != "fs_open" || unknown["policy_rule"] != "tool_unavailable" {
		t.Fatalf("told about the unknown tool: %v", unknown)
	}
	if c := callRecord(t, store, *obj.RunID, "call_1_1"); c.Status != string(outcome.ToolInvalidArguments) || c.Delivery != outcome.NotSent {
		t.Fatalf("the invalid call's record: %+v", c)
	}
	if c := callRecord(t, store, *obj.RunID, "call_2_1"); c.Status != string(outcome.ToolPolicyDenied) || c.Delivery != outcome.NotSent || c.Decision == nil || c.Decision.Allowed {
		t.Fatalf("the unknown call's record: %+v", c)
	}
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestMisselectionWithoutRecoveryEndsAsToday: max_recoverable_errors = 0
// is the reference's contract: each mistake ends the task with the outcome
// it always had, and an invalid argument's outcome names the tool and the
// argument.
func TestMisselectionWithoutRecoveryEndsAsToday(t *testing.T) {
	t.Parallel()
	off := "[options.tools]\nmax_recoverable_errors = 0\n"
	obj, _ := runMistaken(t, &mistakenModel{turns: []model.Response{calls(call("w1", "fs_read", `{"file":"a.txt"}`)), doneTurn}}, off)
	if o := obj.Outcome; o.Status != event.StatusFailed || o.Code != outcome.FailInvalidToolArguments || !strings.Contains(o.Reason, "fs.read") || !strings.Contains(o.Reason, "/file") {
		t.Fatalf("outcome %s", jsonOf(o))
	}
	obj, _ = runMistaken(t, &mistakenModel{turns: []model.Response{calls(call("w1", "fs_open", `{}`)), doneTurn}}, off)
	if o := obj.Outcome; o.Status != event.StatusPolicyDenied || o.Rule != "tool_unavailable" {
		t.Fatalf("outcome %s", jsonOf(o))
	}
}

// TestRecoverableErrorsAreBoundedAndConsecutive: past the bound of
// mistakes in a row the next one ends the task as today; a well-chosen
// call in between starts the count again.
func TestRecoverableErrorsAreBoundedAndConsecutive(t *testing.T) {
	t.Parallel()
	bad := calls(call("w", "fs_open", `{}`))
	good := calls(call("g", "fs_read", `{"path":"a.txt"}`))
	two := "[options.tools]\nmax_recoverable_errors = 2\n"
	obj, _ := runMistaken(t, &mistakenModel{turns: []model.Response{bad, bad, bad, doneTurn}}, two)
	if o := obj.Outcome; o.Status != event.StatusPolicyDenied || o.Rule != "tool_unavailable" || obj.Accounting.ModelCalls.N != 3 {
		t.Fatalf("a third mistake in a row: %s after %s model calls", jsonOf(o), obj.Accounting.ModelCalls)
	}
	obj, _ = runMistaken(t, &mistakenModel{turns: []model.Response{bad, bad, good, bad, bad, doneTurn}}, two)
	if obj.Outcome.Status != event.StatusCompleted {
		t.Fatalf("the count did not start again after a good call: %s", jsonOf(obj.Outcome))
	}
}

// TestDenialEndsTheTaskUnlessReported: a policy denial (a path outside the
// workspace) ends the task by default, as the reference does; under
// options.tools.on_denial = "report" it goes back to the model as a
// policy_denied result naming the rule and saying a retry is futile, and
// the task completes. Either way the ledger records the call denied, with
// its decision, not dispatched, not charged.
func TestDenialEndsTheTaskUnlessReported(t *testing.T) {
	t.Parallel()
	turns := func() *mistakenModel {
		return &mistakenModel{turns: []model.Response{
			calls(call("d1", "fs_read", `{"path":"../outside.txt"}`)),
			calls(call("g", "fs_read", `{"path":"a.txt"}`)),
			doneTurn,
		}}
	}
	obj, store := runMistaken(t, turns(), "")
	if o := obj.Outcome; o.Status != event.StatusPolicyDenied {
		t.Fatalf("a denial by default: %s", jsonOf(o))
	}
	first := callRecord(t, store, *obj.RunID, "call_1_1")
	m := turns()
	obj, store = runMistaken(t, m, "[options.tools]\non_denial = \"report\"\n")
	if obj.Outcome.Status != event.StatusCompleted || obj.Accounting.ToolCalls.N != 1 {
		t.Fatalf("on_denial = report: %s, %s tool calls", jsonOf(obj.Outcome), obj.Accounting.ToolCalls)
	}
	told := m.told(t, 1)["d1"]
	e, _ := told["error"].(map[string]any)
	if told["status"] != "policy_denied" || told["policy_rule"] == nil || !strings.Contains(e["message"].(string), "futile") {
		t.Fatalf("told about the denial: %v", told)
	}
	c := callRecord(t, store, *obj.RunID, "call_1_1")
	if c.Status != string(outcome.ToolPolicyDenied) || c.Delivery != outcome.NotSent || c.Decision == nil || c.Decision.Allowed ||
		c.Decision.Layer != first.Decision.Layer || c.Decision.RuleID != first.Decision.RuleID {
		t.Fatalf("the reported denial's record %+v, the terminal one's %+v", c, first)
	}
}
