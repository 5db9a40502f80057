package pablo

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/internal/compaction"
	"github.com/pabloagent/pablo/internal/providers"
	"github.com/pabloagent/pablo/ledger/outcome"
)

// overCeiling is an options.limits table whose ceiling a task of 1,000-byte
// reads passes at its fourth turn and whose threshold it passes at its
// third: the third request is due but fits, the fourth does not fit.
func overCeiling(t *testing.T) string {
	t.Helper()
	return "[options.limits]\nmax_context_bytes = 12000\n"
}

// TestSummaryFailuresKeepTheHistory: a summary that is not smaller, one
// that tries a tool, an empty one and one the provider refuses each leave
// the history whole; the task goes on while its request still fits and
// ends compaction_failed once it does not.
func TestSummaryFailuresKeepTheHistory(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode   string
		reason compaction.Reason
	}{
		{"long", compaction.ReasonNotSmaller},
		{"tool", compaction.ReasonToolCallDuringSummary},
		{"empty", compaction.ReasonEmptySummary},
		{"500", compaction.ReasonSummaryUnavailable},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			g := newCompactGateway(t, 100)
			g.summary = tc.mode
			d := compactDeployment(t, g, contextTable(0)+overCeiling(t), 1000)
			obj, events := runCompact(t, d, HostOptions{})
			if obj.Outcome.Status != event.StatusFailed || obj.Outcome.Code != outcome.FailCompactionFailed {
				t.Fatalf("outcome %s", outcomeJSON(obj.Outcome))
			}
			recs := compactionRecords(events)
			if len(recs) < 2 {
				t.Fatalf("%d compaction(s): the task should go on after the first failure while its request fits", len(recs))
			}
			for _, r := range recs {
				if r.Status != "failed" || r.Reason == nil || *r.Reason != string(tc.reason) || r.AfterBytes != nil || r.RemovedTurns != "0" {
					b, _ := json.Marshal(r)
					t.Fatalf("record %s, want failed %s", b, tc.reason)
				}
			}
			normal, sums := g.counts()
			for i := 1; i < len(normal); i++ {
				if normal[i] <= normal[i-1] {
					t.Fatalf("request %d is %d bytes after %d: the history shrank without a summary", i+1, normal[i], normal[i-1])
				}
			}
			if len(sums) != len(recs) {
				t.Fatalf("%d summary requests for %d compactions", len(sums), len(recs))
			}
			if tc.mode == "tool" && obj.Accounting.ToolCalls.N != uint64(len(normal)) {
				t.Fatalf("%d tool calls for %d turns: the summary's tool call ran", obj.Accounting.ToolCalls.N, len(normal))
			}
		})
	}
}

// TestCancelledSummary: a task cancelled while its summary call waits ends
// cancelled, with the compaction recorded cancelled.
func TestCancelledSummary(t *testing.T) {
	t.Parallel()
	g := newCompactGateway(t, 100)
	g.summary = "block"
	d := compactDeployment(t, g, contextTable(0)+overCeiling(t), 1000)
	rt, err := d.NewRuntime(t.Context(), HostOptions{LookupEnv: lookupKey})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	task, err := rt.Start(t.Context(), "Read big.md until told to stop.")
	if err != nil {
		t.Fatal(err)
	}
	g.mu.Lock()
	g.onSummary = task.Cancel
	g.mu.Unlock()
	var events []event.Event
	for ev, err := range task.Events() {
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, ev)
	}
	obj := task.Wait()
	if obj.Outcome.Status != event.StatusCancelled {
		t.Fatalf("outcome %s", outcomeJSON(obj.Outcome))
	}
	recs := compactionRecords(events)
	if len(recs) != 1 || recs[0].Status != "cancelled" || *recs[0].Reason != "cancelled" {
		t.Fatalf("records %+v", recs)
	}
}

// TestOverflowRecovery: an explicit overflow answer, HTTP 400
// context_length_exceeded or HTTP 413 context_window_exceeded, gets one
// summary and one retry on the same entry, and the task completes.
func TestOverflowRecovery(t *testing.T) {
	t.Parallel()
	for _, status413 := range []bool{false, true} {
		t.Run(fmt.Sprint("413=", status413), func(t *testing.T) {
			t.Parallel()
			g := newCompactGateway(t, 6)
			g.status413 = status413
			g.windowBytes = 9000
			d := compactDeployment(t, g, contextTable(1), 1000)
			obj, events := runCompact(t, d, HostOptions{})
			if obj.Outcome.Status != event.StatusCompleted {
				t.Fatalf("outcome %s", outcomeJSON(obj.Outcome))
			}
			recs := compactionRecords(events)
			if len(recs) == 0 || recs[0].Trigger != "overflow" || recs[0].Status != "completed" {
				t.Fatalf("records %+v", recs)
			}
			normal, _ := g.counts()
			over := 0
			for _, n := range normal {
				if n > g.windowBytes {
					over++
				}
			}
			if over != len(recs) {
				t.Fatalf("%d overflowed requests, %d compactions", over, len(recs))
			}
		})
	}
}

// TestOverflowThatCannotBeRecovered: an overflow whose retry after a
// completed summary overflows again ends the task context_overflow; one
// with nothing to summarize ends it compaction_failed; one with compaction
// off ends it context_overflow at once.
func TestOverflowThatCannotBeRecovered(t *testing.T) {
	t.Parallel()
	g := newCompactGateway(t, 6)
	g.overflowFrom = 3
	d := compactDeployment(t, g, contextTable(0), 1000)
	obj, events := runCompact(t, d, HostOptions{})
	if obj.Outcome.Status != event.StatusFailed || obj.Outcome.Code != outcome.FailContextOverflow || obj.Outcome.Delivery != outcome.ResponseReceived {
		t.Fatalf("outcome %s", outcomeJSON(obj.Outcome))
	}
	if recs := compactionRecords(events); len(recs) != 1 || recs[0].Status != "completed" || recs[0].Trigger != "overflow" {
		t.Fatalf("records %+v", recs)
	}
	if n, _ := g.counts(); len(n) != 4 {
		t.Fatalf("%d normal requests: want 4, two answered, the overflow and its one retry", len(n))
	}
	g1 := newCompactGateway(t, 6)
	g1.windowBytes = 100 // the first request overflows
	d1 := compactDeployment(t, g1, contextTable(0), 1000)
	obj, events = runCompact(t, d1, HostOptions{})
	if obj.Outcome.Status != event.StatusFailed || obj.Outcome.Code != outcome.FailCompactionFailed {
		t.Fatalf("outcome %s", outcomeJSON(obj.Outcome))
	}
	if recs := compactionRecords(events); len(recs) != 1 || *recs[0].Reason != string(compaction.ReasonNoHistory) {
		t.Fatalf("records %+v", recs)
	}
	g2 := newCompactGateway(t, 6)
	g2.windowBytes = 100
	d2 := compactDeployment(t, g2, "[options.context]\nenabled = false\n", 1000)
	obj, events = runCompact(t, d2, HostOptions{})
	if obj.Outcome.Status != event.StatusFailed || obj.Outcome.Code != outcome.FailContextOverflow {
		t.Fatalf("outcome %s", outcomeJSON(obj.Outcome))
	}
	if n, _ := g2.counts(); len(n) != 1 || len(compactionRecords(events)) != 0 {
		t.Fatalf("%d requests and %d compactions with compaction off", len(n), len(compactionRecords(events)))
	}
}

// TestOverflowBodyBound: only a body of at most 8 KiB is inspected; the
// code past the bound in a body of 8 KiB + 1 is a plain rejection.
func TestOverflowBodyBound(t *testing.T) {
	t.Parallel()
	body := func(n int) string {
		head, tail := `{"error":{"message":"`, `","type":"invalid_request_error","code":"context_length_exceeded"}}`
		return head + strings.Repeat("x", n-len(head)-len(tail)) + tail
	}
	for _, tc := range []struct {
		n    int
		code outcome.FailureCode
	}{{providers.MaxOverflowBodyBytes, ""}, {providers.MaxOverflowBodyBytes + 1, outcome.FailProviderRejected}} {
		g := newCompactGateway(t, 6)
		g.windowBytes = 9000
		g.overflowBody = body(tc.n)
		d := compactDeployment(t, g, contextTable(1), 1000)
		obj, _ := runCompact(t, d, HostOptions{})
		switch {
		case tc.code == "" && obj.Outcome.Status != event.StatusCompleted:
			t.Fatalf("a %d-byte overflow body: outcome %s", tc.n, outcomeJSON(obj.Outcome))
		case tc.code != "" && obj.Outcome.Code != tc.code:
			t.Fatalf("a %d-byte overflow body: outcome %s", tc.n, outcomeJSON(obj.Outcome))
		}
	}
}

// TestSummaryEventSinkFailure: a sink that refuses the compaction's start
// ends the task event_sink_io, and the record says event_delivery_failed.
func TestSummaryEventSinkFailure(t *testing.T) {
	t.Parallel()
	g := newCompactGateway(t, 100)
	d := compactDeployment(t, g, contextTable(0)+overCeiling(t), 1000)
	sink := func(ev event.Event) error {
		if ev.Type == event.CompactionStarted {
			return errors.New("the host's sink is full")
		}
		return nil
	}
	obj, events := runCompact(t, d, HostOptions{Sink: sink})
	if obj.Outcome.Status != event.StatusFailed || obj.Outcome.Code != outcome.FailEventSinkIO {
		t.Fatalf("outcome %s", outcomeJSON(obj.Outcome))
	}
	recs := compactionRecords(events)
	if len(recs) != 1 || *recs[0].Reason != string(compaction.ReasonEventDeliveryFailed) {
		t.Fatalf("records %+v", recs)
	}
	if _, sums := g.counts(); len(sums) != 0 {
		t.Fatalf("%d summary requests after the sink failed", len(sums))
	}
}

// TestSummaryBoundsAndBudgets: a summary bound clamped below its minimum
// is summary_bounds_unsupported, a summary the model-call ceiling leaves
// no room for is limit_exceeded, and nothing is summarized with
// keep_recent_turns keeping every turn (no_history).
func TestSummaryBoundsAndBudgets(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, extra string
		reason      compaction.Reason
		status      outcome.Status
	}{
		{"bounds", contextTable(0) + "[options.limits]\nmax_context_bytes = 12000\nmax_output_tokens = 8\n", compaction.ReasonBoundsUnsupported, event.StatusFailed},
		{"budget", contextTable(0) + "[options.limits]\nmax_model_calls = 3\n", compaction.ReasonLimitExceeded, event.StatusLimitExceeded},
		{"no_history", contextTable(32) + overCeiling(t), compaction.ReasonNoHistory, event.StatusFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := newCompactGateway(t, 100)
			if tc.name == "budget" {
				// The third call overflows: its summary is a fourth.
				g.overflowFrom = 3
			}
			d := compactDeployment(t, g, tc.extra, 1000)
			obj, events := runCompact(t, d, HostOptions{})
			recs := compactionRecords(events)
			if obj.Outcome.Status != tc.status || len(recs) == 0 || *recs[len(recs)-1].Reason != string(tc.reason) {
				b, _ := json.Marshal(recs)
				t.Fatalf("outcome %s, records %s", outcomeJSON(obj.Outcome), b)
			}
			if tc.status == event.StatusLimitExceeded && obj.Outcome.Limit != outcome.LimitModelCalls {
				t.Fatalf("outcome %s", outcomeJSON(obj.Outcome))
			}
		})
	}
}

// TestSummaryOnTheSelectedEntryNeverFallsBack: on a route, the summary
// runs on the entry the task runs on; a 503 there, which a normal
// operation would fall back from, ends the summary on that entry.
func TestSummaryOnTheSelectedEntryNeverFallsBack(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"ok", "503"} {
		g := newCompactGateway(t, 100)
		g.summary = mode
		body := "[options.models.first]\nprovider = \"vercel\"\nid = \"first-id\"\ncredential = \"gw\"\n" +
			"[options.models.second]\nprovider = \"openrouter\"\nid = \"second-id\"\ncredential = \"or\"\n" +
			"[options.routes.main]\nentries = [{ model = \"first\" }, { model = \"second\" }]\n" +
			"[options]\nmodel_route = \"main\"\n" +
			"[credentials.gw]\nconsumer = \"provider.vercel\"\nsources = [{ kind = \"environment\", name = \"GW\" }]\n" +
			"[credentials.or]\nconsumer = \"provider.openrouter\"\nsources = [{ kind = \"environment\", name = \"OR\" }]\n" +
			contextTable(0) + "[options.limits]\nmax_context_bytes = 12000\n" +
			// The default 3 attempts, without waiting between them.
			"[options.model.retry]\ninitial_backoff_ms = 0\nmax_backoff_ms = 0\n"
		d := providerDeployment(t, body, nil)
		ws, _ := d.Workspace()
		os.WriteFile(filepath.Join(ws, "big.md"), []byte(strings.Repeat("x", 1000)), 0o600)
		obj, events := runCompact(t, d, HostOptions{FixtureEndpoint: g.srv.URL + "/v1/chat/completions"})
		recs := compactionRecords(events)
		g.mu.Lock()
		models := append([]string(nil), g.summaryModels...)
		g.mu.Unlock()
		// A summary runs on the selected entry alone
		// (providers.AttemptHooks.NoFallback): a 503 there is retried on
		// that entry (the default 3 attempts of options.model.retry), never
		// by falling back, and then ends the summary.
		want := len(recs)
		if mode == "503" {
			want = 3 * len(recs)
		}
		if len(recs) == 0 || len(models) != want {
			t.Fatalf("%s: %d compactions, summary requests to %v (want %d)", mode, len(recs), models, want)
		}
		for _, m := range models {
			if m != "first-id" {
				t.Fatalf("%s: a summary went to %s, not the selected entry: %v", mode, m, models)
			}
		}
		for _, ev := range events {
			if ev.ModelRoute != nil && ev.ModelRoute.SelectionReason == "fallback" {
				t.Fatalf("%s: an attempt fell back: %+v", mode, ev.ModelRoute)
			}
		}
		switch mode {
		case "ok":
			if recs[0].Status != "completed" {
				t.Fatalf("record %+v", recs[0])
			}
		case "503":
			if obj.Outcome.Code != outcome.FailCompactionFailed || *recs[0].Reason != string(compaction.ReasonSummaryUnavailable) {
				t.Fatalf("outcome %s, record %+v", outcomeJSON(obj.Outcome), recs[0])
			}
		}
	}
}
