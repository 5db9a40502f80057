package acp_test

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/acp"
)

// TestSessionKindComesFromMetaAndOnlyNarrows: a session's task kind is
// _meta["pablo/v2"].kind on session/new, as its roles are; under a host
// that gives a kind (pablo acp --kind) a session of no kind or of that
// kind gets it, another kind or a malformed one is invalid params, and
// each prompt's task is of the session's kind.
func TestSessionKindComesFromMetaAndOnlyNarrows(t *testing.T) {
	t.Parallel()
	seen := metaNarrows(t, pablo.SessionOptions{Kind: "review"}, "kind", func(ti pablo.TaskInfo) string { return ti.Kind },
		[]any{"triage", 7, "Two Words"}, "review")
	if got := strings.Join(seen, ","); got != "review,review" {
		t.Errorf("the prompts' tasks were of kinds %q, want review twice", got)
	}
}

// metaNarrows runs the session/new of _meta["pablo/v2"][key] under a host
// giving sessions: each bad value is invalid params; a session naming good
// and one naming nothing each take a prompt, and what of each prompt's
// task shows (of its TaskInfo) is returned, in that order.
func metaNarrows(t *testing.T, sessions pablo.SessionOptions, key string, shows func(pablo.TaskInfo) string, bad []any, good any) []string {
	t.Helper()
	var mu sync.Mutex
	var seen []string
	fx := newFixture(t, fixtureOptions{script: `{"turns":[{"text":["one"]},{"text":["two"]}]}`,
		sessions: sessions,
		runtime: func(o *pablo.RuntimeOptions) {
			o.OnStart = func(ti pablo.TaskInfo) { mu.Lock(); seen = append(seen, shows(ti)); mu.Unlock() }
		}})
	p := serve(t, fx.sessions, acp.Options{Clock: newFakeClock()})
	p.initialize("pablo/v2")
	with := func(v any) map[string]any {
		return map[string]any{"cwd": fx.ws, "mcpServers": []any{}, "_meta": map[string]any{"pablo/v2": map[string]any{key: v}}}
	}
	for i, v := range bad {
		if f := p.call(10+i, "session/new", with(v)); f.Error == nil || f.Error.Code != -32602 {
			t.Errorf("%s %v: %s", key, v, f.raw)
		}
	}
	named := p.call(50, "session/new", with(good))
	var r struct {
		SessionID string `json:"sessionId"`
	}
	if named.Error != nil || json.Unmarshal(named.Result, &r) != nil {
		t.Fatalf("%s %v, which the host gives: %s", key, good, named.raw)
	}
	unnamed := p.newSession(51, fx.ws)
	for i, sid := range []string{r.SessionID, unnamed} {
		p.request(60+i, "session/prompt", textPrompt(sid, "next"))
		if _, answer := p.until(60 + i); stopReasonOf(t, answer) != "end_turn" {
			t.Fatalf("prompt %d: %s", i, answer.raw)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	return slices.Clone(seen)
}

// A session of a kind is offered only the commands of the Skills for it
// (and those for every kind), as its tasks activate only those; a
// session of none is offered every one.
func TestSessionsAreOfferedTheCommandsOfTheirKind(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, fixtureOptions{script: `{"turns":[{"text":["ok"]}]}`})
	p := serve(t, fx.sessions, acp.Options{Clock: newFakeClock(), Commands: []acp.Command{
		{Name: "review", Description: "Reviews.", TaskKinds: []string{"review"}},
		{Name: "triage", Description: "Triages.", TaskKinds: []string{"triage", "intake"}},
		{Name: "notes", Description: "Any kind."}}})
	p.initialize("pablo/v2")
	offered := func(id int, meta map[string]any) string {
		t.Helper()
		params := map[string]any{"cwd": fx.ws, "mcpServers": []any{}}
		if meta != nil {
			params["_meta"] = map[string]any{"pablo/v2": meta}
		}
		if f := p.call(id, "session/new", params); f.Error != nil {
			t.Fatalf("session/new: %s", f.raw)
		}
		next, ok := p.next()
		if !ok {
			t.Fatal("no frame after session/new")
		}
		var u struct {
			Update struct {
				AvailableCommands []struct {
					Name string `json:"name"`
				} `json:"availableCommands"`
			} `json:"update"`
		}
		jsonUnmarshal(t, next.Params, &u)
		var names []string
		for _, c := range u.Update.AvailableCommands {
			names = append(names, c.Name)
		}
		return strings.Join(names, ",")
	}
	if got := offered(2, map[string]any{"kind": "intake"}); got != "triage,notes" {
		t.Errorf("a session of kind intake is offered %q, want triage,notes", got)
	}
	if got := offered(3, nil); got != "review,triage,notes" {
		t.Errorf("a session of no kind is offered %q, want every command", got)
	}
}
