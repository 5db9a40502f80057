package pablo

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/mcp"
)

// recordingModel replays a script and keeps every request it was sent.
type recordingModel struct {
	inner Model
	mu    sync.Mutex
	reqs  []string
}

func (m *recordingModel) Info() ModelInfo { return m.inner.Info() }

func (m *recordingModel) Generate(ctx context.Context, req *ModelRequest, emit func(string) error) (*ModelResponse, error) {
	b, _ := json.Marshal(req)
	m.mu.Lock()
	m.reqs = append(m.reqs, string(b))
	m.mu.Unlock()
	return m.inner.Generate(ctx, req, emit)
}

// recorded is everything a task left behind: the task object, its events,
// the captured trace file, the bbolt store file and the model's requests.
type recorded struct {
	obj      *TaskObject
	events   []Event
	trace    string
	store    string
	requests []string
}

// all is every record as one text, for a leak search; each event is also
// written once as JSON, so an escaped form is searched too.
func (r *recorded) all() string {
	var b strings.Builder
	for _, ev := range r.events {
		j, _ := json.Marshal(ev)
		b.Write(j)
		b.WriteString(ev.Text)
		b.Write(ev.Result)
		if ev.Call != nil {
			b.Write(ev.Call.Arguments)
		}
		if ev.Outcome != nil && ev.Outcome.Output != nil {
			b.WriteString(*ev.Outcome.Output)
		}
	}
	obj, _ := json.Marshal(r.obj)
	b.Write(obj)
	b.WriteString(r.trace)
	b.WriteString(r.store)
	for _, q := range r.requests {
		b.WriteString(q)
	}
	return b.String()
}

// runRecorded runs script under a deployment body with a captured trace, a
// bbolt store and a recording model.
func runRecorded(t *testing.T, body, script string, setup func(ws string), env map[string]string) *recorded {
	t.Helper()
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	if setup != nil {
		setup(ws)
	}
	d := scriptDeployment(t, dir, ws, script, body)
	s, err := LoadScript(context.Background(), filepath.Join(dir, "script.json"))
	if err != nil {
		t.Fatal(err)
	}
	model := &recordingModel{inner: NewScriptModel(s)}
	store, err := ledger.OpenBolt(filepath.Join(dir, "ledger.db"), ledger.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tw, err := OpenTrace(filepath.Join(dir, "trace.jsonl"), TraceWriterOptions{CaptureContent: true})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := d.NewRuntime(context.Background(), HostOptions{Model: model, Store: store, Sink: tw.Write,
		LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	if err != nil {
		t.Fatal(err)
	}
	obj, events := runTask(t, rt, "What was paid?")
	rt.Close()
	tw.Close()
	store.Close()
	trace, _ := os.ReadFile(filepath.Join(dir, "trace.jsonl"))
	db, _ := os.ReadFile(filepath.Join(dir, "ledger.db"))
	return &recorded{obj: obj, events: events, trace: string(trace), store: string(db), requests: model.reqs}
}

// escapedSecret holds every character JSON escapes in a string: a quote,
// a backslash, a TAB and U+2028. Its fragments are what must never appear.
const escapedSecret = "Zq7\"Wm4\\Tp9\tLx2\u2028Vr6-secret"

var escapedFragments = []string{"Zq7", "Wm4", "Tp9", "Lx2", "Vr6-secret"}

// A secret whose JSON form is escaped is masked in the decoded text: an MCP
// server's output and fs.read of a file holding it reach neither the
// trace, nor the store, nor the model's next request.
func TestEscapedSecretIsMaskedEverywhere(t *testing.T) {
	bin := buildFaultServer(t)
	alias := mcp.Alias(authority.MCPTool("records", "env"))
	script := `{"turns":[{"text":["Checking."],"tool_calls":[{"id":"c1","name":"` + alias + `","arguments":{}},{"id":"c2","name":"fs_read","arguments":{"path":"creds.txt"}}]},{"text":["Done."]}]}`
	body := "[options.shell]\nenabled = false\n[credentials.records]\nconsumer = \"mcp.environment\"\nsources = [{ kind = \"environment\", name = \"RECORDS_TOKEN\" }]\n" +
		mcpServerTOML(bin, "ok", "env = { PABLO_TEST_TOKEN = \"records\" }\n")
	r := runRecorded(t, body, script, func(ws string) {
		os.WriteFile(filepath.Join(ws, "creds.txt"), []byte("token: "+escapedSecret+"\n"), 0o600)
	}, map[string]string{"RECORDS_TOKEN": escapedSecret})
	if r.obj.Outcome.Status != StatusCompleted || len(r.requests) != 2 {
		b, _ := json.Marshal(r.obj)
		t.Fatalf("outcome %s after %d requests", b, len(r.requests))
	}
	all := r.all()
	for _, f := range escapedFragments {
		if strings.Contains(all, f) {
			t.Fatalf("fragment %q of the secret was recorded", f)
		}
	}
	if !strings.Contains(r.requests[1], "[redacted]") || !strings.Contains(r.trace, "[redacted]") {
		t.Fatal("the model's next request or the trace shows no mask")
	}
	masked := 0
	for _, ev := range r.events {
		if ev.Type == EventToolFinished {
			masked += ev.Masked
		}
	}
	if masked != 2 {
		t.Fatalf("tool.finished events count %d masks, want 2", masked)
	}
	if !strings.Contains(r.trace, `"masked":1`) {
		t.Fatal("the trace does not count the masks")
	}
}
