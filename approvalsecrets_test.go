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
	"github.com/pabloagent/pablo/ledger"
)

// TestApprovalRequestMasksAnEscapedSecret: a secret the model writes into
// a gated call's arguments is masked in the approval request the approver
// sees (arguments and resources) and in the approval events, however its
// JSON form escapes it (a quote, a backslash, a TAB, U+2028): the request
// masks the decoded arguments, as tool.started does, not their bytes.
func TestApprovalRequestMasksAnEscapedSecret(t *testing.T) {
	content, _ := json.Marshal(escapedSecret)
	script := `{"turns":[{"text":["Writing."],"tool_calls":[{"id":"c1","name":"fs_write","arguments":{"path":"out.txt","expected_revision":null,"text":` + string(content) + `}}]},{"text":["Done."]}]}`
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	d := scriptDeployment(t, dir, ws, script, "[options.filesystem]\nwrite = true\n[options.shell]\nenabled = false\n[options.approvals]\nfilesystem_write = \"required\"\n")
	data, err := os.ReadFile(filepath.Join(dir, "script.json"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseScript(data)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := d.NewRuntime(context.Background(), HostOptions{Model: NewScriptModel(s), Store: ledger.NewMemoryStore()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	rt.opts.secrets.Add(escapedSecret)
	var mu sync.Mutex
	var asked []approval.Request
	task, err := rt.StartTask(context.Background(), TaskRequest{Input: "write it", Approver: secretApprover(func(_ context.Context, req approval.Request) (approval.Answer, error) {
		mu.Lock()
		asked = append(asked, req)
		mu.Unlock()
		return approval.Reject, nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for ev, err := range task.Events() {
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(ev)
		all.Write(b)
	}
	obj, _ := json.Marshal(task.Wait())
	all.Write(obj)
	if len(asked) != 1 {
		t.Fatalf("asked %d times, want 1: %s", len(asked), obj)
	}
	b, _ := json.Marshal(asked[0])
	all.Write(b)
	all.Write(asked[0].Arguments)
	for _, r := range asked[0].Resources {
		all.WriteString(r.Value)
	}
	if !strings.Contains(string(asked[0].Arguments), "[redacted]") {
		t.Fatalf("the request's arguments show no mask: %s", asked[0].Arguments)
	}
	for _, f := range escapedFragments {
		if strings.Contains(all.String(), f) {
			t.Fatalf("fragment %q of the secret reached the approval request or a record: %s", f, b)
		}
	}
}

// secretApprover is an Approver of a function.
type secretApprover func(ctx context.Context, req approval.Request) (approval.Answer, error)

func (f secretApprover) Approve(ctx context.Context, req approval.Request) (approval.Answer, error) {
	return f(ctx, req)
}
