package pablo_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger"
)

// events is a host's ledger that keeps a copy of every event it appends.
type events struct {
	ledger.Ledger
	mu   sync.Mutex
	seen []ledger.Event
}

func (e *events) Append(ctx context.Context, agentID, typ string, payload json.RawMessage) (ledger.Event, error) {
	ev, err := e.Ledger.Append(ctx, agentID, typ, payload)
	if err == nil {
		e.mu.Lock()
		e.seen = append(e.seen, ev)
		e.mu.Unlock()
	}
	return ev, err
}

func (e *events) Finish(ctx context.Context, agentID string, f ledger.Finish) (ledger.Event, error) {
	ev, err := e.Ledger.Finish(ctx, agentID, f)
	if err == nil {
		e.mu.Lock()
		e.seen = append(e.seen, ev)
		e.mu.Unlock()
	}
	return ev, err
}

// TestHostLedgerSeesEveryEvent: a ledger the host supplies through
// RuntimeOptions.NewLedger is the task's ledger: every event the task's
// readers see went through it, in root_seq order, with its payload (a host
// ledger is given payloads to record even without a store), and the task's
// Ledger and the catalogs' TaskInfo.Ledger are that ledger.
func TestHostLedgerSeesEveryEvent(t *testing.T) {
	t.Parallel()
	script, err := pablo.ParseScript([]byte(`{"turns":[
		{"text":["Reading."],"tool_calls":[{"id":"c1","name":"notes_read","arguments":{"note_id":"N-1"}}]},
		{"text":["Due ","2027-01-01."]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	set, _ := authority.New(authority.Config{
		Host: []authority.ID{"notes.read"},
		Layers: []authority.Layer{{ID: "case", Kind: authority.KindAuthority, Dimensions: map[authority.Dimension]*authority.Rules{
			"note": {Default: authority.Deny, Allow: []authority.Rule{{ID: "case.n1", Value: "N-1"}}},
		}}},
	})
	var host *events
	var info pablo.TaskInfo
	rt, err := pablo.NewRuntime(pablo.RuntimeOptions{
		Model: pablo.NewScriptModel(script), Authority: set, Catalogs: []pablo.ToolCatalog{notes{}},
		NewLedger: func(ctx context.Context, opts ledger.Options) (ledger.Ledger, error) {
			root, err := ledger.NewRoot(ctx, opts)
			if err != nil {
				return nil, err
			}
			host = &events{Ledger: root}
			return host, nil
		},
		OnStart: func(ti pablo.TaskInfo) { info = ti },
	})
	if err != nil {
		t.Fatal(err)
	}
	task, err := rt.Start(context.Background(), "When is the renewal due?")
	if err != nil {
		t.Fatal(err)
	}
	var read []event.Event
	for ev := range task.Events() {
		read = append(read, ev)
	}
	if obj := task.Wait(); obj.Outcome.Status != event.StatusCompleted {
		t.Fatalf("outcome %+v", obj.Outcome)
	}
	if task.Ledger() != ledger.Ledger(host) || info.Ledger != ledger.Recorder(host) {
		t.Fatal("the task's ledger is not the host's")
	}
	if len(host.seen) != len(read) || len(read) < 8 {
		t.Fatalf("the host's ledger saw %d events, the task's readers %d", len(host.seen), len(read))
	}
	for i, ev := range host.seen {
		if ev.RootSeq != uint64(i+1) || ev.RootSeq != read[i].RootSeq || ev.Type != string(read[i].Type) || ev.RootID != task.ID() {
			t.Fatalf("event %d: host saw %d %s, readers %d %s", i, ev.RootSeq, ev.Type, read[i].RootSeq, read[i].Type)
		}
		if len(ev.Payload) == 0 || !json.Valid(ev.Payload) {
			t.Fatalf("event %d %s reached the host's ledger without a payload: %q", ev.RootSeq, ev.Type, ev.Payload)
		}
	}
}
