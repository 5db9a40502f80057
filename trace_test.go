package pablo

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger/outcome"
	"github.com/pabloagent/pablo/tracefile"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/ledger"
)

const traceScript = `{"turns":[{"text":["Reading the SECRET-VALUE-1234 note."],"tool_calls":[{"name":"fs_read","arguments":{"path":"evidence.md"}}],"usage":{"input_tokens":10,"output_tokens":2}},{"text":["Paid ","on time."],"usage":{"input_tokens":20,"output_tokens":3}}]}`

// traceRun runs the demo task with a trace writer as the sink and returns
// the trace lines.
func traceRun(t *testing.T, opts tracefile.Options) ([]map[string]any, []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	tw, err := OpenTrace(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	set, _ := authority.New(authority.Config{Native: []authority.ID{authority.FSRead}})
	script, err := ParseScript([]byte(traceScript))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := NewRuntime(RuntimeOptions{Model: NewScriptModel(script), Authority: set, Catalogs: []ToolCatalog{fakeRead{}}, Sink: tw.Write})
	if err != nil {
		t.Fatal(err)
	}
	obj, err := rt.Run(context.Background(), "THE-TASK-INPUT what was paid?")
	if err != nil {
		t.Fatal(err)
	}
	if obj.Outcome.Status != event.StatusCompleted {
		t.Fatalf("outcome %+v", obj.Outcome)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return parseLines(t, raw), raw
}

func parseLines(t *testing.T, raw []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

// fakeRead serves fs.read with fixed content.
type fakeRead struct{}

func (fakeRead) Tools() []authority.ToolSpec {
	return []authority.ToolSpec{{ID: authority.FSRead, Description: "read", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`)}}
}

func (fakeRead) Call(context.Context, authority.Call) ledger.ToolResult {
	return ledger.Completed(map[string]any{"content": "INV-1042 paid"})
}

func TestTraceContentIsNullUnlessCaptured(t *testing.T) {
	t.Parallel()
	lines, raw := traceRun(t, tracefile.Options{})
	for _, forbidden := range []string{"SECRET-VALUE", "INV-1042", "Paid", "evidence.md", "THE-TASK-INPUT", DefaultInstructions[:30]} {
		if bytes.Contains(raw, []byte(forbidden)) {
			t.Errorf("uncaptured trace holds %q", forbidden)
		}
	}
	seen := map[string]bool{}
	for _, l := range lines {
		typ := l["type"].(string)
		seen[typ] = true
		switch typ {
		case "assistant.text.delta":
			if v, ok := l["text"]; !ok || v != nil || l["text_bytes"].(float64) == 0 {
				t.Errorf("delta: %v", l)
			}
		case "tool.started":
			call := l["call"].(map[string]any)
			if call["arguments"] != nil || call["arguments_bytes"].(float64) == 0 || call["name"] != "fs.read" {
				t.Errorf("tool.started: %v", l)
			}
		case "tool.finished":
			res := l["result"].(map[string]any)
			if res["status"] != "completed" || res["content"] != nil || l["result_bytes"].(float64) == 0 {
				t.Errorf("tool.finished: %v", l)
			}
		case "run.finished":
			o := l["outcome"].(map[string]any)
			if v, ok := o["output"]; !ok || v != nil || o["output_bytes"].(float64) != float64(len("Paid on time.")) {
				t.Errorf("run.finished: %v", l)
			}
		}
	}
	if len(seen) < 6 {
		t.Fatalf("event kinds: %v", seen)
	}
}

func TestTraceCapturesContentWhenAskedAndMasksSecrets(t *testing.T) {
	t.Parallel()
	mask := func(b []byte) []byte { return bytes.ReplaceAll(b, []byte("SECRET-VALUE-1234"), []byte("[redacted]")) }
	lines, raw := traceRun(t, tracefile.Options{CaptureContent: true, Mask: mask})
	if bytes.Contains(raw, []byte("SECRET-VALUE")) {
		t.Fatal("a known secret reached the trace")
	}
	for _, want := range []string{"[redacted] note", "INV-1042", "Paid on time.", `"path":"evidence.md"`} {
		if !bytes.Contains(raw, []byte(want)) {
			t.Errorf("captured trace lacks %q", want)
		}
	}
	if bytes.Contains(raw, []byte("THE-TASK-INPUT")) || bytes.Contains(raw, []byte(DefaultInstructions[:30])) {
		t.Fatal("the task input or the instructions reached the trace")
	}
	if last := lines[len(lines)-1]; last["type"] != "run.finished" {
		t.Fatalf("last line %v", last)
	}
}

func TestDeploymentTraceSink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	traces := filepath.Join(dir, "traces")
	os.Mkdir(ws, 0o700)
	os.Mkdir(traces, 0o700)
	os.WriteFile(filepath.Join(dir, "script.json"), []byte(traceScript), 0o600)
	doc := `schema_version = 1
[options.model]
provider = "script"
script = { base = "source", path = "script.json" }
[options.shell]
enabled = false
[options.trace]
path = { base = "binding", name = "traces", path = "{session_id}.jsonl" }
max_bytes = 65536
`
	os.WriteFile(filepath.Join(dir, "deployment.toml"), []byte(doc), 0o600)
	os.WriteFile(filepath.Join(ws, "evidence.md"), []byte("INV-1042 paid\n"), 0o600)
	d, err := Load(LoadOptions{Config: filepath.Join(dir, "deployment.toml"), Bindings: map[string]string{"workspace": ws, "traces": traces}})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("ExplicitSession", func(t *testing.T) {
		sink, closer, err := d.TraceSink("acp-1")
		if err != nil {
			t.Fatal(err)
		}
		defer closer.Close()
		if sink == nil {
			t.Fatal("nil sink")
		}
		if _, err := os.Stat(filepath.Join(traces, "acp-1.jsonl")); err != nil {
			t.Fatal(err)
		}
		if _, _, err := d.TraceSink("acp-1"); !errors.Is(err, ErrTraceSetup) {
			t.Fatalf("a second trace on the same path: %v", err)
		}
		if _, _, err := d.TraceSink("../escape"); !errors.Is(err, ErrTraceSetup) {
			t.Fatalf("an unsafe session ID: %v", err)
		}
	})
	t.Run("SessionFromTheFirstEvent", func(t *testing.T) {
		sink, closer, err := d.TraceSink("")
		if err != nil {
			t.Fatal(err)
		}
		var seen int
		count := func(event.Event) error { seen++; return nil }
		rt, err := d.NewRuntime(context.Background(), HostOptions{Sink: ChainSinks(sink, nil, count)})
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close()
		obj, err := rt.Run(context.Background(), "What was paid?")
		if err != nil {
			t.Fatal(err)
		}
		if err := closer.Close(); err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(filepath.Join(traces, *obj.SessionID+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		lines := parseLines(t, raw)
		if len(lines) != seen || lines[len(lines)-1]["type"] != "run.finished" || bytes.Contains(raw, []byte("Paid on time")) {
			t.Fatalf("%d lines, %d events: %s", len(lines), seen, raw)
		}
	})
}

func TestTraceSinkFailureFailsTheTask(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "t.jsonl")
	tw, _ := OpenTrace(path, tracefile.Options{})
	tw.Close() // every later write fails
	set, _ := authority.New(authority.Config{Native: []authority.ID{authority.FSRead}})
	script, _ := ParseScript([]byte(traceScript))
	rt, _ := NewRuntime(RuntimeOptions{Model: NewScriptModel(script), Authority: set, Catalogs: []ToolCatalog{fakeRead{}}, Sink: tw.Write})
	obj, _ := rt.Run(context.Background(), "x")
	if obj.Outcome.Status != event.StatusFailed || obj.Outcome.Code != outcome.FailEventSinkIO {
		t.Fatalf("outcome %+v", obj.Outcome)
	}
}

// A host writes a native trace next to its own sink: the trace sees every
// event first, content stays out unless CaptureContent is set.
func ExampleOpenTrace() {
	dir, _ := os.MkdirTemp("", "trace")
	defer os.RemoveAll(dir)
	tw, err := OpenTrace(filepath.Join(dir, "run.jsonl"), tracefile.Options{MaxBytes: 1 << 20})
	if err != nil {
		fmt.Println(err)
		return
	}
	script, _ := ParseScript([]byte(`{"turns":[{"text":["Done."]}]}`))
	set, _ := authority.New(authority.Config{})
	var kinds []string
	mine := func(ev event.Event) error { kinds = append(kinds, string(ev.Type)); return nil }
	rt, _ := NewRuntime(RuntimeOptions{Model: NewScriptModel(script), Authority: set, Sink: ChainSinks(tw.Write, mine)})
	obj, _ := rt.Run(context.Background(), "Say done.")
	tw.Close()
	raw, _ := os.ReadFile(filepath.Join(dir, "run.jsonl"))
	fmt.Println(obj.Outcome.Status, strings.Join(kinds, " "))
	fmt.Println(bytes.Count(raw, []byte("\n")), "lines, content captured:", bytes.Contains(raw, []byte("Done.")))
	// Output:
	// completed run.started model.started assistant.text.delta model.finished run.finished
	// 5 lines, content captured: false
}
