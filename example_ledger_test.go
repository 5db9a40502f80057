package pablo_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger"
)

// mirror is a host's wrapper of a task's ledger: every call goes to the
// Root it wraps, and what the Root accepted is mirrored elsewhere (here, a
// list of lines; a host would write to its own store or a metrics system).
// It embeds the ledger.Ledger it wraps, so every method it does not
// override reaches the Root: the interface is all the runtime calls
// (StartAgent for children, Flush for the barrier before an approval
// waits), and the wrapper changes nothing else.
type mirror struct {
	ledger.Ledger
	mu    *sync.Mutex
	lines *[]string
}

func (m mirror) note(format string, args ...any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	*m.lines = append(*m.lines, fmt.Sprintf(format, args...))
}

func (m mirror) Append(ctx context.Context, agentID, typ string, payload json.RawMessage) (ledger.Event, error) {
	ev, err := m.Ledger.Append(ctx, agentID, typ, payload)
	if err == nil && typ != string(event.TextDelta) {
		m.note("event %d %s", ev.RootSeq, typ)
	}
	return ev, err
}

func (m mirror) AdmitToolCall(ctx context.Context, agentID string, req ledger.ToolCall) error {
	err := m.Ledger.AdmitToolCall(ctx, agentID, req)
	if err == nil {
		m.note("admit %s (allowed %v by %s)", req.Name, req.Decision.Allowed, req.Decision.RuleID)
	}
	return err
}

func (m mirror) SettleToolCall(ctx context.Context, agentID, callID string, s ledger.ToolSettlement) error {
	err := m.Ledger.SettleToolCall(ctx, agentID, callID, s)
	m.note("settle tool %s: %s", callID, s.Status)
	return err
}

func (m mirror) Finish(ctx context.Context, agentID string, f ledger.Finish) (ledger.Event, error) {
	ev, err := m.Ledger.Finish(ctx, agentID, f)
	if err == nil {
		m.note("event %d %s: %s", ev.RootSeq, ev.Type, f.Outcome.Status)
	}
	return ev, err
}

// A host gives each task a ledger of its own making: here the default Root,
// wrapped so the host sees every event and tool call the task records.
func ExampleRuntimeOptions_newLedger() {
	set, _ := authority.New(authority.Config{
		Host: []authority.ID{"notes.read"},
		Layers: []authority.Layer{{ID: "case", Kind: authority.KindAuthority, Dimensions: map[authority.Dimension]*authority.Rules{
			"note": {Default: authority.Deny, Allow: []authority.Rule{{ID: "case.n1", Value: "N-1"}}},
		}}},
	})
	script, _ := pablo.ParseScript([]byte(`{"turns":[
		{"tool_calls":[{"id":"c1","name":"notes_read","arguments":{"note_id":"N-1"}}]},
		{"text":["Due 2027-01-01."]}]}`))
	var (
		mu    sync.Mutex
		lines []string
	)
	rt, _ := pablo.NewRuntime(pablo.RuntimeOptions{
		Model:     pablo.NewScriptModel(script),
		Authority: set,
		Catalogs:  []pablo.ToolCatalog{notes{}},
		NewLedger: func(ctx context.Context, opts ledger.Options) (ledger.Ledger, error) {
			root, err := ledger.NewRoot(ctx, opts)
			if err != nil {
				return nil, err
			}
			return mirror{Ledger: root, mu: &mu, lines: &lines}, nil
		},
	})
	obj, _ := rt.Run(context.Background(), "When is the renewal due?")
	for _, l := range lines {
		fmt.Println(l)
	}
	fmt.Println(obj.Outcome.Status)
	// Output:
	// event 1 run.started
	// event 2 model.started
	// event 3 model.finished
	// admit notes.read (allowed true by case.n1)
	// event 4 tool.started
	// settle tool call_1_1: completed
	// event 5 tool.finished
	// event 6 model.started
	// event 8 model.finished
	// event 9 run.finished: completed
	// completed
}
