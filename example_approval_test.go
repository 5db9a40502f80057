package pablo_test

import (
	"context"
	"fmt"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/approval"
	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/children"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger"
)

// reviewer is a host's approver that names its channel: it allows the
// call once, and its answers are recorded as coming from "review".
type reviewer struct{}

func (reviewer) Approve(_ context.Context, req approval.Request) (approval.Answer, error) {
	return approval.AllowOnce, nil
}

func (reviewer) ApprovalChannel() string { return "review" }

// A call that needs approval waits for the task's approver; afterwards the
// store alone says who approved what: the request bound to its call, the
// answer, its channel and how the call settled.
func Example_approvalRecords() {
	set, _ := authority.New(authority.Config{
		Host: []authority.ID{"notes.read"},
		Layers: []authority.Layer{{ID: "case", Kind: authority.KindAuthority, Dimensions: map[authority.Dimension]*authority.Rules{
			"note": {Default: authority.Deny, Allow: []authority.Rule{{ID: "case.n1", Value: "N-1"}}},
		}}},
	})
	// The model names its call "c1"; Pablo records it as call_1_1, the
	// first call of the first turn, whatever ID the model wrote.
	script, _ := pablo.ParseScript([]byte(`{"turns":[
		{"tool_calls":[{"id":"c1","name":"notes_read","arguments":{"note_id":"N-1"}}]},
		{"text":["done"]}]}`))
	store := ledger.NewMemoryStore()
	rt, _ := pablo.NewRuntime(pablo.RuntimeOptions{
		Model:     pablo.NewScriptModel(script),
		Authority: gate{set, "notes.read"}, // asks before every notes.read
		Catalogs:  []pablo.ToolCatalog{notes{}},
		Store:     store,
	})
	task, _ := rt.StartTask(context.Background(), pablo.TaskRequest{Input: "read N-1", Approver: reviewer{}})
	for ev := range task.Events() {
		switch a := ev.Approval; ev.Type {
		case event.ApprovalRequested:
			fmt.Println(ev.Type, a.CallID, a.Capability, a.Effect)
		case event.ApprovalAnswered:
			fmt.Println(ev.Type, a.CallID, a.Answer)
		}
	}
	task.Wait()
	recs, _ := approval.Records(context.Background(), store, task.ID())
	for _, a := range recs {
		fmt.Println(a.CallID, a.Resources[0].Value, a.Answer, "via", a.Channel, "→", a.CallStatus)
	}
	// Output:
	// approval.requested call_1_1 notes.read execute
	// approval.answered call_1_1 allow_once
	// call_1_1 N-1 allow_once via review → completed
}

// A subagent call that asks says what it delegates: the child's
// capabilities (narrowed from its parent's), its handoffs by reference,
// and the digest and size of the input it hands over, never the input.
// The approval.requested event carries the same delegation.
func Example_approvalDelegation() {
	set, _ := authority.New(authority.Config{Native: []authority.ID{authority.Subagent}, Host: []authority.ID{"notes.read"}})
	script, _ := pablo.ParseScript([]byte(`{"turns":[
		{"tool_calls":[{"id":"s1","name":"subagent","arguments":{"action":"spawn","request":{"input":"read N-1","capabilities":{"tools":["notes.read"]}}}}]},
		{"text":["done"]}],
		"agents":[{"input":"read N-1","turns":[{"text":["N-1 read"]}]}]}`))
	rt, _ := pablo.NewRuntime(pablo.RuntimeOptions{
		Model:     pablo.NewScriptModel(script),
		Authority: gate{set, authority.Subagent}, // asks before every spawn
		Catalogs:  []pablo.ToolCatalog{notes{}},
		Children:  &children.Capacity{},
	})
	asked := make(chan *approval.Delegation, 1)
	approver := approverFunc(func(_ context.Context, req approval.Request) (approval.Answer, error) {
		asked <- req.Delegation
		return approval.AllowOnce, nil
	})
	task, _ := rt.StartTask(context.Background(), pablo.TaskRequest{Input: "delegate", Approver: approver})
	for ev := range task.Events() {
		if ev.Type == event.ApprovalRequested && ev.Approval.Delegation != nil {
			d := ev.Approval.Delegation
			fmt.Println(ev.Type, d.Action, d.Capabilities.Tools, d.InputBytes)
		}
	}
	fmt.Println(task.Wait().Outcome.Status)
	d := <-asked
	fmt.Println(d.Action, d.Capabilities.Tools, d.InputBytes, "bytes", d.InputDigest[:15]+"…")
	// Output:
	// approval.requested spawn [notes.read] 8
	// completed
	// spawn [notes.read] 8 bytes sha256:08d302c6…
}
