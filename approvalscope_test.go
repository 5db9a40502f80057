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
	"github.com/pabloagent/pablo/event"
)

// runScoped runs script under doc (a deployment body after its model)
// with an approver that answers allow_for_task to the calls named in
// forTask and rejects the rest, and returns the call IDs it was asked
// about and the ones that ran to completion.
func runScoped(t *testing.T, body, script string, forTask ...string) (asked []string, completed map[string]bool) {
	t.Helper()
	d, err := loadString(t, "schema_version = 1\n[options.model]\nprovider = \"script\"\nscript = { base = \"source\", path = \"s.json\" }\n"+body, func(o *LoadOptions) {
		os.WriteFile(filepath.Join(filepath.Dir(o.Config), "s.json"), []byte(script), 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := d.NewRuntime(context.Background(), HostOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	var mu sync.Mutex
	task, err := rt.StartTask(context.Background(), TaskRequest{Input: "go", Approver: answerFunc(func(_ context.Context, req approval.Request) (approval.Answer, error) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, req.CallID)
		for _, id := range forTask {
			if id == req.CallID {
				return approval.AllowForTask, nil
			}
		}
		return approval.Reject, nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	completed = map[string]bool{}
	for ev := range task.Events() {
		if ev.Type == event.ToolFinished && strings.Contains(string(ev.Result), `"status":"completed"`) {
			completed[ev.CallID] = true
		}
	}
	if obj := task.Wait(); obj.Outcome.Status != event.StatusCompleted {
		b, _ := json.Marshal(obj.Outcome)
		t.Fatalf("outcome %s", b)
	}
	return asked, completed
}

func turnsOf(calls ...string) string {
	var turns []string
	for _, c := range calls {
		turns = append(turns, `{"tool_calls":[`+c+`]}`)
	}
	return `{"turns":[` + strings.Join(turns, ",") + `,{"text":["done"]}]}`
}

// TestAllowForTaskNeverCoversAnotherCommand: "allow for this task" on one
// shell.run command covers that same call again, never another command:
// every shell.run names the same launcher, /bin/sh, which is what starts,
// not what the call does, so the grant stays bound to the arguments.
func TestAllowForTaskNeverCoversAnotherCommand(t *testing.T) {
	sh := func(id, cmd string) string {
		return `{"id":"` + id + `","name":"shell_run","arguments":{"command":"` + cmd + `","cwd":"."}}`
	}
	asked, done := runScoped(t, "[options.shell]\nenabled = true\n[options.shell.sandbox]\nmode = \"off\"\n",
		turnsOf(sh("call_1_1", "ls"), sh("call_2_1", "ls"), sh("call_3_1", "touch pwned"), sh("call_4_1", "ls -a")), "call_1_1")
	if strings.Join(asked, ",") != "call_1_1,call_3_1,call_4_1" {
		t.Fatalf("asked about %v, want call_1_1, call_3_1 and call_4_1: the grant for ls covered another command", asked)
	}
	if !done["call_1_1"] || !done["call_2_1"] || done["call_3_1"] || done["call_4_1"] {
		t.Errorf("completed %v, want call_1_1 and call_2_1 only", done)
	}
}

// TestAllowForTaskCoversOneResource: "allow for this task" on an fs.write
// of one path covers later writes of that path (the same capability and
// resource, whatever the text), and never a write of another path.
func TestAllowForTaskCoversOneResource(t *testing.T) {
	w := func(id, path, text string) string {
		return `{"id":"` + id + `","name":"fs_write","arguments":{"path":"` + path + `","text":"` + text + `","expected_revision":null}}`
	}
	asked, _ := runScoped(t, "[options.filesystem]\nwrite = true\n[options.approvals]\nfilesystem_write = \"required\"\n",
		turnsOf(w("call_1_1", "a.txt", "one"), w("call_2_1", "./a.txt", "two"), w("call_3_1", "b.txt", "one")), "call_1_1")
	if strings.Join(asked, ",") != "call_1_1,call_3_1" {
		t.Fatalf("asked about %v, want call_1_1 and call_3_1: the grant covers a.txt only", asked)
	}
}
