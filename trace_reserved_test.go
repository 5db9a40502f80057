package pablo

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/event"
)

// TestLiveTraceIsNeverReachableThroughWorkspaceTools: with trace.path in
// the workspace (as the base preset has it), the live trace is reserved:
// fs.read, fs.write and fs.edit of it, or of a hard link to it, are denied
// (builtin.reserved), and fs.list and fs.search leave it out, while it is
// being written.
func TestLiveTraceIsNeverReachableThroughWorkspaceTools(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	os.WriteFile(filepath.Join(ws, "evidence.md"), []byte("run.started is a phrase\n"), 0o600)
	call := func(name, args string) string {
		return `{"text":[],"tool_calls":[{"name":"` + name + `","arguments":` + args + `}]}`
	}
	calls := []string{
		call("fs.read", `{"path":"trace.jsonl"}`),
		call("fs.read", `{"path":"alias.jsonl"}`),
		call("fs.write", `{"path":"trace.jsonl","text":"forged","expected_revision":null}`),
		call("fs.edit", `{"path":"trace.jsonl","expected_revision":"0000000000000000000000000000000000000000000000000000000000000000","old_text":"a","new_text":"b"}`),
		call("fs.list", `{"path":"."}`),
		call("fs.search", `{"path":".","query":"run.started"}`),
	}
	os.WriteFile(filepath.Join(dir, "script.json"), []byte(`{"turns":[{"text":["done"]}]}`), 0o600)
	os.WriteFile(filepath.Join(dir, "deployment.toml"), []byte(`schema_version = 1
[options.model]
provider = "script"
script = { base = "source", path = "script.json" }
[options.shell]
enabled = false
[options.filesystem]
write = true
[options.trace]
path = { base = "workspace", path = "trace.jsonl" }
`), 0o600)
	d, err := Load(LoadOptions{Config: filepath.Join(dir, "deployment.toml"), Bindings: map[string]string{"workspace": ws}})
	if err != nil {
		t.Fatal(err)
	}
	sink, closer, err := d.TraceSink("")
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	// Another name of the same file (the shell can make one) is the same
	// reserved file.
	if err := os.Link(filepath.Join(ws, "trace.jsonl"), filepath.Join(ws, "alias.jsonl")); err != nil {
		t.Fatal(err)
	}
	// The trace records a first task while the others run.
	rt, err := d.NewRuntime(context.Background(), HostOptions{Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Run(context.Background(), "Start."); err != nil {
		t.Fatal(err)
	}
	rt.Close()
	var results []string
	for _, c := range calls {
		s, err := ParseScript([]byte(`{"turns":[` + c + `,{"text":["done"]}]}`))
		if err != nil {
			t.Fatal(err)
		}
		collect := func(ev event.Event) error {
			if ev.Type == event.ToolFinished {
				results = append(results, string(ev.Result))
			}
			return nil
		}
		rt, err := d.NewRuntime(context.Background(), HostOptions{Model: NewScriptModel(s), Sink: collect})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rt.Run(context.Background(), "Read the trace."); err != nil {
			t.Fatal(err)
		}
		rt.Close()
	}
	if len(results) != len(calls) {
		t.Fatalf("%d tool results: %+v", len(results), results)
	}
	for i, r := range results[:4] {
		if !strings.Contains(r, "builtin.reserved") {
			t.Errorf("call %d was not denied as reserved: %s", i+1, r)
		}
	}
	if strings.Contains(results[4], "trace.jsonl") || strings.Contains(results[4], "alias.jsonl") || !strings.Contains(results[4], "evidence.md") {
		t.Errorf("fs.list: %s", results[4])
	}
	if strings.Contains(results[5], "trace.jsonl") || strings.Contains(results[5], "alias.jsonl") || !strings.Contains(results[5], "evidence.md") {
		t.Errorf("fs.search: %s", results[5])
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "trace.jsonl")); strings.Contains(string(b), "forged") || !strings.Contains(string(b), "run.started") {
		t.Errorf("the trace was altered or not written: %.200s", b)
	}
}
