package eventlog

import (
	"context"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger"
)

// logUnderTest is a Log with the task lock its readers hold.
type logUnderTest struct {
	task sync.Mutex
	l    Log
}

func newLogUnderTest() *logUnderTest {
	lt := &logUnderTest{}
	lt.l.mu = &lt.task
	return lt
}

// locked calls f under the log's own lock, as an appender holds it.
func (lt *logUnderTest) locked(f func()) {
	lt.l.appendMu.Lock()
	defer lt.l.appendMu.Unlock()
	f()
}

// testEntry is one event a test appends, with the stamp it is given.
type testEntry struct {
	rootSeq, seq uint64
	micros       int64
	hdr          *Header
	text         string
	data         *event.EventData
}

func (lt *logUnderTest) append(en testEntry) {
	lt.l.Add(func() (Stamp, error) {
		return Stamp{RootSeq: en.rootSeq, Seq: en.seq, UnixMicros: en.micros}, nil
	}, en.hdr, en.text, en.data)
}

// The log keeps every event whatever the sizes of its deltas and however
// its growth between events interleaves with appends: chunks grown ahead,
// a delta longer than the chunk grown for it, a delta longer than any
// chunk, events that are not deltas, and growth that finds an append got
// there first.
func TestEventLogKeepsEveryEventAcrossGrowth(t *testing.T) {
	lt := newLogUnderTest()
	hdr := &Header{RunID: "r"}
	rng := rand.New(rand.NewPCG(1, 2))
	var want []string
	for i := range 20000 {
		var text string
		switch r := rng.IntN(100); {
		case r < 2:
			text = strings.Repeat("L", maxTextChunk+rng.IntN(1000)) // longer than any chunk
		case r < 6:
			text = strings.Repeat("m", 600+rng.IntN(3000)) // longer than a young chunk
		case r < 10:
			text = "" // not a delta
		default:
			text = strings.Repeat(string(rune('a'+i%26)), 1+rng.IntN(64))
		}
		en := testEntry{rootSeq: uint64(i + 1), seq: uint64(i + 1), hdr: hdr, text: text}
		if text == "" {
			en.data = &event.EventData{Type: event.ModelStarted}
		}
		lt.append(en)
		want = append(want, text)
		if lt.l.Low() && rng.IntN(4) > 0 {
			// Most of the time the task grows the log between events; some
			// of the time it is late and the append grows it itself.
			lt.l.Grow()
		}
	}
	lt.task.Lock()
	defer lt.task.Unlock()
	if lt.l.count != len(want) {
		t.Fatalf("count %d, want %d", lt.l.count, len(want))
	}
	for i, w := range want {
		ev := lt.l.At(i)
		if ev.RootSeq != uint64(i+1) {
			t.Fatalf("event %d has root_seq %d", i, ev.RootSeq)
		}
		if w != "" && ev.Text != w {
			t.Fatalf("event %d: text of %d bytes %.8q…, want %d bytes %.8q…", i, len(ev.Text), ev.Text, len(w), w)
		}
		if w == "" && ev.Type != event.ModelStarted {
			t.Fatalf("event %d: type %q", i, ev.Type)
		}
	}
}

// Growth is only ever ahead by one chunk per list, and a task that ends
// right after it seldom leaves much unused: the chunks grown ahead are
// within a few events of being needed.
func TestEventLogGrowsOneChunkAheadNearlyFull(t *testing.T) {
	lt := newLogUnderTest()
	hdr := &Header{RunID: "r"}
	grown := 0
	for i := range 5000 {
		lt.append(testEntry{rootSeq: uint64(i + 1), seq: uint64(i + 1), hdr: hdr, text: "0123456789abcdef0123456789abcdef"})
		if lt.l.Low() {
			lt.locked(func() {
				if !lt.l.entriesLow() && !lt.l.textLow() {
					t.Fatalf("event %d: low with no chunk at its mark", i)
				}
				if left := len(lt.l.entries[lt.l.k]) - lt.l.used; lt.l.entriesLow() && left > entriesLeft {
					t.Fatalf("event %d: entries low with %d slots left", i, left)
				}
				if left := len(lt.l.text[lt.l.t]) - lt.l.fill; lt.l.textLow() && left > textLeft {
					t.Fatalf("event %d: text low with %d bytes left", i, left)
				}
			})
			lt.l.Grow()
			grown++
		}
		lt.locked(func() {
			if spare := len(lt.l.entries) - 1 - lt.l.k; spare > 1 {
				t.Fatalf("event %d: %d entry chunks ahead", i, spare)
			}
			if spare := len(lt.l.text) - 1 - lt.l.t; spare > 1 {
				t.Fatalf("event %d: %d text chunks ahead", i, spare)
			}
		})
	}
	if grown == 0 {
		t.Fatal("the log never grew between events")
	}
}

// A log with no text never allocates a text chunk, grown ahead or not: an
// idle task holds no delta room.
func TestEventLogWithoutTextHoldsNoTextChunk(t *testing.T) {
	lt := newLogUnderTest()
	hdr := &Header{RunID: "r"}
	for i := range 100 {
		lt.append(testEntry{rootSeq: uint64(i + 1), seq: uint64(i + 1), hdr: hdr, data: &event.EventData{Type: event.ModelStarted}})
		if lt.l.Low() {
			lt.l.Grow()
		}
	}
	if len(lt.l.text) != 0 {
		t.Fatalf("%d text chunks for a log without text", len(lt.l.text))
	}
}

// Growth racing appends from another goroutine installs nothing twice and
// loses nothing: an append that needed the room first made its own chunk.
func TestEventLogGrowthRacingAppends(t *testing.T) {
	lt := newLogUnderTest()
	hdr := &Header{RunID: "r"}
	const n = 20000
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			if lt.l.Low() {
				lt.l.Grow()
			}
		}
	})
	for i := range n {
		lt.append(testEntry{rootSeq: uint64(i + 1), seq: uint64(i + 1), hdr: hdr, text: strings.Repeat("x", 1+i%97)})
	}
	close(done)
	wg.Wait()
	lt.task.Lock()
	defer lt.task.Unlock()
	for i := range n {
		if ev := lt.l.At(i); len(ev.Text) != 1+i%97 || ev.RootSeq != uint64(i+1) {
			t.Fatalf("event %d: root_seq %d, %d bytes of text", i, ev.RootSeq, len(ev.Text))
		}
	}
	if spare := len(lt.l.entries) - 1 - lt.l.k; spare > 1 {
		t.Fatalf("%d entry chunks ahead", spare)
	}
}

// Deltas longer than a chunk get chunks of their own and ask for no
// growth: a task of long deltas holds little more than its text, and a task
// whose one delta is long holds one chunk.
func TestEventLogLongDeltasHoldNoUnusedChunks(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sizes []int
	}{
		{"one long delta", []int{40 << 10}},
		{"long deltas", slices.Repeat([]int{70 << 10}, 100)},
		{"long after short", append(slices.Repeat([]int{32}, 40), slices.Repeat([]int{3000}, 50)...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lt := newLogUnderTest()
			hdr := &Header{RunID: "r"}
			total := 0
			for i, n := range tc.sizes {
				total += n
				lt.append(testEntry{rootSeq: uint64(i + 1), seq: uint64(i + 1), hdr: hdr, text: strings.Repeat(string(rune('a'+i%26)), n)})
				if lt.l.Low() {
					lt.l.Grow()
				}
			}
			held := 0
			for _, c := range lt.l.text {
				held += len(c)
			}
			if held > total+maxTextChunk {
				t.Fatalf("text chunks hold %d bytes for %d bytes of text", held, total)
			}
			lt.task.Lock()
			defer lt.task.Unlock()
			for i, n := range tc.sizes {
				if ev := lt.l.At(i); len(ev.Text) != n || ev.Text[0] != byte('a'+i%26) {
					t.Fatalf("delta %d: %d bytes starting %q, want %d", i, len(ev.Text), ev.Text[:1], n)
				}
			}
		})
	}
}

// Appenders of several agents that share one ledger, appending at once,
// leave the log in root_seq order with no gap: each append takes its
// ledger stamp and its slot under the log's own lock.
func TestEventLogKeepsRootSeqOrderAcrossAgents(t *testing.T) {
	ctx := context.Background()
	root, err := ledger.NewRoot(ctx, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	agents := []string{root.RootAgentID()}
	for range 3 {
		id, err := root.StartAgent(ctx, ledger.AgentSpec{ParentID: root.RootAgentID()})
		if err != nil {
			t.Fatal(err)
		}
		agents = append(agents, id)
	}
	lt := newLogUnderTest()
	hdr := &Header{RunID: root.ID()}
	const each = 2000
	var wg sync.WaitGroup
	for _, agent := range agents {
		wg.Go(func() {
			for range each {
				_, err := lt.l.Add(func() (Stamp, error) {
					ev, err := root.Append(ctx, agent, string(event.TextDelta), nil)
					return Stamp{RootSeq: ev.RootSeq, Seq: ev.Seq, UnixMicros: ev.Time.UnixMicro()}, err
				}, hdr, "x", nil)
				if err != nil {
					t.Error(err)
					return
				}
				if lt.l.Low() {
					lt.l.Grow()
				}
			}
		})
	}
	wg.Wait()
	lt.task.Lock()
	defer lt.task.Unlock()
	r := lt.l.Reader()
	defer r.Close()
	if r.Len() != each*len(agents) {
		t.Fatalf("the log holds %d events, want %d", r.Len(), each*len(agents))
	}
	for i := range r.Len() {
		if ev := lt.l.At(i); ev.RootSeq != uint64(i+1) {
			t.Fatalf("event %d has root_seq %d", i, ev.RootSeq)
		}
	}
}

// A tool or model event the log keeps as a Tool or a Model reads back as
// the event it was, among deltas and other events, in its place.
func TestEventLogReadsToolEventsBackWhole(t *testing.T) {
	lt := newLogUnderTest()
	hdr := &Header{RunID: "r", Agent: event.AgentRef{AgentID: "a"}}
	var want []event.EventData
	for i := range 3000 {
		st := func() (Stamp, error) {
			return Stamp{RootSeq: uint64(i + 1), Seq: uint64(i + 1), UnixMicros: int64(i)}, nil
		}
		var d event.EventData
		switch i % 4 {
		case 0:
			tool := &Tool{Call: &event.Call{ID: "call_1", Name: "fs.read", Arguments: []byte(`{"path":"a"}`), Sandbox: "off"}, Masked: i % 3}
			lt.l.AddTool(st, hdr, tool)
			d = event.EventData{Type: event.ToolStarted, Call: tool.Call, Masked: i % 3}
		case 1:
			lt.l.AddTool(st, hdr, &Tool{CallID: "call_1", Name: "fs.read", Result: []byte(`{"status":"completed"}`), Masked: i % 5})
			d = event.EventData{Type: event.ToolFinished, CallID: "call_1", Name: "fs.read", Result: []byte(`{"status":"completed"}`), Masked: i % 5}
		case 2:
			if i%8 == 2 {
				lt.l.Add(st, hdr, "delta", nil)
				d = event.EventData{Type: event.TextDelta, Text: "delta"}
				break
			}
			out, retry := uint64(i), int64(i)
			m := &Model{Finished: i%16 == 6, Provider: "p", Model: "m", Route: &event.RouteAttempt{Route: "r"}}
			d = event.EventData{Type: event.ModelStarted, Provider: "p", Model: "m", ModelRoute: m.Route}
			if m.Finished {
				m.Provider, m.Model = "", ""
				m.Status, m.FinishReason, m.Usage, m.OutputBytes, m.RetryInMS = "completed", "stop", &event.OutcomeUsage{}, &out, &retry
				d = event.EventData{Type: event.ModelFinished, ModelRoute: m.Route, Status: "completed", FinishReason: "stop", Usage: m.Usage, OutputBytes: &out, RetryInMS: &retry}
			}
			lt.l.AddModel(st, hdr, m)
		default:
			d = event.EventData{Type: event.ModelStarted, Provider: "p"}
			lt.l.Add(st, hdr, "", &d)
		}
		want = append(want, d)
		if lt.l.Low() {
			lt.l.Grow()
		}
	}
	lt.task.Lock()
	defer lt.task.Unlock()
	for i, w := range want {
		ev := lt.l.At(i)
		if ev.RootSeq != uint64(i+1) || ev.TimestampUnixMicros != int64(i) || ev.RunID != "r" || ev.Agent.AgentID != "a" {
			t.Fatalf("event %d: stamp or header %+v", i, ev)
		}
		if !reflect.DeepEqual(ev.EventData, w) {
			t.Fatalf("event %d: %+v, want %+v", i, ev.EventData, w)
		}
	}
}
