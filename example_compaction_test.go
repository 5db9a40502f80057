package pablo_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/model"
)

// rereader reads the note twenty times, then answers; asked for a summary (a
// request that offers no tools) it summarizes.
type rereader struct{ calls atomic.Int64 }

func (*rereader) Info() model.Info { return model.Info{Provider: "host", Model: "rereader"} }

func (m *rereader) Generate(_ context.Context, req *model.Request, emit func(string) error) (*model.Response, error) {
	if len(req.Tools) == 0 {
		return &model.Response{Text: "The note says renewal is due 2027-01-01.", FinishReason: model.FinishStop}, nil
	}
	n := m.calls.Add(1)
	if n > 20 {
		return &model.Response{Text: "Due 2027-01-01.", FinishReason: model.FinishStop}, emit("Due 2027-01-01.")
	}
	return &model.Response{FinishReason: model.FinishToolCalls, ToolCalls: []model.ToolCall{{ID: "call_" + strconv.FormatInt(n, 10),
		Name: "notes_read", Arguments: json.RawMessage(`{"note_id":"N-1"}`)}}}, nil
}

// A task whose history outgrows its 3,000-byte context ceiling compacts
// before each request that would pass it, and completes: the summary
// replaces the older turns, the task and the last turn stay verbatim.
func ExampleCompactionOptions() {
	set, _ := authority.New(authority.Config{
		Host: []authority.ID{"notes.read"},
		Layers: []authority.Layer{{ID: "case", Kind: authority.KindAuthority, Dimensions: map[authority.Dimension]*authority.Rules{
			"note": {Default: authority.Deny, Allow: []authority.Rule{{ID: "case.n1", Value: "N-1"}}},
		}}},
	})
	rt, err := pablo.NewRuntime(pablo.RuntimeOptions{
		Model:        &rereader{},
		Authority:    set,
		Catalogs:     []pablo.ToolCatalog{notes{}},
		Instructions: "Answer from the note.",
		Limits:       ledger.Limits{ContextBytes: ledger.Max(3000)},
		Compaction:   &pablo.CompactionOptions{KeepRecentTurns: 1},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	task, _ := rt.Start(context.Background(), "When is the renewal due?")
	for ev := range task.Events() {
		if ev.Type == event.CompactionFinished {
			fmt.Println(ev.Type, ev.Compaction.Trigger, ev.Compaction.Status, "summary:", string(ev.Summary))
		}
	}
	fmt.Println(task.Wait().Outcome.Status)

	_, err = pablo.NewRuntime(pablo.RuntimeOptions{Model: &rereader{}, Authority: set, Compaction: &pablo.CompactionOptions{KeepRecentTurns: 33}})
	fmt.Println(errors.Is(err, pablo.ErrCompactionOptions), err)
	// Output:
	// context.compaction.finished threshold completed summary: null
	// context.compaction.finished threshold completed summary: null
	// completed
	// true pablo: invalid compaction options: KeepRecentTurns must be 0..32, got 33
}
