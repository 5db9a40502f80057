package pablo_test

import (
	"context"
	"testing"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger"
)

// TestSummaryInputTooLarge: under a ceiling so small that even the summary
// request of one turn would be due, the compaction is
// summary_input_too_large and the task ends compaction_failed once its
// request no longer fits.
func TestSummaryInputTooLarge(t *testing.T) {
	t.Parallel()
	set, _ := authority.New(authority.Config{
		Host: []authority.ID{"notes.read"},
		Layers: []authority.Layer{{ID: "case", Kind: authority.KindAuthority, Dimensions: map[authority.Dimension]*authority.Rules{
			"note": {Default: authority.Deny, Allow: []authority.Rule{{ID: "case.n1", Value: "N-1"}}},
		}}},
	})
	ceiling := uint64(600)
	rt, err := pablo.NewRuntime(pablo.RuntimeOptions{Model: &rereader{}, Authority: set, Catalogs: []pablo.ToolCatalog{notes{}},
		Instructions: "Answer from the note.", Limits: ledger.Limits{ContextBytes: ledger.Max(ceiling)}, Compaction: &pablo.CompactionOptions{KeepRecentTurns: 1}})
	if err != nil {
		t.Fatal(err)
	}
	task, _ := rt.Start(context.Background(), "When is the renewal due?")
	var reasons []string
	for ev := range task.Events() {
		if ev.Type == event.CompactionFinished {
			r := ev.Compaction.Status
			if ev.Compaction.Reason != nil {
				r = *ev.Compaction.Reason
			}
			reasons = append(reasons, r)
		}
	}
	o := task.Wait().Outcome
	if o.Status != event.StatusFailed || o.Code != "compaction_failed" || len(reasons) == 0 {
		t.Fatalf("outcome %+v, reasons %v", o, reasons)
	}
	for _, r := range reasons {
		if r != "summary_input_too_large" {
			t.Fatalf("reasons %v", reasons)
		}
	}
}
