package pablo

import (
	"fmt"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/internal/compaction"
	"github.com/pabloagent/pablo/ledger/outcome"
)

// TestContextKeysHaveTheirEffect: each options.context key changes what
// the engine does. (keep_recent_turns: TestCompactionKeepsThePinnedAndRecordsNoContent
// and internal/compaction's TestChooseKeepsThePinnedAndTheRecentTurns;
// model.context_window_tokens: TestTokenTriggerBoundary.)
func TestContextKeysHaveTheirEffect(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, g *compactGateway, extra string) (*TaskObject, []event.Compaction) {
		d := compactDeployment(t, g, extra, 1000)
		obj, events := runCompact(t, d, HostOptions{})
		return obj, compactionRecords(events)
	}
	ceiling := "[options.limits]\nmax_context_bytes = 12000\n"
	t.Run("enabled=false", func(t *testing.T) {
		t.Parallel()
		obj, recs := run(t, newCompactGateway(t, 100), "[options.context]\nenabled = false\n"+ceiling)
		if obj.Outcome.Status != event.StatusLimitExceeded || obj.Outcome.Limit != outcome.LimitContextBytes || len(recs) != 0 {
			t.Fatalf("outcome %s, %d compactions", outcomeJSON(obj.Outcome), len(recs))
		}
	})
	t.Run("safety_margin_percent", func(t *testing.T) {
		t.Parallel()
		for _, margin := range []uint64{10, 40} {
			_, recs := run(t, newCompactGateway(t, 12), fmt.Sprintf("[options.context]\nenabled = true\nsafety_margin_percent = %d\n", margin)+ceiling)
			if len(recs) == 0 {
				t.Fatalf("margin %d: no compaction", margin)
			}
			var before uint64
			fmt.Sscan(recs[0].BeforeBytes, &before)
			threshold := (compaction.Bounds{ContextBytes: 12000, MarginPercent: margin}).ByteThreshold()
			if before < threshold || before >= threshold+1600 {
				t.Fatalf("margin %d: the first compaction at %d bytes, threshold %d", margin, before, threshold)
			}
		}
	})
	t.Run("max_summary_tokens", func(t *testing.T) {
		t.Parallel()
		g := newCompactGateway(t, 12)
		_, recs := run(t, g, contextTable(0)+"max_summary_tokens = 77\n"+ceiling)
		g.mu.Lock()
		defer g.mu.Unlock()
		if len(recs) == 0 || len(g.summaryMaxTokens) == 0 || g.summaryMaxTokens[0] != 77 {
			t.Fatalf("%d compactions, summary max_tokens %v", len(recs), g.summaryMaxTokens)
		}
	})
	t.Run("max_summary_bytes", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			n      int
			reason string
		}{{256, ""}, {257, string(compaction.ReasonNotSmaller)}} {
			g := newCompactGateway(t, 12)
			g.summaryText = strings.Repeat("s", tc.n)
			_, recs := run(t, g, contextTable(0)+"max_summary_bytes = 256\n"+ceiling)
			if len(recs) == 0 {
				t.Fatal("no compaction")
			}
			got := ""
			if recs[0].Reason != nil {
				got = *recs[0].Reason
			}
			if got != tc.reason {
				t.Fatalf("a %d-byte summary under max_summary_bytes 256: reason %q, want %q", tc.n, got, tc.reason)
			}
		}
	})
}

// TestCompactContextSpan: each compaction is a compact_context span under
// the task's invoke_agent span, with the summary's chat span inside it.
func TestCompactContextSpan(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	g := newCompactGateway(t, 12)
	d := compactDeployment(t, g, contextTable(0)+"[options.limits]\nmax_context_bytes = 12000\n", 1000)
	obj, events := runCompact(t, d, HostOptions{Tracer: tp.Tracer("test")})
	if obj.Outcome.Status != event.StatusCompleted {
		t.Fatalf("outcome %s", outcomeJSON(obj.Outcome))
	}
	recs := compactionRecords(events)
	byID := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		byID[s.SpanContext().SpanID().String()] = s
	}
	var compacts []sdktrace.ReadOnlySpan
	chats := map[string]int{}
	for _, s := range rec.Ended() {
		switch name := s.Name(); {
		case name == "compact_context":
			compacts = append(compacts, s)
			if p := byID[s.Parent().SpanID().String()]; p == nil || p.Name() != "invoke_agent" {
				t.Fatalf("compact_context's parent is %v", p)
			}
		case strings.HasPrefix(name, "chat "):
			chats[s.Parent().SpanID().String()]++
		}
	}
	if len(compacts) == 0 || len(compacts) != len(recs) {
		t.Fatalf("%d compact_context spans for %d compactions", len(compacts), len(recs))
	}
	for _, s := range compacts {
		if chats[s.SpanContext().SpanID().String()] != 1 {
			t.Fatalf("compact_context holds %d chat spans, want the summary's one", chats[s.SpanContext().SpanID().String()])
		}
	}
}
