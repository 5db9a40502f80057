package pablo

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/graph"
	"github.com/pabloagent/pablo/ledger"
)

// TestAuditLevelsReachTheTraceGraphAndSnapshot: options.audit's tool
// profile level (metadata) and capability levels (fs.read content, fs.list
// none) decide what the deployment's trace keeps of each call, and the
// graph (tool profile and each tool), why and the dispatch snapshot show
// every tool's level; a deployment without options.audit shows none.
func TestAuditLevelsReachTheTraceGraphAndSnapshot(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("the notes"), 0o600)
	trace := filepath.Join(dir, "trace.jsonl")
	script := `{"turns":[{"text":["x"],"tool_calls":[{"id":"c1","name":"fs_read","arguments":{"path":"notes.txt"}},{"id":"c2","name":"fs_list","arguments":{"path":"."}},{"id":"c3","name":"fs_search","arguments":{"path":".","query":"notes"}}]},{"text":["done"]}]}`
	d := scriptDeployment(t, dir, ws, script, "[options.shell]\nenabled = false\n[options.trace]\npath = { base = \"source\", path = \"trace.jsonl\" }\n"+
		"[options.audit]\nlevel = \"metadata\"\ncapabilities = { \"fs.read\" = \"content\", \"fs.list\" = \"none\" }\n")
	store := ledger.NewMemoryStore()
	sink, closer, err := d.TraceSink("")
	if err != nil {
		t.Fatal(err)
	}
	rt, err := d.NewRuntime(context.Background(), HostOptions{Store: store, Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	st := runSnapTask(t, rt, store, "read")
	closer.Close()
	if st.obj.Outcome.Status != "completed" {
		t.Fatalf("outcome %+v", st.obj.Outcome)
	}

	// The trace.
	raw, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	finished := map[string]json.RawMessage{}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var ev struct {
			Type   string          `json:"type"`
			Name   string          `json:"name"`
			Result json.RawMessage `json:"result"`
		}
		json.Unmarshal([]byte(line), &ev)
		if ev.Type == "tool.finished" {
			finished[ev.Name] = ev.Result
		}
	}
	if r := string(finished["fs.read"]); !strings.Contains(r, "the notes") {
		t.Errorf("fs.read at content: the trace's result %s lacks the content", r)
	}
	if r := string(finished["fs.list"]); r != "null" {
		t.Errorf("fs.list at none: the trace's result %s, want null", r)
	}
	if r := string(finished["fs.search"]); r == "null" || strings.Contains(r, "notes.txt") {
		t.Errorf("fs.search at metadata: the trace's result %s, want its shape", r)
	}

	// The snapshot, the graph and why.
	want := map[string]string{"fs.read": "content", "fs.list": "none", "fs.search": "metadata"}
	snap := st.rootSnapshot(t)
	g := mustGraph(t, d, graph.Options{})
	if n, _ := g.Node("tools"); n.Attributes["audit_level"] != "metadata" {
		t.Errorf("the tool profile's attributes %v", n.Attributes)
	}
	for tool, level := range want {
		if e, ok := entry(snap, "tool:"+tool); !ok || e.Attributes["audit_level"] != level {
			t.Errorf("snapshot entry of %s: %+v, want audit_level %s", tool, e, level)
		}
		if n, _ := g.Node("tool:" + tool); n.Attributes["audit_level"] != level {
			t.Errorf("graph node of %s: %v, want audit_level %s", tool, n.Attributes, level)
		}
		e, err := d.Why(context.Background(), tool, graph.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(e.Chain) == 0 || e.Chain[0].Attributes["audit_level"] != level {
			t.Errorf("why %s: %+v, want audit_level %s", tool, e.Chain, level)
		}
	}

	// Without options.audit nothing changes: no attribute anywhere.
	plain := scriptDeployment(t, t.TempDir(), ws, script, "[options.shell]\nenabled = false\n")
	g = mustGraph(t, plain, graph.Options{})
	for _, n := range g.Nodes {
		if _, ok := n.Attributes["audit_level"]; ok {
			t.Errorf("a deployment without options.audit shows %s's audit level", n.ID)
		}
	}
}
