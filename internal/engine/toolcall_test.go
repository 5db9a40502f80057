package engine

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger/outcome"
	"github.com/pabloagent/pablo/model"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/ledger"
)

// countedNotes is one host tool, notes.read, that counts the calls that
// reach it.
type countedNotes struct{ calls *int }

func (countedNotes) Tools() []authority.ToolSpec {
	return []authority.ToolSpec{{
		ID:          "notes.read",
		Description: "Read one note by ID.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"note_id":{"type":"string"}},"required":["note_id"],"additionalProperties":false}`),
		Resources: func(args map[string]any) []authority.Resource {
			return []authority.Resource{{Kind: "note", Value: args["note_id"].(string)}}
		},
	}}
}

func (c countedNotes) Call(context.Context, authority.Call) ledger.ToolResult {
	*c.calls++
	return ledger.Completed(map[string]any{"note": "due 2027-01-01"})
}

// stagedStep is the loop state of a task that has opened its catalogs and
// made no call yet: a test drives its tool-call stages one at a time.
type stagedStep struct {
	*step
	calls  int      // the calls that reached the tool
	events []string // the event types the sink received
	store  *ledger.MemoryStore
	model  countingModel
}

// stageOptions shape a staged step: its ceilings, and an event type its
// sink refuses.
type stageOptions struct {
	limits ledger.Limits
	refuse event.Type
	// catalog, when set, wraps the notes tool in the test's own catalog.
	catalog func(countedNotes) Catalog
}

func newStagedStep(t *testing.T, limits ledger.Limits) *stagedStep {
	t.Helper()
	return stage(t, stageOptions{limits: limits})
}

func stage(t *testing.T, o stageOptions) *stagedStep {
	t.Helper()
	set, err := authority.New(authority.Config{
		Host: []authority.ID{"notes.read"},
		Layers: []authority.Layer{{ID: "case", Kind: authority.KindAuthority, Dimensions: map[authority.Dimension]*authority.Rules{
			"note": {Default: authority.Deny, Allow: []authority.Rule{{ID: "case.n1", Value: "N-1"}}},
		}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ss := &stagedStep{store: ledger.NewMemoryStore()}
	ss.model.calls = new(int)
	var cat Catalog = countedNotes{calls: &ss.calls}
	if o.catalog != nil {
		cat = o.catalog(countedNotes{calls: &ss.calls})
	}
	rt, err := New(Options{
		Model: ss.model, Authority: set, Catalogs: []Catalog{cat},
		Store: ss.store, Limits: o.limits,
		Sink: func(ev event.Event) error {
			if ev.Type == o.refuse {
				return errors.New("the sink refuses " + string(ev.Type))
			}
			ss.events = append(ss.events, string(ev.Type))
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	task, err := rt.newTask(context.Background(), Request{Input: "When is the renewal due?"})
	if err != nil {
		t.Fatal(err)
	}
	ss.step = newStep(task, context.Background(), context.Background())
	if o := ss.begin(); o != nil {
		t.Fatalf("begin: %+v", o)
	}
	return ss
}

// states are the ledger's states of the task's tool calls so far, in order.
func (ss *stagedStep) states(t *testing.T) []string {
	t.Helper()
	return ss.callStates(t, ledger.ToolCallKind)
}

// callStates are the ledger's states of the task's calls of kind so far,
// in order.
func (ss *stagedStep) callStates(t *testing.T, kind ledger.CallKind) []string {
	t.Helper()
	// What is not yet durable reaches the store at a barrier.
	if err := ss.t.root.(*ledger.Root).Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	recs, err := ss.store.Records(context.Background(), ss.t.root.ID())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range recs {
		if r.Kind == ledger.RecordCall && r.Call.Kind == kind {
			out = append(out, string(r.Call.State)+":"+r.Call.Status)
		}
	}
	return out
}

func (ss *stagedStep) dispatched(t *testing.T) uint64 {
	t.Helper()
	acc, err := ss.t.root.Accounting(ss.agent)
	if err != nil {
		t.Fatal(err)
	}
	return acc.ToolCalls.N
}

func noteCall(args string) model.ToolCall {
	return model.ToolCall{ID: "c1", Name: "notes_read", Arguments: json.RawMessage(args)}
}

// A name outside the admitted catalog stops at resolve: the call is
// recorded denied and never validated, admitted or run.
func TestToolCallUnknownNameStopsAtResolve(t *testing.T) {
	ss := newStagedStep(t, ledger.Limits{})
	_, o := ss.resolve(model.ToolCall{ID: "c1", Name: "notes_write", Arguments: json.RawMessage(`{}`)}, "call_1_1")
	if o == nil || o.Status != event.StatusPolicyDenied || o.Rule != "tool_unavailable" {
		t.Fatalf("outcome %+v", o)
	}
	if got, want := ss.states(t), []string{"admitted:", "settled:policy_denied"}; !slices.Equal(got, want) {
		t.Fatalf("ledger states %v, want %v", got, want)
	}
	if ss.calls != 0 || ss.dispatched(t) != 0 || slices.Contains(ss.events, string(event.ToolStarted)) {
		t.Fatalf("calls %d, dispatched %d, events %v", ss.calls, ss.dispatched(t), ss.events)
	}
}

// A contract rejection never reaches admission: validate records the
// invalid arguments as a call that was never sent, and nothing is charged,
// announced or run.
func TestToolCallContractRejectionNeverReachesAdmission(t *testing.T) {
	ss := newStagedStep(t, ledger.Limits{})
	rc, o := ss.resolve(noteCall(`{"note_id":"N-1","approved":true}`), "call_1_1")
	if o != nil {
		t.Fatalf("resolve: %+v", o)
	}
	_, o = ss.validate(rc)
	if o == nil || o.Status != event.StatusFailed || o.Code != outcome.FailInvalidToolArguments || o.Delivery != outcome.NotSent {
		t.Fatalf("outcome %+v", o)
	}
	if got, want := ss.states(t), []string{"admitted:", "settled:invalid_arguments"}; !slices.Equal(got, want) {
		t.Fatalf("ledger states %v, want %v", got, want)
	}
	if ss.calls != 0 || ss.dispatched(t) != 0 || slices.Contains(ss.events, string(event.ToolStarted)) {
		t.Fatalf("calls %d, dispatched %d, events %v", ss.calls, ss.dispatched(t), ss.events)
	}
}

// A resource outside the authority's scope stops at validate with the
// deciding rule: the call is recorded denied and never charged or run.
func TestToolCallDenialStopsAtValidate(t *testing.T) {
	ss := newStagedStep(t, ledger.Limits{})
	rc, o := ss.resolve(noteCall(`{"note_id":"N-2"}`), "call_1_1")
	if o != nil {
		t.Fatalf("resolve: %+v", o)
	}
	_, o = ss.validate(rc)
	if o == nil || o.Status != event.StatusPolicyDenied || !reflect.DeepEqual(o.Rule, ruleOf("builtin.note.allowlist_miss")) {
		t.Fatalf("outcome %+v", o)
	}
	if got, want := ss.states(t), []string{"admitted:", "settled:policy_denied"}; !slices.Equal(got, want) {
		t.Fatalf("ledger states %v, want %v", got, want)
	}
	if ss.calls != 0 || ss.dispatched(t) != 0 || slices.Contains(ss.events, string(event.ToolStarted)) {
		t.Fatalf("calls %d, dispatched %d, events %v", ss.calls, ss.dispatched(t), ss.events)
	}
}

// An admission the ledger refuses (no tool call left) never dispatches:
// the checked call yields no admitted call, and the tool never runs.
func TestToolCallAdmissionRefusalNeverDispatches(t *testing.T) {
	ss := newStagedStep(t, ledger.Limits{ToolCalls: ledger.Max(0)})
	rc, o := ss.resolve(noteCall(`{"note_id":"N-1"}`), "call_1_1")
	if o != nil {
		t.Fatalf("resolve: %+v", o)
	}
	cc, o := ss.validate(rc)
	if o != nil || !cc.decision.Allowed {
		t.Fatalf("validate: %+v, decision %+v", o, cc.decision)
	}
	_, o = ss.admit(cc)
	if o == nil || o.Status != event.StatusLimitExceeded || o.Limit != outcome.LimitToolCalls {
		t.Fatalf("outcome %+v", o)
	}
	if ss.calls != 0 || ss.dispatched(t) != 0 || slices.Contains(ss.events, string(event.ToolStarted)) {
		t.Fatalf("calls %d, dispatched %d, events %v", ss.calls, ss.dispatched(t), ss.events)
	}
}

// A dispatched call has run but is not retained: the ledger holds it open
// and no tool.finished is out until retain settles it, and only then does
// its result join the history.
func TestToolCallIsRetainedOnlyByRetain(t *testing.T) {
	ss := newStagedStep(t, ledger.Limits{})
	rc, o := ss.resolve(noteCall(`{"note_id":"N-1"}`), "call_1_1")
	if o != nil {
		t.Fatalf("resolve: %+v", o)
	}
	cc, o := ss.validate(rc)
	if o != nil {
		t.Fatalf("validate: %+v", o)
	}
	ac, o := ss.admit(cc)
	if o != nil {
		t.Fatalf("admit: %+v", o)
	}
	if ss.calls != 0 || !slices.Contains(ss.events, string(event.ToolStarted)) {
		t.Fatalf("after admit: calls %d, events %v", ss.calls, ss.events)
	}
	dc, o := ss.dispatch(ac)
	if o != nil {
		t.Fatalf("dispatch: %+v", o)
	}
	ob := ss.observe(dc)
	if ss.calls != 1 || ss.dispatched(t) != 1 || dc.res.Status != outcome.ToolCompleted {
		t.Fatalf("after dispatch: calls %d, dispatched %d, result %+v", ss.calls, ss.dispatched(t), dc.res)
	}
	if got, want := ss.states(t), []string{"admitted:", "dispatched:"}; !slices.Equal(got, want) {
		t.Fatalf("ledger states before retain %v, want %v", got, want)
	}
	history := len(ss.history)
	if slices.Contains(ss.events, string(event.ToolFinished)) {
		t.Fatalf("tool.finished before retain: %v", ss.events)
	}
	if o := ss.retain(ob); o != nil {
		t.Fatalf("retain: %+v", o)
	}
	if got, want := ss.states(t), []string{"admitted:", "dispatched:", "settled:completed"}; !slices.Equal(got, want) {
		t.Fatalf("ledger states after retain %v, want %v", got, want)
	}
	if !slices.Contains(ss.events, string(event.ToolFinished)) || len(ss.history) != history+1 || ss.history[history].ToolCallID != "c1" {
		t.Fatalf("after retain: events %v, history %d → %d", ss.events, history, len(ss.history))
	}
}
