package ledger

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pabloagent/pablo/ledger/outcome"

	"github.com/pabloagent/pablo/authority"
)

func TestEventEncodingMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	for _, rec := range []Record{
		{TaskID: "t", N: 7, Kind: RecordEvent, Time: at, Event: Event{RootSeq: 3, Seq: 2, RootID: "t", AgentID: "a", Type: "tool.started", Time: at, Payload: json.RawMessage(`{"a":[1,2]}`)}},
		{TaskID: "t", N: 1, Kind: RecordEvent, Time: at, Event: Event{RootSeq: 1, Seq: 1, RootID: "t", ParentID: "p", AgentID: "a", Type: "x", Time: at}},
		{TaskID: "t\"<&>\u2028\x01é", N: 1, Kind: RecordEvent, Time: at, Event: Event{RootSeq: 1, Seq: 1, RootID: "t", AgentID: "a\\b", Type: "ünïcode\n", Time: at, Payload: json.RawMessage(`"s"`)}},
	} {
		fast, err := encodeRecord(&rec)
		if err != nil {
			t.Fatal(err)
		}
		slow, _ := json.Marshal(&rec)
		var a, b Record
		if err := json.Unmarshal(fast, &a); err != nil {
			t.Fatalf("%s: %v", fast, err)
		}
		json.Unmarshal(slow, &b)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("fast %s\nslow %s", fast, slow)
		}
		if rec.TaskID == "t" && string(fast) != string(slow) {
			t.Fatalf("bytes differ:\nfast %s\nslow %s", fast, slow)
		}
	}
	bad := Record{TaskID: "t", N: 1, Kind: RecordEvent, Event: Event{Payload: json.RawMessage(`{`)}}
	if _, err := encodeRecord(&bad); err == nil {
		t.Fatal("invalid payload encoded")
	}
}

// TestDecisionsAreWrittenWithoutEmptyFieldsOrTrail: the ledger keeps an
// authority.Decision as the layer, rule and reason that decided, written
// as records always were.
func TestDecisionsAreWrittenWithoutEmptyFieldsOrTrail(t *testing.T) {
	t.Parallel()
	d := authority.Decision{Allowed: true, Layer: "configuration", Trail: []authority.Step{{Layer: "configuration", Allowed: true}}}
	for _, c := range []struct {
		v    any
		want string
	}{
		{DecisionRecord{AgentID: "a", Capability: "fs.read", Decision: d}, `{"agent_id":"a","capability":"fs.read","decision":{"allowed":true,"layer":"configuration"}}`},
		{CallRecord{CallID: "c", AgentID: "a", Kind: ToolCallKind, State: CallSettled, Status: "completed"}, `{"call_id":"c","agent_id":"a","kind":"tool","state":"settled","status":"completed"}`},
		{CallRecord{CallID: "c", AgentID: "a", Kind: ToolCallKind, State: CallAdmitted, Step: 2, Name: "fs.read", Decision: d}, `{"call_id":"c","agent_id":"a","kind":"tool","state":"admitted","step":2,"name":"fs.read","decision":{"allowed":true,"layer":"configuration"}}`},
		{CallReport{AgentID: "a", CallID: "c", Kind: ToolCallKind, Step: 1, Decision: &d, State: CallSettled, Class: outcome.ClassCompleted}, `{"agent_id":"a","call_id":"c","kind":"tool","step":1,"decision":{"allowed":true,"layer":"configuration"},"state":"settled","class":"completed"}`},
	} {
		b, err := json.Marshal(c.v)
		if err != nil || string(b) != c.want {
			t.Errorf("%T marshals as %s, %v; want %s", c.v, b, err, c.want)
		}
	}
	r, store, _ := newRoot(t, Limits{})
	if err := r.RecordDecision(bg, r.RootAgentID(), "fs.read", d); err != nil {
		t.Fatal(err)
	}
	if err := r.Flush(bg); err != nil {
		t.Fatal(err)
	}
	rep, _ := RecoverTask(bg, store, r.ID())
	if len(rep.Decisions) != 1 || rep.Decisions[0].Decision.Trail != nil || rep.Decisions[0].Decision.Layer != "configuration" {
		t.Fatalf("recorded %+v", rep.Decisions)
	}
}

// TestCallEncodingMatchesEncodingJSON: a tool call's records, written by
// hand, hold what encoding/json writes of them (the same bytes where no
// string needs HTML escaping), in every state and with every field the
// hand-written form takes; a model call's, with bounds and usage, still go
// through encoding/json.
func TestCallEncodingMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	d := authority.Decision{Allowed: true, Layer: "configuration", RuleID: "builtin.configured", Reason: "allowed", NeedsApproval: true, Sandbox: "bubblewrap", Trail: []authority.Step{{Layer: "configuration", Allowed: true}}}
	for _, c := range []CallRecord{
		{CallID: "call_1_1", AgentID: "a", Kind: ToolCallKind, State: CallAdmitted, Step: 2, Name: "fs.read", ArgumentsDigest: "sha256:ab", InputBytes: 12, IdempotencyKey: "k", Decision: d},
		{CallID: "call_1_1", AgentID: "a", Kind: ToolCallKind, State: CallDispatched},
		{CallID: "call_1_1", AgentID: "a", Kind: ToolCallKind, State: CallSettled, Status: "completed", Delivery: "response_received", OutputBytes: 9, Result: "sha256:cd", Error: "e"},
		{CallID: "c", AgentID: "a", Kind: ToolCallKind, State: CallSettled, Decision: authority.Decision{Layer: "mcp/x", RuleID: "r"}, Status: "policy_denied"},
		{CallID: "c\"<&>\u2028\x01é", AgentID: "a\\b", Kind: ToolCallKind, State: CallAdmitted, Name: "fs.read\x1b]52;\u009b\u202e", Decision: authority.Decision{Reason: "<&>"}},
		{CallID: "m", AgentID: "a", Kind: ModelCallKind, State: CallAdmitted, TokenBound: Max(10), CostBound: Max(3)},
		{CallID: "m", AgentID: "a", Kind: ModelCallKind, State: CallSettled, Usage: Usage{InputTokens: known(3)}, ChargedTokens: known(3)},
		{CallID: "c", AgentID: "a", Kind: ToolCallKind, State: CallAdmitted, Decision: authority.Decision{Allowed: true, ApprovalBy: &authority.ApprovalSource{Layer: "l", RuleID: "r"}}},
	} {
		rec := Record{TaskID: "t", N: 9, Kind: RecordCall, Time: at, Call: &c}
		fast, err := encodeRecord(&rec)
		if err != nil {
			t.Fatal(err)
		}
		slow, _ := json.Marshal(&rec)
		var a, b Record
		if err := json.Unmarshal(fast, &a); err != nil {
			t.Fatalf("%s: %v", fast, err)
		}
		json.Unmarshal(slow, &b)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("fast %s\nslow %s", fast, slow)
		}
		if !strings.ContainsAny(c.CallID+c.Decision.Reason, "<&") && string(fast) != string(slow) {
			t.Fatalf("bytes differ:\nfast %s\nslow %s", fast, slow)
		}
	}
}
