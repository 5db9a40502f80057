package acp_test

import (
	"encoding/json"
	"testing"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/acp"
	"github.com/pabloagent/pablo/ledger"
)

// With a store, a session outlives its connection and its handler: a new
// one lists it, loads it (its prompt and updates replayed, then the
// answer), and continues the conversation.
func TestASessionIsListedAndLoadedFromTheStore(t *testing.T) {
	t.Parallel()
	store := ledger.NewMemoryStore()
	script := `{"turns":[{"text":["first answer"]},{"text":["second answer"]}]}`
	withStore := func(o *pablo.RuntimeOptions) { o.Store = store }
	fx := newFixture(t, fixtureOptions{script: script, runtime: withStore, sessions: pablo.SessionOptions{Store: store}})
	p := serve(t, fx.sessions, acp.Options{Clock: newFakeClock(), Durable: true})
	init := p.initialize()
	var caps struct {
		AgentCapabilities struct {
			LoadSession bool                       `json:"loadSession"`
			Session     map[string]json.RawMessage `json:"sessionCapabilities"`
		} `json:"agentCapabilities"`
	}
	jsonUnmarshal(t, init.Result, &caps)
	if !caps.AgentCapabilities.LoadSession || caps.AgentCapabilities.Session["list"] == nil || caps.AgentCapabilities.Session["resume"] == nil {
		t.Fatalf("durable capabilities: %s", init.raw)
	}
	sid := p.newSession(2, fx.ws)
	p.request(3, "session/prompt", textPrompt(sid, "first question"))
	if _, answer := p.until(3); stopReasonOf(t, answer) != "end_turn" {
		t.Fatalf("answer %s", answer.raw)
	}
	if err := p.end(); err != nil {
		t.Fatal(err)
	}

	// A new handler on the same store: the process restarted.
	again, err := pablo.NewSessions(pablo.SessionOptions{Store: store, Runtime: fx.runtime})
	if err != nil {
		t.Fatal(err)
	}
	q := serve(t, again, acp.Options{Clock: newFakeClock(), Durable: true})
	q.initialize()
	list := q.call(2, "session/list", map[string]any{"cwd": fx.ws})
	var l struct {
		Sessions []struct {
			SessionID string `json:"sessionId"`
			Cwd       string `json:"cwd"`
			Title     string `json:"title"`
		} `json:"sessions"`
	}
	jsonUnmarshal(t, list.Result, &l)
	if len(l.Sessions) != 1 || l.Sessions[0].SessionID != sid || l.Sessions[0].Title == "" {
		t.Fatalf("list %s", list.raw)
	}
	q.request(3, "session/load", map[string]any{"sessionId": sid, "cwd": fx.ws, "mcpServers": []any{}})
	replayed, loaded := q.until(3)
	if loaded.Error != nil {
		t.Fatalf("load %s", loaded.raw)
	}
	var kinds []string
	for _, f := range replayed {
		u := f.update()
		text, _ := u["content"].(map[string]any)["text"].(string)
		kinds = append(kinds, u["sessionUpdate"].(string)+":"+text)
	}
	if len(kinds) != 2 || kinds[0] != "user_message_chunk:first question" || kinds[1] != "agent_message_chunk:first answer" {
		t.Fatalf("replayed %v", kinds)
	}
	q.request(4, "session/prompt", textPrompt(sid, "second question"))
	if updates, answer := q.until(4); stopReasonOf(t, answer) != "end_turn" || len(updates) != 1 {
		t.Fatalf("continued: %v %s", updates, answer.raw)
	}
	// Loading a session already open is refused; an unknown one too.
	if f := q.call(5, "session/load", map[string]any{"sessionId": sid, "cwd": fx.ws, "mcpServers": []any{}}); f.Error == nil || f.Error.Code != -32602 {
		t.Fatalf("second load %s", f.raw)
	}
	if f := q.call(6, "session/load", map[string]any{"sessionId": "nope", "cwd": fx.ws, "mcpServers": []any{}}); f.Error == nil || f.Error.Code != -32602 {
		t.Fatalf("unknown load %s", f.raw)
	}
	if f := q.call(7, "session/close", map[string]any{"sessionId": sid}); f.Error != nil {
		t.Fatalf("close %s", f.raw)
	}
	if f := q.call(8, "session/resume", map[string]any{"sessionId": sid, "cwd": fx.ws}); f.Error != nil {
		t.Fatalf("resume after close %s", f.raw)
	}
}
