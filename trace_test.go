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
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/ledger"
)

const traceScript = `{"turns":[{"text":["Reading the SECRET-VALUE-1234 note."],"tool_calls":[{"name":"fs_read","arguments":{"path":"evidence.md"}}],"usage":{"input_tokens":10,"output_tokens":2}},{"text":["Paid ","on time."],"usage":{"input_tokens":20,"output_tokens":3}}]}`

// traceRun runs the demo task with a trace writer as the sink and returns
// the trace lines.
func traceRun(t *testing.T, opts TraceWriterOptions) ([]map[string]any, []byte) {
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
	if obj.Outcome.Status != StatusCompleted {
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
	lines, raw := traceRun(t, TraceWriterOptions{})
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
	lines, raw := traceRun(t, TraceWriterOptions{CaptureContent: true, Mask: mask})
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

func TestTraceIsCreateOnlyAndPrivate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	os.WriteFile(target, []byte("keep"), 0o644)
	os.Symlink(target, filepath.Join(dir, "link"))
	os.Symlink(filepath.Join(dir, "nowhere"), filepath.Join(dir, "dangling"))
	os.Mkdir(filepath.Join(dir, "sub"), 0o700)
	cases := []struct {
		name, path string
	}{
		{"ExistingFileIsRefused", target},
		{"SymlinkIsNeverFollowed", filepath.Join(dir, "link")},
		{"DanglingSymlinkIsNeverFollowed", filepath.Join(dir, "dangling")},
		{"DirectoryIsRefused", filepath.Join(dir, "sub")},
		{"MissingDirectoryIsRefused", filepath.Join(dir, "none", "t.jsonl")},
		{"EmptyPathIsRefused", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := OpenTrace(c.path, TraceWriterOptions{})
			var te *TraceError
			if !errors.Is(err, ErrTraceSetup) || !errors.As(err, &te) {
				t.Fatalf("err = %v", err)
			}
		})
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Fatal("the symlink target was touched")
	}
	if _, err := os.Lstat(filepath.Join(dir, "nowhere")); !os.IsNotExist(err) {
		t.Fatal("a dangling symlink's target was created")
	}
	p := filepath.Join(dir, "new.jsonl")
	tw, err := OpenTrace(p, TraceWriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer tw.Close()
	st, _ := os.Stat(p)
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", st.Mode())
	}
}

func TestTraceBoundBelowTheReserveIsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := OpenTrace(filepath.Join(dir, "a"), TraceWriterOptions{MaxBytes: TraceTerminalReserve - 1}); !errors.Is(err, ErrTraceSetup) {
		t.Fatalf("one below the reserve: %v", err)
	}
	tw, err := OpenTrace(filepath.Join(dir, "b"), TraceWriterOptions{MaxBytes: TraceTerminalReserve})
	if err != nil {
		t.Fatalf("at the reserve: %v", err)
	}
	// At the reserve, nothing but the terminal record fits.
	if err := tw.Write(testEvent(1, EventRunStarted)); err != nil {
		t.Fatal(err)
	}
	if err := tw.Write(finishedEvent(2, "done")); err != nil {
		t.Fatal(err)
	}
	tw.Close()
	raw, _ := os.ReadFile(filepath.Join(dir, "b"))
	lines := parseLines(t, raw)
	if len(lines) != 1 || lines[0]["type"] != "run.finished" || lines[0]["trace_truncated"] == nil {
		t.Fatalf("trace %s", raw)
	}
}

func testEvent(seq uint64, typ EventType) Event {
	return Event{SchemaVersion: EventSchemaVersion, Seq: seq, RootSeq: seq, RunID: "run-1", SessionID: "run-1", TraceID: strings.Repeat("a", 32),
		Agent: AgentRef{AgentID: "agent-1", RootRunID: "run-1", Kind: "root"}, EventData: EventData{Type: typ}}
}

func deltaEvent(seq uint64, text string) Event {
	ev := testEvent(seq, EventTextDelta)
	ev.Text = text
	return ev
}

func finishedEvent(seq uint64, output string) Event {
	ev := testEvent(seq, EventRunFinished)
	ev.Outcome = &Outcome{Status: StatusCompleted, Output: &output, FinishReason: FinishStop}
	acc := ledger.Accounting{}
	ev.Accounting = &acc
	return ev
}

// TestTraceReservesTheTerminalRecord fills a trace past its bound: the
// records that would eat the reservation are dropped and counted, the
// terminal record is always written and notes the truncation, and the
// file never exceeds the bound. The cases sit at the bound and one past it.
func TestTraceReservesTheTerminalRecord(t *testing.T) {
	t.Parallel()
	delta := deltaEvent(1, "x")
	one := appendText(nil, &delta, true, delta.Text, appendHeader(nil, &delta)) // as Write writes it
	budget := int64(8192)
	fit := (budget - TraceTerminalReserve) / int64(len(one)) // deltas that fit exactly
	for _, c := range []struct {
		name    string
		max     int64
		deltas  int64
		dropped int64
	}{
		{"AllFit", budget, fit, 0},
		{"OnePastTheBound", budget, fit + 1, 1},
		{"ExactlyAtTheBound", TraceTerminalReserve + fit*int64(len(one)), fit, 0},
		{"OneByteShort", TraceTerminalReserve + fit*int64(len(one)) - 1, fit, 1},
		{"ManyPast", budget, 10 * fit, 9 * fit},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "t.jsonl")
			tw, err := OpenTrace(path, TraceWriterOptions{MaxBytes: c.max, CaptureContent: true})
			if err != nil {
				t.Fatal(err)
			}
			for i := int64(0); i < c.deltas; i++ {
				if err := tw.Write(deltaEvent(1, "x")); err != nil { // equal lengths
					t.Fatal(err)
				}
			}
			if err := tw.Write(finishedEvent(uint64(c.deltas+1), strings.Repeat("o", 100))); err != nil {
				t.Fatal(err)
			}
			if err := tw.Write(deltaEvent(uint64(c.deltas+2), "late")); !errors.Is(err, ErrTraceClosed) {
				t.Fatalf("a record after the terminal one: %v", err)
			}
			tw.Close()
			raw, _ := os.ReadFile(path)
			if int64(len(raw)) > c.max {
				t.Fatalf("trace is %d bytes, bound %d", len(raw), c.max)
			}
			lines := parseLines(t, raw)
			last := lines[len(lines)-1]
			if last["type"] != "run.finished" {
				t.Fatalf("last line %v", last)
			}
			if int64(len(lines)-1) != c.deltas-c.dropped {
				t.Fatalf("%d deltas written, want %d", len(lines)-1, c.deltas-c.dropped)
			}
			note, _ := last["trace_truncated"].(map[string]any)
			switch {
			case c.dropped == 0 && note != nil:
				t.Fatalf("unexpected note %v", note)
			case c.dropped > 0 && (note == nil || note["limit"] != "trace_bytes" || note["dropped_records"] != formatUint(uint64(c.dropped))):
				t.Fatalf("note %v, want %d dropped", note, c.dropped)
			}
		})
	}
}

func formatUint(n uint64) string { b, _ := json.Marshal(n); return string(b) }

// TestTraceTerminalDropsCapturedOutputToFit: a captured final output
// larger than what is left is written as null with its byte count.
func TestTraceTerminalDropsCapturedOutputToFit(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "t.jsonl")
	tw, _ := OpenTrace(path, TraceWriterOptions{MaxBytes: TraceTerminalReserve, CaptureContent: true})
	big := strings.Repeat("y", 2*TraceTerminalReserve)
	if err := tw.Write(finishedEvent(1, big)); err != nil {
		t.Fatal(err)
	}
	tw.Close()
	raw, _ := os.ReadFile(path)
	lines := parseLines(t, raw)
	o := lines[0]["outcome"].(map[string]any)
	if o["output"] != nil || o["output_bytes"].(float64) != float64(len(big)) || lines[0]["trace_truncated"] == nil {
		t.Fatalf("terminal %s", raw)
	}
}

func TestTraceWriterIsSafeForConcurrentUse(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "t.jsonl")
	tw, _ := OpenTrace(path, TraceWriterOptions{MaxBytes: 64 << 10, CaptureContent: true})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				tw.Write(deltaEvent(uint64(g*1000+i), "concurrent"))
			}
		}()
	}
	wg.Wait()
	tw.Write(finishedEvent(9999, "end"))
	tw.Close()
	raw, _ := os.ReadFile(path)
	if int64(len(raw)) > 64<<10 {
		t.Fatalf("%d bytes", len(raw))
	}
	lines := parseLines(t, raw)
	if int64(len(lines)-1)+int64(tw.Dropped()) != 800 {
		t.Fatalf("%d lines, %d dropped", len(lines), tw.Dropped())
	}
}

func TestExpandTracePath(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, tmpl, session, want string
		ok                        bool
	}{
		{"NoTemplateIsKept", "traces/t.jsonl", "", "traces/t.jsonl", true},
		{"SessionIsExpanded", "traces/{session_id}.jsonl", "abc-1", "traces/abc-1.jsonl", true},
		{"EveryOccurrenceIsExpanded", "{session_id}/{session_id}.jsonl", "s", "s/s.jsonl", true},
		{"SlashInSessionIsRefused", "{session_id}.jsonl", "../x", "", false},
		{"DotDotSessionIsRefused", "{session_id}", "..", "", false},
		{"EmptySessionIsRefused", "{session_id}.jsonl", "", "", false},
		{"LongestSessionIsKept", "{session_id}", strings.Repeat("a", 128), strings.Repeat("a", 128), true},
		{"OnePastTheLongestIsRefused", "{session_id}", strings.Repeat("a", 129), "", false},
		{"OtherTemplateIsRefused", "{run_id}.jsonl", "s", "", false},
		{"StrayBraceIsRefused", "{session_id}}.jsonl", "s", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ExpandTracePath(c.tmpl, c.session)
			if c.ok != (err == nil) || got != c.want {
				t.Fatalf("ExpandTracePath(%q, %q) = %q, %v", c.tmpl, c.session, got, err)
			}
			if err != nil && !errors.Is(err, ErrTraceSetup) {
				t.Fatalf("error kind: %v", err)
			}
		})
	}
}

func FuzzExpandTracePath(f *testing.F) {
	f.Add("traces/{session_id}.jsonl", "abc")
	f.Add("{session_id}{", "..")
	f.Add("a/b", "")
	f.Fuzz(func(t *testing.T, tmpl, session string) {
		out, err := ExpandTracePath(tmpl, session)
		if err != nil {
			return
		}
		if strings.ContainsAny(out, "{}") {
			t.Fatalf("expanded %q still holds a brace", out)
		}
		if strings.Contains(tmpl, "{session_id}") && (strings.Contains(session, "/") || session == ".." || session == "") {
			t.Fatalf("unsafe session %q accepted", session)
		}
		if !strings.Contains(tmpl, "{") && out != tmpl {
			t.Fatalf("a plain path changed: %q -> %q", tmpl, out)
		}
	})
}

// FuzzTraceRecord: any event text, arguments and result encode to exactly
// one valid JSON line, and uncaptured content never appears in it.
func FuzzTraceRecord(f *testing.F) {
	f.Add("hello", []byte(`{"path":"a"}`), []byte(`{"status":"completed","content":"x"}`))
	f.Add("\u2028\x00\xff", []byte(`null`), []byte(`[1,2]`))
	f.Fuzz(func(t *testing.T, text string, args, result []byte) {
		for _, capture := range []bool{false, true} {
			tw := &TraceWriter{opts: TraceWriterOptions{CaptureContent: capture}}
			ev := deltaEvent(1, text)
			ev.Call = &EventCall{ID: "c", Name: "fs.read", Arguments: args}
			ev.Result = result
			for _, typ := range []EventType{EventTextDelta, EventToolStarted, EventToolFinished, EventToolOutput} {
				ev.Type = typ
				line, err := tw.encode(ev, true)
				if err != nil {
					if json.Valid(args) && json.Valid(result) {
						t.Fatalf("%s: %v", typ, err)
					}
					continue
				}
				if bytes.Count(line, []byte("\n")) != 1 || line[len(line)-1] != '\n' || !json.Valid(line) {
					t.Fatalf("%s: bad line %q", typ, line)
				}
				if !capture && len(text) >= 8 && typ == EventTextDelta && bytes.Contains(line, []byte(text)) && !strings.ContainsAny(text, `"\<>&`) {
					var m map[string]any
					json.Unmarshal(line, &m)
					if m["text"] != nil {
						t.Fatalf("uncaptured text in %q", line)
					}
				}
			}
		}
	})
}

func BenchmarkTraceWriteDelta(b *testing.B) {
	path := filepath.Join(b.TempDir(), "t.jsonl")
	tw, _ := OpenTrace(path, TraceWriterOptions{CaptureContent: true})
	defer tw.Close()
	ev := deltaEvent(1, "sixteen bytes ok")
	b.ReportAllocs()
	for b.Loop() {
		tw.Write(ev)
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
		count := func(Event) error { seen++; return nil }
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
	tw, _ := OpenTrace(path, TraceWriterOptions{})
	tw.Close() // every later write fails
	set, _ := authority.New(authority.Config{Native: []authority.ID{authority.FSRead}})
	script, _ := ParseScript([]byte(traceScript))
	rt, _ := NewRuntime(RuntimeOptions{Model: NewScriptModel(script), Authority: set, Catalogs: []ToolCatalog{fakeRead{}}, Sink: tw.Write})
	obj, _ := rt.Run(context.Background(), "x")
	if obj.Outcome.Status != StatusFailed || obj.Outcome.Code != ledger.FailEventSinkIO {
		t.Fatalf("outcome %+v", obj.Outcome)
	}
}

// A host writes a native trace next to its own sink: the trace sees every
// event first, content stays out unless CaptureContent is set.
func ExampleOpenTrace() {
	dir, _ := os.MkdirTemp("", "trace")
	defer os.RemoveAll(dir)
	tw, err := OpenTrace(filepath.Join(dir, "run.jsonl"), TraceWriterOptions{MaxBytes: 1 << 20})
	if err != nil {
		fmt.Println(err)
		return
	}
	script, _ := ParseScript([]byte(`{"turns":[{"text":["Done."]}]}`))
	set, _ := authority.New(authority.Config{})
	var kinds []string
	mine := func(ev Event) error { kinds = append(kinds, string(ev.Type)); return nil }
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

// textEvent builds a plain text event (see plainText) from fuzzable parts.
func textEvent(typ EventType, text, id, parent string, depth int) Event {
	ev := Event{SchemaVersion: EventSchemaVersion, Seq: 7, RootSeq: 1 << 40, TimestampUnixMicros: -3, RunID: "run<" + id, SessionID: "s\u2028" + id, TraceID: id,
		Agent: AgentRef{AgentID: id + "&", RootRunID: "run", ParentAgentID: parent, Kind: "root", Depth: depth}, EventData: EventData{Type: typ, Text: text}}
	if typ == EventToolOutput {
		ev.CallID, ev.Name, ev.Stream = "c\x00"+id, "fs.read", "stdout"
	}
	return ev
}

// sameJSON reports whether two trace lines hold the same JSON value.
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("line %q: %v", a, err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("line %q: %v", b, err)
	}
	return reflect.DeepEqual(va, vb)
}

// The hand-written lines of text deltas and tool output hold exactly what
// encoding/json writes for them, whatever the strings hold, captured or
// not, masked or not, through a writer whose header cache sees the agent
// change.
func TestTraceTextLinesMatchEncodingJSON(t *testing.T) {
	mask := func(b []byte) []byte { return bytes.ReplaceAll(b, []byte("secret"), []byte("[masked]")) }
	texts := []string{"", "plain", "a<b>&c", "\u2028\u2029", "\x00\x1f\b\f\n\r\t\"\\", "\xff\xfe", "é😀", "my secret", strings.Repeat("x", 5000)}
	for _, capture := range []bool{false, true} {
		for _, m := range []func([]byte) []byte{nil, mask} {
			path := filepath.Join(t.TempDir(), "t.jsonl")
			tw, err := OpenTrace(path, TraceWriterOptions{CaptureContent: capture, Mask: m})
			if err != nil {
				t.Fatal(err)
			}
			var want [][]byte
			for i, text := range texts {
				for _, typ := range []EventType{EventTextDelta, EventToolOutput} {
					ev := textEvent(typ, text, fmt.Sprint("id", i%3), []string{"", "parent"}[i%2], i%2)
					line, err := tw.encode(ev, true)
					if err != nil {
						t.Fatal(err)
					}
					want = append(want, line)
					if err := tw.Write(ev); err != nil {
						t.Fatal(err)
					}
				}
			}
			tw.Close()
			raw, _ := os.ReadFile(path)
			got := bytes.SplitAfter(raw, []byte("\n"))
			for i := range want {
				if !sameJSON(t, got[i], want[i]) {
					t.Fatalf("capture %v, mask %v, line %d:\n got %s\nwant %s", capture, m != nil, i, got[i], want[i])
				}
			}
		}
	}
}

// FuzzTraceTextLine checks the hand-written line against encoding/json's
// for any strings.
func FuzzTraceTextLine(f *testing.F) {
	f.Add("text", "id", "", true, false)
	f.Add("<\u2028\xff", "\x00", "p", false, true)
	f.Fuzz(func(t *testing.T, text, id, parent string, capture, output bool) {
		typ := EventTextDelta
		if output {
			typ = EventToolOutput
		}
		ev := textEvent(typ, text, id, parent, len(id))
		tw := &TraceWriter{opts: TraceWriterOptions{CaptureContent: capture}}
		want, err := tw.encode(ev, true)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendText(nil, &ev, capture, text, tw.header(&ev)); !sameJSON(t, got, want) {
			t.Fatalf("got %s\nwant %s", got, want)
		}
	})
}

// A masker runs outside the writer's lock (it may ask the writer how much
// it wrote), and one long line does not stay pinned in the writer's buffer.
func TestTraceMaskOutsideTheLockAndNoPinnedBuffer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	var tw *TraceWriter
	mask := func(b []byte) []byte {
		_ = tw.Written() // would deadlock under the writer's lock
		return b
	}
	tw, err := OpenTrace(path, TraceWriterOptions{CaptureContent: true, Mask: mask})
	if err != nil {
		t.Fatal(err)
	}
	defer tw.Close()
	if err := tw.Write(deltaEvent(1, strings.Repeat("x", 2*maxScratch))); err != nil {
		t.Fatal(err)
	}
	if cap(tw.scratch) > maxScratch {
		t.Fatalf("the writer keeps a %d-byte buffer after a long line", cap(tw.scratch))
	}
	if err := tw.Write(deltaEvent(2, "short")); err != nil {
		t.Fatal(err)
	}
	if tw.scratch == nil {
		t.Fatal("a short line's buffer is not kept for the next")
	}
}
