package pablo_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/children"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/model"
)

const (
	compactingChild = "Read note N-1 twenty times."
	siblingChild    = "Wait for your sibling, then answer."
)

// siblingModel: the root spawns a reader that outgrows its own context
// ceiling and a sibling whose one model call waits until the reader's
// summary request has arrived, so the reader compacts while its sibling
// runs; the root then waits for both and answers.
type siblingModel struct {
	reads     atomic.Int64
	summaries atomic.Int64
	once      sync.Once
	compacted chan struct{} // closed at the reader's first summary request (or its end)
}

func (*siblingModel) Info() model.Info {
	return model.Info{Provider: "test", Model: "siblings"}
}

func (m *siblingModel) Generate(ctx context.Context, req *model.Request, emit func(string) error) (*model.Response, error) {
	if len(req.Tools) == 0 { // a summary request
		m.summaries.Add(1)
		m.once.Do(func() { close(m.compacted) })
		return &model.Response{Text: "N-1 says renewal is due 2027-01-01.", FinishReason: model.FinishStop}, nil
	}
	switch req.Messages[0].Content {
	case compactingChild:
		n := m.reads.Add(1)
		if n > 20 {
			m.once.Do(func() { close(m.compacted) })
			return &model.Response{Text: "due 2027-01-01", FinishReason: model.FinishStop}, nil
		}
		return &model.Response{FinishReason: model.FinishToolCalls, ToolCalls: []model.ToolCall{{ID: fmt.Sprint("r", n), Name: "notes_read",
			Arguments: json.RawMessage(`{"note_id":"N-1"}`)}}}, nil
	case siblingChild:
		select {
		case <-m.compacted:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &model.Response{Text: "sibling done", FinishReason: model.FinishStop}, nil
	}
	var results []string
	for _, msg := range req.Messages {
		if msg.Role == model.RoleTool {
			results = append(results, msg.Content)
		}
	}
	call := func(id, args string) model.ToolCall {
		return model.ToolCall{ID: id, Name: "subagent", Arguments: json.RawMessage(args)}
	}
	switch len(results) {
	case 0:
		return &model.Response{FinishReason: model.FinishToolCalls, ToolCalls: []model.ToolCall{
			call("s1", `{"action":"spawn","request":{"input":"`+compactingChild+`","capabilities":{"tools":["notes.read"]},"ceilings":{"max_context_bytes":4000}}}`),
			call("s2", `{"action":"spawn","request":{"input":"`+siblingChild+`","capabilities":{"tools":["notes.read"]}}}`),
		}}, nil
	case 2:
		var ids []string
		for _, r := range results {
			var v struct {
				Subagent struct {
					Agent struct {
						AgentID string `json:"agent_id"`
					} `json:"agent"`
				} `json:"subagent"`
			}
			json.Unmarshal([]byte(r), &v)
			ids = append(ids, `"`+v.Subagent.Agent.AgentID+`"`)
		}
		return &model.Response{FinishReason: model.FinishToolCalls, ToolCalls: []model.ToolCall{
			call("w1", `{"action":"wait","agent_ids":[`+strings.Join(ids, ",")+`],"mode":"all","timeout_ms":60000}`)}}, nil
	}
	return &model.Response{Text: "both done", FinishReason: model.FinishStop}, emit("both done")
}

// TestChildCompactsWhileItsSiblingRuns: a child compacts inside its own
// context ceiling (4,000 bytes, within the root's 1 MiB) while its sibling
// is running; both complete, the compaction events are the child's, and
// the root, far below its own ceiling, never compacts.
func TestChildCompactsWhileItsSiblingRuns(t *testing.T) {
	t.Parallel()
	set, err := authority.New(authority.Config{Native: []authority.ID{authority.Subagent}, Host: []authority.ID{"notes.read"},
		Layers: []authority.Layer{{ID: "case", Kind: authority.KindAuthority, Dimensions: map[authority.Dimension]*authority.Rules{
			"note": {Default: authority.Deny, Allow: []authority.Rule{{ID: "case.n1", Value: "N-1"}}},
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	m := &siblingModel{compacted: make(chan struct{})}
	rt, err := pablo.NewRuntime(pablo.RuntimeOptions{Model: m, Authority: set, Catalogs: []pablo.ToolCatalog{notes{}}, Children: &children.Capacity{},
		Limits: ledger.Limits{ContextBytes: ledger.Max(1 << 20)}, Compaction: &pablo.CompactionOptions{KeepRecentTurns: 1}})
	if err != nil {
		t.Fatal(err)
	}
	task, err := rt.Start(context.Background(), "Run the two children.")
	if err != nil {
		t.Fatal(err)
	}
	finished := map[string]event.Event{}
	var compactions []event.Event
	for ev := range task.Events() {
		switch ev.Type {
		case event.CompactionFinished:
			compactions = append(compactions, ev)
		case event.RunFinished:
			finished[ev.Agent.AgentID] = ev
		}
	}
	obj := task.Wait()
	if obj.Outcome.Status != event.StatusCompleted || len(finished) != 3 {
		t.Fatalf("outcome %+v, %d agents finished", obj.Outcome, len(finished))
	}
	for id, ev := range finished {
		if ev.Outcome.Status != event.StatusCompleted {
			t.Fatalf("agent %s (depth %d) ended %+v", id, ev.Agent.Depth, ev.Outcome)
		}
	}
	if len(compactions) == 0 || m.summaries.Load() != int64(len(compactions)) {
		t.Fatalf("%d compactions, %d summary requests", len(compactions), m.summaries.Load())
	}
	for _, ev := range compactions {
		if ev.Agent.Depth != 1 || ev.Compaction.Status != "completed" {
			t.Fatalf("compaction of agent %+v: %+v", ev.Agent, ev.Compaction)
		}
		var before uint64
		fmt.Sscan(ev.Compaction.BeforeBytes, &before)
		if before > 4000 {
			t.Fatalf("the child's request reached %d bytes, over its own 4,000-byte ceiling", before)
		}
	}
}
