package pablo

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/approval"
	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/children"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/internal/redact"
	"github.com/pabloagent/pablo/tracefile"
)

// askSpawns is an authority that asks before every subagent call.
type askSpawns struct{ authority.Authority }

func (g askSpawns) Narrow(n authority.Narrowing) (authority.Authority, error) {
	inner, err := g.Authority.Narrow(n)
	if err != nil {
		return nil, err
	}
	return askSpawns{inner}, nil
}

func (g askSpawns) Decide(req authority.Request) authority.Decision {
	d := g.Authority.Decide(req)
	if d.Allowed && req.Capability == authority.Subagent {
		d.NeedsApproval = true
	}
	return d
}

// TestDelegationInTheTraceHoldsNoContent: a spawn whose child input holds
// a known secret asks with a delegation in its approval.requested event
// and trace line (each line matching the trace schema, content captured
// or not) that names the digest and size of the input, and neither the
// approver's request, an event nor a trace line holds the secret.
func TestDelegationInTheTraceHoldsNoContent(t *testing.T) {
	const secret = "sk-delegated-9f3b7c21e4"
	input := "summarise with token " + secret
	schema := traceSchema(t)
	for _, capture := range []bool{false, true} {
		set, err := authority.New(authority.Config{Native: []authority.ID{authority.Subagent}})
		if err != nil {
			t.Fatal(err)
		}
		script, err := ParseScript([]byte(`{"turns":[
			{"tool_calls":[{"id":"s1","name":"subagent","arguments":{"action":"spawn","request":{"input":"` + input + `","capabilities":{"tools":[]}}}}]},
			{"text":["done"]}],
			"agents":[{"input":"` + input + `","turns":[{"text":["ok"]}]}]}`))
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "trace.jsonl")
		tw, err := OpenTrace(path, tracefile.Options{CaptureContent: capture, Mask: func(b []byte) []byte { return bytes.ReplaceAll(b, []byte(secret), []byte("[redacted]")) }})
		if err != nil {
			t.Fatal(err)
		}
		rt, err := NewRuntime(RuntimeOptions{Model: NewScriptModel(script), Authority: askSpawns{set}, Children: &children.Capacity{}, Sink: tw.Write})
		if err != nil {
			t.Fatal(err)
		}
		rt.opts.secrets = &redact.Set{}
		rt.opts.secrets.Add(secret)
		reopen(t, rt)
		var asked []approval.Request
		task, err := rt.StartTask(context.Background(), TaskRequest{Input: "go", Approver: secretApprover(func(_ context.Context, req approval.Request) (approval.Answer, error) {
			asked = append(asked, req)
			return approval.AllowOnce, nil
		})})
		if err != nil {
			t.Fatal(err)
		}
		var all strings.Builder
		var delegated int
		for ev, err := range task.Events() {
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(ev)
			all.Write(b)
			if ev.Type == event.ApprovalRequested && ev.Approval.Delegation != nil {
				delegated++
				if d := ev.Approval.Delegation; d.InputDigest != sha256Tag([]byte(input)) || d.InputBytes != len(input) || d.Action != "spawn" {
					t.Errorf("delegation %s", b)
				}
			}
		}
		task.Wait()
		rt.Close()
		tw.Close()
		if delegated != 1 || len(asked) != 1 || asked[0].Delegation == nil {
			t.Fatalf("delegations in events %d, requests %+v", delegated, asked)
		}
		b, _ := json.Marshal(asked[0])
		all.Write(b)
		if strings.Contains(all.String(), secret) {
			t.Fatalf("the secret reached an event or the request: %s", all.String())
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		traced := 0
		for sc.Scan() {
			line := sc.Text()
			if strings.Contains(line, secret) {
				t.Fatalf("capture=%v: a trace line holds the secret: %s", capture, line)
			}
			if strings.Contains(line, `"delegation":{`) {
				traced++
			}
			var v any
			json.Unmarshal([]byte(line), &v)
			if err := schema.Validate(v); err != nil {
				t.Fatalf("capture=%v: trace line does not match the schema: %v\n%s", capture, err, line)
			}
		}
		f.Close()
		if traced != 1 {
			t.Fatalf("capture=%v: %d trace lines carry a delegation, want 1", capture, traced)
		}
	}
}
