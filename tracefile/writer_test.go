package tracefile

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/model"
)

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
			_, err := Open(c.path, Options{})
			var te *Error
			if !errors.Is(err, ErrSetup) || !errors.As(err, &te) {
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
	tw, err := Open(p, Options{})
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
	if _, err := Open(filepath.Join(dir, "a"), Options{MaxBytes: TerminalReserve - 1}); !errors.Is(err, ErrSetup) {
		t.Fatalf("one below the reserve: %v", err)
	}
	tw, err := Open(filepath.Join(dir, "b"), Options{MaxBytes: TerminalReserve})
	if err != nil {
		t.Fatalf("at the reserve: %v", err)
	}
	// At the reserve, nothing but the terminal record fits.
	if err := tw.Write(testEvent(1, event.RunStarted)); err != nil {
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

func testEvent(seq uint64, typ event.Type) event.Event {
	return event.Event{SchemaVersion: event.SchemaVersion, Seq: seq, RootSeq: seq, RunID: "run-1", SessionID: "run-1", TraceID: strings.Repeat("a", 32),
		Agent: event.AgentRef{AgentID: "agent-1", RootRunID: "run-1", Kind: "root"}, EventData: event.EventData{Type: typ}}
}

func deltaEvent(seq uint64, text string) event.Event {
	ev := testEvent(seq, event.TextDelta)
	ev.Text = text
	return ev
}

func finishedEvent(seq uint64, output string) event.Event {
	ev := testEvent(seq, event.RunFinished)
	ev.Outcome = &event.Outcome{Status: event.StatusCompleted, Output: &output, FinishReason: model.FinishStop}
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
	fit := (budget - TerminalReserve) / int64(len(one)) // deltas that fit exactly
	for _, c := range []struct {
		name    string
		max     int64
		deltas  int64
		dropped int64
	}{
		{"AllFit", budget, fit, 0},
		{"OnePastTheBound", budget, fit + 1, 1},
		{"ExactlyAtTheBound", TerminalReserve + fit*int64(len(one)), fit, 0},
		{"OneByteShort", TerminalReserve + fit*int64(len(one)) - 1, fit, 1},
		{"ManyPast", budget, 10 * fit, 9 * fit},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "t.jsonl")
			tw, err := Open(path, Options{MaxBytes: c.max, CaptureContent: true})
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
			if err := tw.Write(deltaEvent(uint64(c.deltas+2), "late")); !errors.Is(err, ErrClosed) {
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
	tw, _ := Open(path, Options{MaxBytes: TerminalReserve, CaptureContent: true})
	big := strings.Repeat("y", 2*TerminalReserve)
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
	tw, _ := Open(path, Options{MaxBytes: 64 << 10, CaptureContent: true})
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
			got, err := ExpandPath(c.tmpl, c.session)
			if c.ok != (err == nil) || got != c.want {
				t.Fatalf("ExpandPath(%q, %q) = %q, %v", c.tmpl, c.session, got, err)
			}
			if err != nil && !errors.Is(err, ErrSetup) {
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
		out, err := ExpandPath(tmpl, session)
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
			tw := &Writer{opts: Options{CaptureContent: capture}}
			ev := deltaEvent(1, text)
			ev.Call = &event.Call{ID: "c", Name: "fs.read", Arguments: args}
			ev.Result = result
			for _, typ := range []event.Type{event.TextDelta, event.ToolStarted, event.ToolFinished, event.ToolOutput} {
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
				if !capture && len(text) >= 8 && typ == event.TextDelta && bytes.Contains(line, []byte(text)) && !strings.ContainsAny(text, `"\<>&`) {
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
	tw, _ := Open(path, Options{CaptureContent: true})
	defer tw.Close()
	ev := deltaEvent(1, "sixteen bytes ok")
	b.ReportAllocs()
	for b.Loop() {
		tw.Write(ev)
	}
}

// textEvent builds a plain text event (see plainText) from fuzzable parts.
func textEvent(typ event.Type, text, id, parent string, depth int) event.Event {
	ev := event.Event{SchemaVersion: event.SchemaVersion, Seq: 7, RootSeq: 1 << 40, TimestampUnixMicros: -3, RunID: "run<" + id, SessionID: "s\u2028" + id, TraceID: id,
		Agent: event.AgentRef{AgentID: id + "&", RootRunID: "run", ParentAgentID: parent, Kind: "root", Depth: depth}, EventData: event.EventData{Type: typ, Text: text}}
	if typ == event.ToolOutput {
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
			tw, err := Open(path, Options{CaptureContent: capture, Mask: m})
			if err != nil {
				t.Fatal(err)
			}
			var want [][]byte
			for i, text := range texts {
				for _, typ := range []event.Type{event.TextDelta, event.ToolOutput} {
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
		typ := event.TextDelta
		if output {
			typ = event.ToolOutput
		}
		ev := textEvent(typ, text, id, parent, len(id))
		tw := &Writer{opts: Options{CaptureContent: capture}}
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
	var tw *Writer
	mask := func(b []byte) []byte {
		_ = tw.Written() // would deadlock under the writer's lock
		return b
	}
	tw, err := Open(path, Options{CaptureContent: true, Mask: mask})
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
