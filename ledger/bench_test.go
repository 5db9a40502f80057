package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pabloagent/pablo/ledger/outcome"

	"github.com/pabloagent/pablo/authority"
)

var benchPayload = json.RawMessage(`{"text":"hello"}`)

// BenchmarkAppendEvent: one event appended to a root on the memory store.
func BenchmarkAppendEvent(b *testing.B) {
	r, _, _ := newRoot(b, Limits{})
	a := r.RootAgentID()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Append(bg, a, "assistant.text.delta", benchPayload); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRun1000Events: a root, 1,000 events and its terminal event.
func BenchmarkRun1000Events(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		r, err := NewRoot(bg, Options{})
		if err != nil {
			b.Fatal(err)
		}
		a := r.RootAgentID()
		for range 1000 {
			if _, err := r.Append(bg, a, "assistant.text.delta", benchPayload); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := r.Finish(bg, a, Finish{Outcome: Outcome{Status: outcome.Completed}}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkToolCallGovernance: the ledger's whole part of one tool call on the
// memory store: admit with decision, dispatch, settle with a result reference,
// and the tool.started/tool.finished events.
func BenchmarkToolCallGovernance(b *testing.B) {
	r, _, _ := newRoot(b, Limits{ToolCalls: Max(1 << 40), ToolInputBytes: Max(1 << 20), ToolOutputBytes: Max(1 << 23)})
	a := r.RootAgentID()
	ref := RefOf([]byte(`{}`))
	callIDs := make([]string, 0, 1<<16)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i == len(callIDs) {
			b.StopTimer()
			callIDs = append(callIDs, fmt.Sprint("call_", i))
			b.StartTimer()
		}
		id := callIDs[i]
		i++
		if err := r.AdmitToolCall(bg, a, ToolCall{ID: id, Name: "fs.read", InputBytes: 64, ArgumentsDigest: "sha256:x", Decision: authority.Decision{Allowed: true, Layer: "policy", RuleID: "r"}}); err != nil {
			b.Fatal(err)
		}
		if _, err := r.Append(bg, a, "tool.started", benchPayload); err != nil {
			b.Fatal(err)
		}
		if err := r.Dispatch(bg, a, id); err != nil {
			b.Fatal(err)
		}
		if err := r.SettleToolCall(bg, a, id, ToolSettlement{Status: outcome.ToolCompleted, Delivery: outcome.ResponseReceived, OutputBytes: 100, Result: ref}); err != nil {
			b.Fatal(err)
		}
		if _, err := r.Append(bg, a, "tool.finished", benchPayload); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBoltDurableAppends: many goroutines each durably append one event
// record at a time; group commit shares fsyncs. Reports events/s.
func BenchmarkBoltDurableAppends(b *testing.B) {
	db, err := OpenBolt(filepath.Join(b.TempDir(), "bench.db"), BoltOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var tasks atomic.Uint64
	ev := Event{RootSeq: 1, Seq: 1, RootID: "00000000-0000-4000-8000-000000000001", AgentID: "00000000-0000-4000-8000-000000000002",
		Type: "assistant.text.delta", Time: time.Now().UTC(), Payload: benchPayload}
	b.SetParallelism(256)
	b.ReportAllocs()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		task := fmt.Sprint("task-", tasks.Add(1))
		recs := []Record{{TaskID: task, Kind: RecordEvent, Time: ev.Time, Event: ev}}
		var n uint64
		for pb.Next() {
			n++
			recs[0].N = n
			if err := db.Append(bg, recs); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
}

// BenchmarkBoltDurableRootEvents: parallel roots on one bolt store, each
// appending events with the default FlushEvery (256), so every 256th Append
// durably flushes its batch; a final Flush acknowledges the rest. Reports
// durable events/s.
func BenchmarkBoltDurableRootEvents(b *testing.B) {
	db, err := OpenBolt(filepath.Join(b.TempDir(), "bench.db"), BoltOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	b.SetParallelism(8)
	b.ReportAllocs()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		r, err := NewRoot(bg, Options{Store: db})
		if err != nil {
			b.Error(err)
			return
		}
		a := r.RootAgentID()
		for pb.Next() {
			if _, err := r.Append(bg, a, "assistant.text.delta", benchPayload); err != nil {
				b.Error(err)
				return
			}
		}
		if err := r.Flush(bg); err != nil {
			b.Error(err)
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
}

// countingStore is a sink that keeps nothing, to isolate the ledger's own
// cost from the cost of retaining records.
type countingStore struct {
	MemoryStore
	n atomic.Uint64
}

func (s *countingStore) Append(_ context.Context, recs []Record) error {
	s.n.Add(uint64(len(recs)))
	return nil
}

// BenchmarkAppendEventSink: one event appended to a root whose store only
// counts records.
func BenchmarkAppendEventSink(b *testing.B) {
	r, err := NewRoot(bg, Options{Store: &countingStore{}})
	if err != nil {
		b.Fatal(err)
	}
	a := r.RootAgentID()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Append(bg, a, "assistant.text.delta", benchPayload); err != nil {
			b.Fatal(err)
		}
	}
}
