package pablo_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/approval"
	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/ledger/outcome"
)

// gate is an authority that asks for approval of one tool: the test
// approver's stand-in for the approval policy.
type gate struct {
	authority.Authority
	tool authority.ID
}

// Narrow keeps the question: a child's narrowed authority still asks.
func (g gate) Narrow(n authority.Narrowing) (authority.Authority, error) {
	inner, err := g.Authority.Narrow(n)
	if err != nil {
		return nil, err
	}
	return gate{inner, g.tool}, nil
}

func (g gate) Decide(req authority.Request) authority.Decision {
	d := g.Authority.Decide(req)
	if d.Allowed && req.Capability == g.tool {
		d.NeedsApproval = true
	}
	return d
}

// approverFunc answers approval requests with a function.
type approverFunc func(ctx context.Context, req approval.Request) (approval.Answer, error)

func (f approverFunc) Approve(ctx context.Context, req approval.Request) (approval.Answer, error) {
	return f(ctx, req)
}

func gatedRuntime(t *testing.T, store ledger.Store) *pablo.Runtime {
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
	script, err := pablo.ParseScript([]byte(`{"turns":[
		{"text":["Reading."],"tool_calls":[{"id":"c1","name":"notes_read","arguments":{"note_id":"N-1"}}]},
		{"text":["done"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := pablo.NewRuntime(pablo.RuntimeOptions{Model: pablo.NewScriptModel(script), Authority: gate{set, "notes.read"},
		Catalogs: []pablo.ToolCatalog{notes{}}, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// TestApprovalGatesOneCall: a call whose decision needs approval runs only
// when the approver allows that call; the request is bound to it (ID,
// tool, digest, masked arguments, agent); a rejection, a failing approver,
// no approver and a cancel while it waits each keep the call from running
// and settle it as never sent, with tool.finished saying why. A rejection
// is the recoverable approval_rejected (the task goes on, and the call
// counts); no approver or a failing one is the terminal policy_denied.
func TestApprovalGatesOneCall(t *testing.T) {
	cases := []struct {
		name     string
		approver func(cancel func()) pablo.Approver
		status   outcome.Status
		result   string
	}{
		{"Allowed", func(func()) pablo.Approver {
			return approverFunc(func(context.Context, approval.Request) (approval.Answer, error) {
				return approval.AllowOnce, nil
			})
		}, event.StatusCompleted, `"completed"`},
		{"Rejected", func(func()) pablo.Approver {
			return approverFunc(func(context.Context, approval.Request) (approval.Answer, error) {
				return approval.Reject, nil
			})
		}, event.StatusCompleted, `"recoverable_error"`},
		{"ZeroAnswerRejects", func(func()) pablo.Approver {
			return approverFunc(func(context.Context, approval.Request) (approval.Answer, error) { return "", nil })
		}, event.StatusCompleted, `"recoverable_error"`},
		{"ApproverFails", func(func()) pablo.Approver {
			return approverFunc(func(context.Context, approval.Request) (approval.Answer, error) {
				return approval.AllowOnce, errors.New("channel closed")
			})
		}, event.StatusPolicyDenied, `"policy_denied"`},
		{"NoApprover", func(func()) pablo.Approver { return nil }, event.StatusPolicyDenied, `"policy_denied"`},
		{"CancelledWhileWaiting", func(cancel func()) pablo.Approver {
			return approverFunc(func(ctx context.Context, _ approval.Request) (approval.Answer, error) {
				cancel()
				<-ctx.Done()
				return approval.AllowOnce, nil // too late: the task is over
			})
		}, event.StatusCancelled, `"cancelled"`},
	}
	// What each case's approval.answered event says: the answer, its
	// channel and an answer that came too late.
	wantAnswers := map[string]string{"Allowed": "allow_once approver", "Rejected": "reject approver", "ZeroAnswerRejects": "reject approver",
		"ApproverFails": "no_channel approver", "NoApprover": "no_channel none", "CancelledWhileWaiting": "unanswered approver allow_once"}
	answers := map[string]string{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			store := ledger.NewMemoryStore()
			rt := gatedRuntime(t, store)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var mu sync.Mutex
			var asked []approval.Request
			var ap pablo.Approver
			if inner := c.approver(cancel); inner != nil {
				ap = approverFunc(func(ctx context.Context, req approval.Request) (approval.Answer, error) {
					mu.Lock()
					asked = append(asked, req)
					mu.Unlock()
					return inner.Approve(ctx, req)
				})
			}
			task, err := rt.StartTask(ctx, pablo.TaskRequest{Input: "read N-1", Approver: ap})
			if err != nil {
				t.Fatal(err)
			}
			var types []string
			var finished json.RawMessage
			for ev := range task.Events() {
				types = append(types, string(ev.Type))
				if ev.Type == event.ApprovalAnswered {
					answers[c.name] = strings.TrimSpace(ev.Approval.Answer + " " + ev.Approval.Channel + " " + ev.Approval.LateAnswer)
				}
				if ev.Type == event.ToolFinished {
					finished = ev.Result
				}
			}
			obj := task.Wait()
			if obj.Outcome.Status != c.status {
				t.Fatalf("outcome %s, want %s", obj.Outcome.Status, c.status)
			}
			if !strings.Contains(strings.Join(types, " "), "tool.started approval.requested approval.answered tool.finished") {
				t.Errorf("events %v: the call's tool.started must be followed by its request, its answer and its tool.finished", types)
			}
			if answered := answers[c.name]; answered != wantAnswers[c.name] {
				t.Errorf("approval.answered %q, want %q", answered, wantAnswers[c.name])
			}
			if !strings.Contains(string(finished), `"status":`+c.result) {
				t.Errorf("tool.finished result %s, want status %s", finished, c.result)
			}
			if c.result == `"recoverable_error"` && !strings.Contains(string(finished), `"code":"approval_rejected"`) {
				t.Errorf("tool.finished result %s, want the code approval_rejected", finished)
			}
			if c.status == event.StatusPolicyDenied {
				rule, _ := json.Marshal(obj.Outcome.Rule)
				if string(rule) != `{"configured":{"id":"builtin.approval"}}` {
					t.Errorf("rule %s", rule)
				}
			}
			if ap != nil {
				if len(asked) != 1 {
					t.Fatalf("asked %d times", len(asked))
				}
				req := asked[0]
				if req.CallID != "call_1_1" || req.Tool != "notes.read" || req.TaskID != task.ID() || req.AgentID == "" ||
					!strings.HasPrefix(req.ArgumentsDigest, "sha256:") || string(req.Arguments) != `{"note_id":"N-1"}` || !req.Decision.NeedsApproval ||
					req.Effect != authority.EffectExecute || len(req.Resources) != 1 || req.Resources[0].Value != "N-1" {
					t.Errorf("request not bound to the call: %+v", req)
				}
			}
			wantCalls := "0"
			if c.status == event.StatusCompleted {
				wantCalls = "1" // a rejected call counts as dispatched
			}
			if obj.Accounting.ToolCalls.String() != wantCalls {
				t.Errorf("tool_calls %s, want %s (a call denied for want of an approver is not counted)", obj.Accounting.ToolCalls, wantCalls)
			}
			rep, err := ledger.Recover(context.Background(), store)
			if err != nil || len(rep.Tasks) != 1 {
				t.Fatal(rep, err)
			}
			tr := rep.Tasks[0]
			tools := 0
			for _, c := range tr.Completed {
				if c.Kind == ledger.ToolCallKind && c.CallID == "call_1_1" {
					tools++
				}
			}
			if len(tr.Unknown) != 0 || len(tr.Retryable) != 0 || tools != 1 {
				t.Errorf("recovery: the call is settled, never unknown or retryable: %+v", tr)
			}
		})
	}
}
