package pablo_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/approval"
	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/children"
	"github.com/pabloagent/pablo/event"
)

// TestSubagentActionsThatDelegateNothingNeverAsk: with every call of the
// subagent tool marked for approval, the spawn asks and the wait, inspect
// and stop of the caller's own child do not: only an action that hands
// work to another agent delegates, and an approval of the subagent tool is
// an approval of delegation.
func TestSubagentActionsThatDelegateNothingNeverAsk(t *testing.T) {
	set, err := authority.New(authority.Config{Native: []authority.ID{authority.Subagent}, Host: []authority.ID{"notes.read"}})
	if err != nil {
		t.Fatal(err)
	}
	script, err := pablo.ParseScript([]byte(`{"turns":[
		{"tool_calls":[{"id":"s1","name":"subagent","arguments":{"action":"spawn","request":{"input":"read one","capabilities":{"tools":["notes.read"]}}}}]},
		{"tool_calls":[{"id":"w1","name":"subagent","arguments":{"action":"wait","agent_ids":["{{agent_id:s1}}"],"mode":"all","timeout_ms":60000}}]},
		{"tool_calls":[{"id":"i1","name":"subagent","arguments":{"action":"inspect","agent_id":"{{agent_id:s1}}"}}]},
		{"tool_calls":[{"id":"t1","name":"subagent","arguments":{"action":"stop","agent_id":"{{agent_id:s1}}"}}]},
		{"text":["done"]}],
		"agents":[{"input":"read one","turns":[{"text":["one"]}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := pablo.NewRuntime(pablo.RuntimeOptions{Model: pablo.NewScriptModel(script), Authority: gate{set, authority.Subagent},
		Catalogs: []pablo.ToolCatalog{notes{}}, Children: &children.Capacity{}})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var asked []string
	var delegated *approval.Delegation
	task, err := rt.StartTask(context.Background(), pablo.TaskRequest{Input: "go", Approver: approverFunc(func(_ context.Context, req approval.Request) (approval.Answer, error) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, req.CallID+":"+string(req.Effect))
		delegated = req.Delegation
		return approval.AllowOnce, nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	var results []string
	var requested []*event.Approval
	for ev := range task.Events() {
		if ev.Type == event.ToolFinished {
			results = append(results, ev.CallID+"="+string(ev.Result))
		}
		if ev.Type == event.ApprovalRequested {
			requested = append(requested, ev.Approval)
		}
	}
	if obj := task.Wait(); obj.Outcome.Status != event.StatusCompleted {
		t.Fatalf("outcome %+v", obj.Outcome)
	}
	if strings.Join(asked, ",") != "call_1_1:delegate" { // the model's s1
		t.Errorf("asked %v, want only the spawn s1 (effect delegate)", asked)
	}
	// The request says what the spawn delegates: the child's subset and
	// the digest of its input (as its agent record has it), never more.
	sum := sha256.Sum256([]byte("read one"))
	if delegated == nil || delegated.Action != children.ActionSpawn || strings.Join(delegated.Capabilities.Tools, ",") != "notes.read" ||
		delegated.InputDigest != "sha256:"+hex.EncodeToString(sum[:]) || delegated.InputBytes != len("read one") || delegated.Remote != "" {
		t.Errorf("delegation %+v", delegated)
	}
	// The approval.requested event carries the same delegation, with the
	// digest and size of the child's input and never the input itself.
	if len(requested) != 1 || requested[0].Delegation == nil {
		t.Fatalf("approval.requested %+v", requested)
	}
	d, _ := json.Marshal(requested[0].Delegation)
	want := `{"action":"spawn","capabilities":{"tools":["notes.read"],"skills":[],"mcp_servers":[],"model_route":[]},"input_digest":"sha256:` + hex.EncodeToString(sum[:]) + `","input_bytes":8}`
	if string(d) != want {
		t.Errorf("the event's delegation\n %s\nwant\n %s", d, want)
	}
	if strings.Contains(string(d), "read one") {
		t.Errorf("the event's delegation holds the child's input: %s", d)
	}
	if len(results) != 4 {
		t.Fatalf("results %v", results)
	}
	for _, r := range results {
		if strings.Contains(r, "approval_rejected") || strings.Contains(r, `"action":"error"`) {
			t.Errorf("result %s", r)
		}
	}
}
