package pablo

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pabloagent/pablo/deployment"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/internal/config"
	"github.com/pabloagent/pablo/model"
	"github.com/pabloagent/pablo/tracefile"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/internal/redact"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/mcp"
)

// recordingModel replays a script and keeps every request it was sent.
type recordingModel struct {
	inner model.Model
	mu    sync.Mutex
	reqs  []string
}

func (m *recordingModel) Info() model.Info { return m.inner.Info() }

func (m *recordingModel) Generate(ctx context.Context, req *model.Request, emit func(string) error) (*model.Response, error) {
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
	events   []event.Event
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
func runRecorded(t *testing.T, body, script string, setup func(ws string), env map[string]string, known ...string) *recorded {
	t.Helper()
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	if setup != nil {
		setup(ws)
	}
	d := scriptDeployment(t, dir, ws, script, body)
	data, err := os.ReadFile(filepath.Join(dir, "script.json"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseScript(data)
	if err != nil {
		t.Fatal(err)
	}
	mdl := &recordingModel{inner: NewScriptModel(s)}
	store, err := ledger.OpenBolt(filepath.Join(dir, "ledger.db"), ledger.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tw, err := OpenTrace(filepath.Join(dir, "trace.jsonl"), tracefile.Options{CaptureContent: true})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := d.NewRuntime(context.Background(), HostOptions{Model: mdl, Store: store, Sink: tw.Write,
		LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range known {
		rt.opts.secrets.Add(v)
	}
	return finishRecorded(t, dir, rt, tw, store, mdl)
}

// runRecordedOpts is runRecorded for a runtime assembled by hand.
func runRecordedOpts(t *testing.T, opts RuntimeOptions, script string, known ...string) *recorded {
	t.Helper()
	dir := t.TempDir()
	s, err := ParseScript([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	mdl := &recordingModel{inner: NewScriptModel(s)}
	store, err := ledger.OpenBolt(filepath.Join(dir, "ledger.db"), ledger.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tw, err := OpenTrace(filepath.Join(dir, "trace.jsonl"), tracefile.Options{CaptureContent: true})
	if err != nil {
		t.Fatal(err)
	}
	opts.Model, opts.Store, opts.Sink = mdl, store, tw.Write
	opts.secrets = &redact.Set{}
	for _, v := range known {
		opts.secrets.Add(v)
	}
	rt, err := NewRuntime(opts)
	if err != nil {
		t.Fatal(err)
	}
	return finishRecorded(t, dir, rt, tw, store, mdl)
}

func finishRecorded(t *testing.T, dir string, rt *Runtime, tw *tracefile.Writer, store *ledger.Bolt, mdl *recordingModel) *recorded {
	t.Helper()
	obj, events := runTask(t, rt, "What was paid?")
	rt.Close()
	tw.Close()
	store.Close()
	trace, _ := os.ReadFile(filepath.Join(dir, "trace.jsonl"))
	db, _ := os.ReadFile(filepath.Join(dir, "ledger.db"))
	return &recorded{obj: obj, events: events, trace: string(trace), store: string(db), requests: mdl.reqs}
}

// leaks returns a piece of secret (5 bytes or more) found in text.
func leaks(text, secret string) string {
	for n := len(secret); n >= 5; n-- {
		for i := 0; i+n <= len(secret); i++ {
			if strings.Contains(text, secret[i:i+n]) {
				return secret[i : i+n]
			}
		}
	}
	return ""
}

// streamText concatenates the text of consecutive events of one kind.
func (r *recorded) streamText(typ event.Type) (string, int, int) {
	var b strings.Builder
	events, masked := 0, 0
	for _, ev := range r.events {
		if ev.Type == typ {
			b.WriteString(ev.Text)
			events++
			masked += ev.Masked
		}
	}
	return b.String(), events, masked
}

// sayTool streams the chunks it is given as live output, or its own.
type sayTool struct {
	own  []string
	mu   sync.Mutex
	args []string
}

func (*sayTool) Tools() []authority.ToolSpec {
	return []authority.ToolSpec{{ID: "test.say", Description: "streams chunks",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"chunks":{"type":"array","items":{"type":"string"}}},"required":["chunks"],"additionalProperties":false}`)}}
}

func (st *sayTool) Call(ctx context.Context, call authority.Call) ledger.ToolResult {
	st.mu.Lock()
	st.args = append(st.args, string(call.Arguments))
	st.mu.Unlock()
	var req struct{ Chunks []string }
	json.Unmarshal(call.Arguments, &req)
	if st.own != nil {
		req.Chunks = st.own
	}
	for _, c := range req.Chunks {
		ToolOutput(ctx)("stdout", []byte(c))
	}
	return ledger.Completed(map[string]any{"chunks": len(req.Chunks)})
}

// knownSecret is a known value with distinctive pieces; awsKey is a
// suspected secret (the AWS documentation's example key ID).
const (
	knownSecret = "Tk9-Qm4Lz7-Wp2Vx"
	awsKey      = "AKIAIOSFODNN7EXAMPLE"
)

func assertNoLeak(t *testing.T, r *recorded, secrets ...string) {
	t.Helper()
	all := r.all()
	for _, sec := range secrets {
		if piece := leaks(all, sec); piece != "" {
			t.Fatalf("%q of %q was recorded", piece, sec)
		}
	}
}

// A secret that straddles the shell's 4 KiB coalescing boundary is masked
// whole: no tool.output event, trace line or store record holds a piece of
// it, nor does their concatenation.
func TestSecretStraddlingTheChunkBoundaryIsMaskedWhole(t *testing.T) {
	script := `{"turns":[{"text":["Running."],"tool_calls":[{"name":"shell_run","arguments":{"command":"cat out.txt","cwd":"."}}]},{"text":["Done."]}]}`
	r := runRecorded(t, "[options.shell]\nenabled = true\n", script, func(ws string) {
		os.WriteFile(filepath.Join(ws, "out.txt"), []byte(strings.Repeat(" ", 4090)+knownSecret+" and "+awsKey+"\n"), 0o600)
	}, nil, knownSecret)
	if r.obj.Outcome.Status != event.StatusCompleted {
		b, _ := json.Marshal(r.obj)
		t.Fatalf("outcome %s", b)
	}
	assertNoLeak(t, r, knownSecret, awsKey)
	out, events, masked := r.streamText(event.ToolOutput)
	if want := strings.Repeat(" ", 4090) + "[redacted] and [redacted]\n"; out != want || events < 2 || masked != 2 {
		t.Fatalf("%d tool.output events with %d masks: %q", events, masked, out[4000:])
	}
}

// A secret printed in two writes, and a suspected secret split the same
// way, are masked whole; a chunk that cannot start a secret is released
// in its own event at once.
func TestSecretPrintedInTwoWritesIsMaskedWhole(t *testing.T) {
	tool := &sayTool{own: []string{"first line\n", "key " + knownSecret[:6], knownSecret[6:] + " and " + awsKey[:9], awsKey[9:] + "\n", "tail"}}
	set, _ := authority.New(authority.Config{Host: []authority.ID{"test.say"}})
	script := `{"turns":[{"text":["Saying."],"tool_calls":[{"name":"test.say","arguments":{"chunks":[]}}]},{"text":["Done."]}]}`
	r := runRecordedOpts(t, RuntimeOptions{Authority: set, Catalogs: []ToolCatalog{tool}}, script, knownSecret)
	assertNoLeak(t, r, knownSecret, awsKey)
	out, _, masked := r.streamText(event.ToolOutput)
	if out != "first line\nkey [redacted] and [redacted]\ntail" || masked != 2 {
		t.Fatalf("streamed %q with %d masks", out, masked)
	}
	var first string
	for _, ev := range r.events {
		if ev.Type == event.ToolOutput {
			first = ev.Text
			break
		}
	}
	if first != "first line\n" {
		t.Fatalf("the first chunk was not released alone: %q", first)
	}
}

// What the model writes is masked like tool output: its text deltas (a
// secret split across two), the tool-call arguments as recorded (the tool
// runs with the arguments as written), the final output in run.finished
// and the task object, each with its count of masks.
func TestModelOutputIsMasked(t *testing.T) {
	tool := &sayTool{}
	set, _ := authority.New(authority.Config{Host: []authority.ID{"test.say"}})
	script := `{"turns":[{"text":["The key is ` + knownSecret[:5] + `","` + knownSecret[5:] + `, the id ` + awsKey[:4] + `","` + awsKey[4:] + `."],` +
		`"tool_calls":[{"name":"test.say","arguments":{"chunks":["use ` + knownSecret + `"]}}]},` +
		`{"text":["Final: ` + knownSecret + `"]}]}`
	r := runRecordedOpts(t, RuntimeOptions{Authority: set, Catalogs: []ToolCatalog{tool}}, script, knownSecret)
	if r.obj.Outcome.Status != event.StatusCompleted || *r.obj.Outcome.Output != "Final: [redacted]" || r.obj.Outcome.Masked != 1 {
		b, _ := json.Marshal(r.obj)
		t.Fatalf("task object %s", b)
	}
	// The requests to the model are not records: the model's own text
	// goes back to it as it wrote it.
	r.requests = nil
	assertNoLeak(t, r, knownSecret, awsKey)
	text, _, masked := r.streamText(event.TextDelta)
	if text != "The key is [redacted], the id [redacted].Final: [redacted]" || masked != 3 {
		t.Fatalf("deltas %q with %d masks", text, masked)
	}
	var started, finished *event.Event
	for i := range r.events {
		switch r.events[i].Type {
		case event.ToolStarted:
			started = &r.events[i]
		case event.RunFinished:
			finished = &r.events[i]
		}
	}
	if started == nil || started.Masked != 1 || string(started.Call.Arguments) != `{"chunks":["use [redacted]"]}` {
		t.Fatalf("tool.started %+v", started)
	}
	if finished == nil || finished.Outcome.Masked != 1 || *finished.Outcome.Output != "Final: [redacted]" {
		t.Fatalf("run.finished %+v", finished)
	}
	if len(tool.args) != 1 || !strings.Contains(tool.args[0], knownSecret) {
		t.Fatalf("the tool ran with %q, not the model's arguments", tool.args)
	}
	for _, want := range []string{`"masked":1`, `"type":"assistant.text.delta"`} {
		if !strings.Contains(r.trace, want) {
			t.Fatalf("the trace lacks %s", want)
		}
	}
}

// Output validation judges the answer as the model wrote it; the answer is
// recorded and returned masked.
func TestOutputValidationJudgesTheAnswerAsWritten(t *testing.T) {
	schema := `{"type":"object","properties":{"key":{"type":"string","const":"` + awsKey + `"}},"required":["key"]}`
	script := `{"turns":[{"text":["{\"key\":\"` + awsKey + `\"}"]}]}`
	r := runRecorded(t, "[options.shell]\nenabled = false\n[options.output]\nschema = '"+schema+"'\n", script, nil, nil)
	if r.obj.Outcome.Status != event.StatusCompleted || *r.obj.Outcome.Output != `{"key":"[redacted]"}` || r.obj.Outcome.Masked != 1 {
		b, _ := json.Marshal(r.obj)
		t.Fatalf("task object %s", b)
	}
	r.requests = nil
	assertNoLeak(t, r, awsKey)
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
	if r.obj.Outcome.Status != event.StatusCompleted || len(r.requests) != 2 {
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
		if ev.Type == event.ToolFinished {
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

// Suspected secrets in well-known formats, and those a deployment names
// in options.redaction.patterns, are masked like known values: a file
// holding them, read by fs.read, reaches neither the trace, nor the store,
// nor the model's next request, and the result counts its masks.
func TestSuspectedSecretsAreMaskedEverywhere(t *testing.T) {
	const (
		openaiKey = "sk-proj-Ab3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3hJ5kL7nP9rS1tV3x"
		acmeKey   = "ACME-0F1E2D3C4B5A"
	)
	script := `{"turns":[{"text":["Reading."],"tool_calls":[{"name":"fs_read","arguments":{"path":"env.txt"}}]},{"text":["Done."]}]}`
	body := "[options.shell]\nenabled = false\n[options.redaction]\npatterns = ['\\bACME-[0-9A-F]{12}\\b']\n"
	r := runRecorded(t, body, script, func(ws string) {
		os.WriteFile(filepath.Join(ws, "env.txt"), []byte("AWS_ACCESS_KEY_ID="+awsKey+"\nOPENAI_API_KEY="+openaiKey+"\nACME="+acmeKey+"\nBUILD=3f786850e387550fdab836ed7e6dc881de23001b\n"), 0o600)
	}, nil)
	if r.obj.Outcome.Status != event.StatusCompleted {
		b, _ := json.Marshal(r.obj)
		t.Fatalf("outcome %s", b)
	}
	assertNoLeak(t, r, awsKey, openaiKey, acmeKey)
	if !strings.Contains(r.requests[1], "3f786850e387550fdab836ed7e6dc881de23001b") {
		t.Fatal("a git SHA was masked")
	}
	for _, ev := range r.events {
		if ev.Type == event.ToolFinished && ev.Masked != 3 {
			t.Fatalf("tool.finished counts %d masks, want 3", ev.Masked)
		}
	}
}

// A deployment pattern must compile as Go RE2 and bound its matches; a
// bad one is a typed config error naming the entry.
func TestRedactionPatternMustCompileAndBeBounded(t *testing.T) {
	for _, c := range []struct{ pattern, reason string }{
		{`(unclosed`, "not a Go RE2 regular expression"},
		{`tok-[a-z]+`, "bound every repetition"},
		{`\b`, "matches the empty text"},
	} {
		_, err := loadString(t, "schema_version = 1\n[options.redaction]\npatterns = ['ok-[0-9]{8}', '"+c.pattern+"']\n")
		var ce *deployment.Error
		if !errors.As(err, &ce) || ce.Code != config.CodeInvalidValue || ce.Option != "/options/redaction/patterns/1" || !strings.Contains(ce.Message, c.reason) {
			t.Errorf("%s: got %v", c.pattern, err)
		}
	}
	if _, err := loadString(t, "schema_version = 1\n[options.redaction]\npatterns = ['ok-[0-9]{8}']\n"); err != nil {
		t.Fatal(err)
	}
}
