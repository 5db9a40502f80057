package pablo

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pabloagent/pablo/approval"
	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/mcp"
)

// elicitingApprover is a task's Approver that also answers forms.
type elicitingApprover struct {
	mu   sync.Mutex
	seen []mcp.Elicitation
}

func (a *elicitingApprover) Approve(context.Context, approval.Request) (approval.Answer, error) {
	return approval.Reject, nil
}

func (a *elicitingApprover) Elicit(_ context.Context, req mcp.Elicitation) (mcp.ElicitationResult, error) {
	a.mu.Lock()
	a.seen = append(a.seen, req)
	a.mu.Unlock()
	return mcp.ElicitationResult{Action: mcp.ElicitAccept, Content: map[string]any{"target": "production"}}, nil
}

// plainApprover answers approvals and nothing else.
type plainApprover struct{}

func (plainApprover) Approve(context.Context, approval.Request) (approval.Answer, error) {
	return approval.Reject, nil
}

// TestMCPElicitationReachesTheTasksApprover: a stdio server's form
// elicitation during a call reaches the task's Approver when it is an
// approval.Elicitor, bound to the call's tool, and its answer (with the form's
// defaults for what it left out) goes back to the server; a task whose
// approver is no approval.Elicitor, or that has none, declines. The server's roots
// are the task's workspace.
func TestMCPElicitationReachesTheTasksApprover(t *testing.T) {
	bin := buildFaultServer(t)
	alias := mcp.Alias(authority.MCPTool("records", "ask"))
	script := `{"turns":[{"text":["Asking."],"tool_calls":[{"name":"` + alias + `","arguments":{}}]},{"text":["Done."]}]}`
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	d := scriptDeployment(t, dir, ws, script, "[options.shell]\nenabled = false\n"+mcpServerTOML(bin, "elicit", ""))
	rt, err := d.NewRuntime(context.Background(), HostOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	result := func(ap Approver) string {
		task, err := rt.StartTask(context.Background(), TaskRequest{Input: "Deploy.", Approver: ap})
		if err != nil {
			t.Fatal(err)
		}
		var res string
		for ev, err := range task.Events() {
			if err != nil {
				t.Fatal(err)
			}
			if ev.Type == event.ToolFinished && ev.Name == "mcp/records/ask" {
				res = string(ev.Result)
			}
		}
		if obj := task.Wait(); obj.Outcome.Status != event.StatusCompleted {
			b, _ := json.Marshal(obj)
			t.Fatalf("outcome: %s", b)
		}
		return res
	}
	ap := &elicitingApprover{}
	got := result(ap)
	real, _ := filepath.EvalSymlinks(ws)
	if !strings.Contains(got, `action accept content {\"notify\":false,\"target\":\"production\"}`) || !strings.Contains(got, "file://"+real) {
		t.Fatalf("the server got %s", got)
	}
	if len(ap.seen) != 1 || ap.seen[0].Tool != "mcp/records/ask" || ap.seen[0].Server != "records" || ap.seen[0].Message != "Where should the release go?" {
		t.Fatalf("the approver saw %+v", ap.seen)
	}
	for _, other := range []Approver{plainApprover{}, nil} {
		if got := result(other); !strings.Contains(got, "action decline content null") {
			t.Fatalf("with approver %T the server got %s, want a decline", other, got)
		}
	}
}
