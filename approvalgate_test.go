package pablo

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/pabloagent/pablo/approval"
	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/internal/config"
	"github.com/pabloagent/pablo/internal/engine"
)

// approveWith answers every approval request with ok and counts them.
type approveWith struct {
	ok    bool
	asked *int
}

func (a approveWith) Approve(context.Context, approval.Request) (approval.Answer, error) {
	*a.asked++
	if a.ok {
		return approval.AllowOnce, nil
	}
	return approval.Reject, nil
}

// TestHostAskGatesTheNamedCapabilityOnly: HostOptions.Ask makes each
// allowed call of the named capability wait for the task's approver; other
// capabilities run unasked, a denied call is never asked about, a
// narrowed authority still asks, and a name that is no capability ID is
// refused when the runtime is built.
func TestHostAskGatesTheNamedCapabilityOnly(t *testing.T) {
	d, err := loadString(t, "schema_version = 1\n[options.model]\nprovider = \"script\"\nscript = { base = \"source\", path = \"s.json\" }\n", func(o *LoadOptions) {
		dir := filepath.Dir(o.Config)
		os.WriteFile(filepath.Join(dir, "s.json"), []byte(`{"turns":[{"tool_calls":[{"name":"fs_list","arguments":{"path":"."}},{"name":"fs_read","arguments":{"path":"a.txt"}}]},{"text":["done"]}]}`), 0o600)
		os.WriteFile(filepath.Join(o.Bindings["workspace"], "a.txt"), []byte("alpha\n"), 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := d.NewRuntime(context.Background(), HostOptions{Ask: []authority.ID{"fs.read"}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	statuses := func(task *Task) map[string]string {
		out := map[string]string{}
		for ev := range task.Events() {
			if ev.Type == event.ToolFinished {
				var r struct {
					Status string `json:"status"`
				}
				json.Unmarshal(ev.Result, &r)
				out[ev.Name] = r.Status
			}
		}
		return out
	}
	for _, c := range []struct {
		name  string
		ok    bool
		asked int
		read  string
	}{{"Allowed", true, 1, "completed"}, {"Rejected", false, 1, "recoverable_error"}} {
		t.Run(c.name, func(t *testing.T) {
			asked := 0
			task, err := rt.StartTask(context.Background(), TaskRequest{Input: "read", Approver: approveWith{c.ok, &asked}})
			if err != nil {
				t.Fatal(err)
			}
			got := statuses(task)
			task.Wait()
			if asked != c.asked || got["fs.read"] != c.read || got["fs.list"] != "completed" {
				t.Fatalf("asked %d times, fs.read %s, fs.list %s; want %d, %s, completed (fs.list is not gated)", asked, got["fs.read"], got["fs.list"], c.asked, c.read)
			}
		})
	}
	set, err := d.Authority()
	if err != nil {
		t.Fatal(err)
	}
	gate, err := engine.AskGate(set, []authority.ID{"fs.read"}, config.ApprovalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	narrowed, err := gate.Narrow(authority.Narrowing{})
	if err != nil {
		t.Fatal(err)
	}
	if dec := narrowed.Decide(authority.Request{Capability: "fs.read"}); !dec.Allowed || !dec.NeedsApproval {
		t.Errorf("a narrowed authority decides fs.read %+v, want allowed and asking", dec)
	}
	if dec := gate.Decide(authority.Request{Capability: "mcp/ghost/tool"}); dec.Allowed || dec.NeedsApproval {
		t.Errorf("a denied capability %+v asks for approval", dec)
	}
	if _, err := d.NewRuntime(context.Background(), HostOptions{Ask: []authority.ID{"not a tool"}}); err == nil || errors.Is(err, ErrConfig) {
		t.Errorf("an invalid Ask name built a runtime or passed for a config error: %v", err)
	}
}
