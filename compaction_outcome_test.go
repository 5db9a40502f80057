package pablo

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/internal/compaction"
	"github.com/pabloagent/pablo/ledger/outcome"
	"github.com/pabloagent/pablo/model"
)

// summarizingModel reads big.md on every normal turn; a request with no
// tools (a compaction's summary) runs onSummary, whose answer it returns.
type summarizingModel struct {
	bound     uint64
	onSummary func(ctx context.Context) (*model.Response, error)
	mu        sync.Mutex
	reads     int
}

func (m *summarizingModel) Info() model.Info {
	return model.Info{Provider: "test", Model: "reader", TokenBound: m.bound}
}

func (m *summarizingModel) Generate(ctx context.Context, req *model.Request, _ func(string) error) (*model.Response, error) {
	if len(req.Tools) == 0 {
		return m.onSummary(ctx)
	}
	m.mu.Lock()
	m.reads++
	n := m.reads
	m.mu.Unlock()
	return &model.Response{FinishReason: model.FinishToolCalls,
		ToolCalls: []model.ToolCall{{ID: "call_" + strconv.Itoa(n), Name: "fs_read", Arguments: json.RawMessage(`{"path":"big.md"}`)}}}, nil
}

// runSummarizing runs one task of m on a deployment whose context ceiling
// a few reads of big.md fill, with extra TOML appended, under ctx.
func runSummarizing(t *testing.T, ctx context.Context, m *summarizingModel, extra string) (*TaskObject, []event.Event) {
	t.Helper()
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	os.WriteFile(filepath.Join(ws, "big.md"), []byte(strings.Repeat("INV-1042 paid on 2024-03-01; ", 35)), 0o600)
	d := scriptDeployment(t, dir, ws, `{"turns":[{"text":["unused"]}]}`,
		"[options.shell]\nenabled = false\n"+contextTable(0)+overCeiling(t)+extra)
	rt, err := d.NewRuntime(context.Background(), HostOptions{Model: m})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	task, err := rt.Start(ctx, "Read big.md until told to stop.")
	if err != nil {
		t.Fatal(err)
	}
	var events []event.Event
	for ev, err := range task.Events() {
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, ev)
	}
	return task.Wait(), events
}

// TestSummaryPastTheDeadline: a task whose deadline passes while its
// summary call runs ends timed_out (REFERENCE: a task deadline is
// timed_out), and its compaction is recorded timed_out with the reason
// timed_out, the history kept (no after sizes, no turn removed). The
// loop's deadline is a context deadline on the wall clock (an injected
// clock moves the ledger's checks, not the context), so the summary call
// waits for it; nothing sleeps.
func TestSummaryPastTheDeadline(t *testing.T) {
	t.Parallel()
	m := &summarizingModel{onSummary: func(c context.Context) (*model.Response, error) {
		<-c.Done()
		return nil, c.Err()
	}}
	obj, events := runSummarizing(t, context.Background(), m, "max_run_duration_ms = 1000\n")
	if obj.Outcome.Status != event.StatusTimedOut {
		t.Fatalf("outcome %s", outcomeJSON(obj.Outcome))
	}
	recs := compactionRecords(events)
	if len(recs) != 1 || recs[0].Status != "timed_out" || recs[0].Reason == nil || *recs[0].Reason != string(compaction.ReasonTimedOut) ||
		recs[0].AfterBytes != nil || recs[0].RemovedTurns != "0" {
		b, _ := json.Marshal(recs)
		t.Fatalf("records %s", b)
	}
}

// TestSummaryOverItsBound: a summary call whose reported usage exceeds
// the per-call token bound its model attests, under a hard token ceiling,
// ends the task failed accounting_bound_violated, and its compaction is
// recorded failed with the reason failed.
func TestSummaryOverItsBound(t *testing.T) {
	t.Parallel()
	in, over := uint64(100), uint64(5000)
	m := &summarizingModel{bound: 1000, onSummary: func(context.Context) (*model.Response, error) {
		return &model.Response{Text: "Read big.md; every read returned the same page.", FinishReason: model.FinishStop,
			Usage: model.Usage{InputTokens: &in, OutputTokens: &over}, UsageReported: true}, nil
	}}
	obj, events := runSummarizing(t, context.Background(), m, "max_total_tokens = \"1000000\"\n")
	if obj.Outcome.Status != event.StatusFailed || obj.Outcome.Code != outcome.FailAccountingBoundViolated {
		t.Fatalf("outcome %s", outcomeJSON(obj.Outcome))
	}
	recs := compactionRecords(events)
	if len(recs) != 1 || recs[0].Status != "failed" || recs[0].Reason == nil || *recs[0].Reason != string(compaction.ReasonFailed) ||
		recs[0].AfterBytes != nil || recs[0].RemovedTurns != "0" {
		b, _ := json.Marshal(recs)
		t.Fatalf("records %s", b)
	}
}
