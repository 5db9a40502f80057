package pablo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pabloagent/pablo/approval"
	"github.com/pabloagent/pablo/event"
)

// TestTwoChildrenWritingOneRevisionInstallOnce: two children of one root
// write the same file against the same expected revision at once. Their
// approver is the barrier: it answers neither until both have asked, so
// both calls are past approval and racing for the workspace together. The
// revision check and the install are under the tree's one filesystem
// gate, so exactly one installs and the other gets the typed conflict
// result (fs.write's "conflict" code, recoverable), and the file holds the
// winner's text.
func TestTwoChildrenWritingOneRevisionInstallOnce(t *testing.T) {
	sum := sha256.Sum256([]byte("v0"))
	rev := hex.EncodeToString(sum[:])
	// Each child's turns: one fs.write of doc against v0's revision.
	turns := func(id, text string) string {
		return `[{"tool_calls":[{"id":"` + id + `","name":"fs_write","arguments":{"path":"doc","text":"` + text + `","expected_revision":"` + rev + `"}}]},{"text":["wrote"]}]`
	}
	spawn := func(id, input string) string {
		return `{"id":"` + id + `","name":"subagent","arguments":{"action":"spawn","request":{"input":"` + input + `","capabilities":{"tools":["fs.write"]}}}}`
	}
	script := `{"turns":[{"tool_calls":[` + spawn("s1", "write a") + `,` + spawn("s2", "write b") + `]},
		{"tool_calls":[{"id":"w","name":"subagent","arguments":{"action":"wait","agent_ids":["{{agent_id:s1}}","{{agent_id:s2}}"],"mode":"all","timeout_ms":60000}}]},
		{"text":["done"]}],
		"agents":[{"input":"write a","turns":` + turns("a", "from a") + `},{"input":"write b","turns":` + turns("b", "from b") + `}]}`
	var ws string
	d, err := loadString(t, "schema_version = 1\n[options.model]\nprovider = \"script\"\nscript = { base = \"source\", path = \"s.json\" }\n[options.filesystem]\nwrite = true\n[options.children]\nenabled = true\n[options.approvals]\nfilesystem_write = \"required\"\n", func(o *LoadOptions) {
		os.WriteFile(filepath.Join(filepath.Dir(o.Config), "s.json"), []byte(script), 0o600)
		ws = o.Bindings["workspace"]
		os.WriteFile(filepath.Join(ws, "doc"), []byte("v0"), 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := d.NewRuntime(context.Background(), HostOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	// The barrier: the second question opens it, and both answers wait
	// for it.
	var mu sync.Mutex
	waiting := 0
	open := make(chan struct{})
	task, err := rt.StartTask(context.Background(), TaskRequest{Input: "go", Approver: answerFunc(func(ctx context.Context, req approval.Request) (approval.Answer, error) {
		mu.Lock()
		if waiting++; waiting == 2 {
			close(open)
		}
		mu.Unlock()
		select {
		case <-open:
			return approval.AllowOnce, nil
		case <-ctx.Done():
			return approval.Reject, nil
		}
	})})
	if err != nil {
		t.Fatal(err)
	}
	// Each child's one fs.write, by the child's input letter ("a" or
	// "b"): both are call_1_1, each of its own agent.
	results, letter := map[string]string{}, map[string]string{}
	for ev := range task.Events() {
		switch {
		case ev.Type == event.ToolStarted && ev.Call.Name == "fs.write":
			letter[ev.Agent.AgentID] = strings.TrimPrefix(argumentText(ev.Call.Arguments), "from ")
		case ev.Type == event.ToolFinished && ev.Name == "fs.write":
			results[ev.Agent.AgentID] = string(ev.Result)
		}
	}
	if obj := task.Wait(); obj.Outcome.Status != event.StatusCompleted {
		b, _ := json.Marshal(obj.Outcome)
		t.Fatalf("outcome %s", b)
	}
	won, lost := "", ""
	for agent, r := range results {
		id := letter[agent]
		switch {
		case strings.Contains(r, `"status":"completed"`):
			won += id
		case strings.Contains(r, `"conflict"`):
			lost += id
		default:
			t.Errorf("%s: %s, want completed or the conflict result", id, r)
		}
	}
	if len(won) != 1 || len(lost) != 1 {
		t.Fatalf("won %q lost %q (%v): want exactly one install", won, lost, results)
	}
	if got, _ := os.ReadFile(filepath.Join(ws, "doc")); string(got) != "from "+won {
		t.Errorf("doc holds %q, want the winner %s's text", got, won)
	}
}

// argumentText is the "text" member of a JSON object of arguments.
func argumentText(args json.RawMessage) string {
	var a struct {
		Text string `json:"text"`
	}
	json.Unmarshal(args, &a)
	return a.Text
}
