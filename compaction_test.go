package pablo

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/internal/compaction"
	"github.com/pabloagent/pablo/internal/engine"
	"github.com/pabloagent/pablo/model"
)

// contextTable is an options.context table with keep_recent_turns keep.
func contextTable(keep int) string {
	return fmt.Sprintf("[options.context]\nenabled = true\nsafety_margin_percent = 10\nkeep_recent_turns = %d\n", keep)
}

// runCompact runs one task of d on host.
func runCompact(t testing.TB, d *Deployment, host HostOptions) (*TaskObject, []event.Event) {
	t.Helper()
	if host.LookupEnv == nil {
		host.LookupEnv = lookupKey
	}
	rt, err := d.NewRuntime(context.Background(), host)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	return runTask(t, rt, "Read big.md until told to stop.")
}

func outcomeJSON(o *event.Outcome) string {
	b, _ := json.Marshal(o)
	return string(b)
}

// TestLongTaskCompactsRepeatedlyUnderTheContextCeiling is the figure's
// check: a 200-turn task under a 64 KiB context ceiling completes with
// repeated compactions, and every request the ledger admitted stays under
// the ceiling, measured as the ledger measures it and as bytes on the wire.
func TestLongTaskCompactsRepeatedlyUnderTheContextCeiling(t *testing.T) {
	t.Parallel()
	curve := longTaskCurve(t)
	if curve.compactions < 2 {
		t.Fatalf("%d compaction(s) in 200 turns under 64 KiB: want repeated compactions", curve.compactions)
	}
	if curve.maxLogical > 64<<10 || curve.maxWire > 64<<10 {
		t.Fatalf("a request passed the 64 KiB ceiling: logical max %d, on the wire max %d", curve.maxLogical, curve.maxWire)
	}
	t.Logf("200 turns: %d compactions; bytes per request logical max %d p50 %d, on the wire max %d p50 %d; summary requests max %d",
		curve.compactions, curve.maxLogical, curve.p50Logical, curve.maxWire, curve.p50Wire, curve.maxSummary)
}

type taskCurve struct {
	compactions                                          int
	maxLogical, p50Logical, maxWire, p50Wire, maxSummary int
}

// longTaskCurve runs the figure's task: 200 turns of a 2,000-byte fs.read
// each, max_context_bytes 65,536, keep_recent_turns 2.
func longTaskCurve(t testing.TB) taskCurve {
	g := newCompactGateway(t, 200)
	d := compactDeployment(t, g, contextTable(2)+"[options.limits]\nmax_context_bytes = 65536\n", 2000)
	m, err := d.FixtureModel(g.srv.URL + "/v1/chat/completions")
	if err != nil {
		t.Fatal(err)
	}
	var logical []int
	host := HostOptions{Model: &measuringModel{Model: m, measure: func(req *model.Request) {
		if req.Instructions != compaction.Instructions {
			logical = append(logical, int(engine.RequestBytes(req)))
		}
	}}}
	obj, events := runCompact(t, d, host)
	if obj.Outcome.Status != event.StatusCompleted || *obj.Outcome.Output != "done after 200 turns" {
		t.Fatalf("outcome %s", outcomeJSON(obj.Outcome))
	}
	recs := compactionRecords(events)
	for _, r := range recs {
		if r.Status != "completed" || r.Trigger != "threshold" {
			t.Fatalf("compaction %+v", r)
		}
	}
	wire, sums := g.counts()
	c := taskCurve{compactions: len(recs), maxLogical: slices.Max(logical), maxWire: slices.Max(wire), maxSummary: slices.Max(sums)}
	slices.Sort(logical)
	slices.Sort(wire)
	c.p50Logical, c.p50Wire = logical[len(logical)/2], wire[len(wire)/2]
	return c
}

// BenchmarkLongTaskUnderContextCeiling reports the figure's curve: the
// compactions of a 200-turn task under a 64 KiB ceiling and the bytes per
// request (the ledger's measure and the wire's), max and p50.
func BenchmarkLongTaskUnderContextCeiling(b *testing.B) {
	var c taskCurve
	for b.Loop() {
		c = longTaskCurve(b)
	}
	b.ReportMetric(float64(c.compactions), "compactions")
	b.ReportMetric(float64(c.maxLogical), "max-B/req")
	b.ReportMetric(float64(c.p50Logical), "p50-B/req")
	b.ReportMetric(float64(c.maxWire), "max-wire-B/req")
	b.ReportMetric(float64(c.p50Wire), "p50-wire-B/req")
}

// secondRequest measures, without a ceiling, the request of the task's
// second turn as the ledger does: its bytes and its messages and tools.
func secondRequest(t *testing.T) (bytes uint64, items int) {
	g := newCompactGateway(t, 3)
	d := compactDeployment(t, g, contextTable(0), 500)
	m, err := d.FixtureModel(g.srv.URL + "/v1/chat/completions")
	if err != nil {
		t.Fatal(err)
	}
	var sizes []uint64
	var counts []int
	obj, _ := runCompact(t, d, HostOptions{Model: &measuringModel{Model: m, measure: func(req *model.Request) {
		sizes = append(sizes, engine.RequestBytes(req))
		counts = append(counts, len(req.Messages)+len(req.Tools))
	}}})
	if obj.Outcome.Status != event.StatusCompleted || len(sizes) != 3 {
		t.Fatalf("outcome %s, %d requests", outcomeJSON(obj.Outcome), len(sizes))
	}
	return sizes[1], counts[1]
}

// ceilingFor is the smallest max_context_bytes whose threshold (the
// ceiling minus 10%) is threshold.
func ceilingFor(t *testing.T, threshold uint64) uint64 {
	for c := threshold; c < 2*threshold; c++ {
		if (compaction.Bounds{ContextBytes: c, MarginPercent: 10}).ByteThreshold() == threshold {
			return c
		}
	}
	t.Fatalf("no ceiling has threshold %d", threshold)
	return 0
}

// TestByteTriggerBoundary: a request exactly at the ceiling minus the
// margin is compacted before it is sent; one byte below it is not.
func TestByteTriggerBoundary(t *testing.T) {
	t.Parallel()
	b2, _ := secondRequest(t)
	for _, tc := range []struct {
		threshold uint64
		compacts  bool
	}{{b2, true}, {b2 + 1, false}, {b2 - 1, true}} {
		g := newCompactGateway(t, 2)
		ceiling := ceilingFor(t, tc.threshold)
		d := compactDeployment(t, g, contextTable(0)+fmt.Sprintf("[options.limits]\nmax_context_bytes = %d\n", ceiling), 500)
		obj, events := runCompact(t, d, HostOptions{})
		recs := compactionRecords(events)
		if obj.Outcome.Status != event.StatusCompleted {
			t.Fatalf("threshold %d (request %d): outcome %s", tc.threshold, b2, outcomeJSON(obj.Outcome))
		}
		if got := len(recs) > 0; got != tc.compacts {
			t.Fatalf("threshold %d, second request %d bytes: compacted %v, want %v", tc.threshold, b2, got, tc.compacts)
		}
		if tc.compacts && (recs[0].BeforeBytes != fmt.Sprint(b2) || recs[0].Status != "completed") {
			t.Fatalf("record %+v, want before_bytes %d", recs[0], b2)
		}
	}
}

// TestTokenTriggerBoundary: with a declared window, estimated input plus
// the output allowance exactly at the window minus the margin compacts;
// one token below it does not. The gateway reports no usage, so the
// estimate is the reference's own.
func TestTokenTriggerBoundary(t *testing.T) {
	t.Parallel()
	b2, items := secondRequest(t)
	est := compaction.EstimateTokens(b2, items)
	const out = 100
	windowFor := func(threshold uint64) uint64 {
		for w := threshold; w < 2*threshold; w++ {
			if (compaction.Bounds{WindowTokens: w, MarginPercent: 10}).TokenThreshold() == threshold {
				return w
			}
		}
		t.Fatalf("no window has threshold %d", threshold)
		return 0
	}
	for _, tc := range []struct {
		threshold uint64
		compacts  bool
	}{{est + out, true}, {est + out + 1, false}, {est + out - 1, true}} {
		g := newCompactGateway(t, 2)
		g.noUsage = true
		w := windowFor(tc.threshold)
		d := compactDeployment(t, g, fmt.Sprintf("context_window_tokens = %d\n", w)+contextTable(0)+
			fmt.Sprintf("[options.limits]\nmax_output_tokens = %d\n", out), 500)
		obj, events := runCompact(t, d, HostOptions{})
		recs := compactionRecords(events)
		if obj.Outcome.Status != event.StatusCompleted {
			t.Fatalf("window %d: outcome %s", w, outcomeJSON(obj.Outcome))
		}
		if got := len(recs) > 0; got != tc.compacts {
			t.Fatalf("window %d (threshold %d), second request %d tokens + %d: compacted %v, want %v", w, tc.threshold, est, out, got, tc.compacts)
		}
		if tc.compacts && (recs[0].BeforeEstimatedTokens != fmt.Sprint(est) || *recs[0].WindowTokens != fmt.Sprint(w)) {
			t.Fatalf("record %+v, want before_estimated_tokens %d window %d", recs[0], est, w)
		}
	}
}
