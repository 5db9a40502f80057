package acp_test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/acp"
)

// TestSessionRolesComeFromMetaAndOnlyNarrow: a session's roles are
// _meta["pablo/v2"].roles on session/new, through the wire to the tasks
// its prompts start. Under a host that gives support-lead and auditor, a
// session naming support-lead holds that one alone, a session naming none
// holds both, and a role the host did not give or a malformed list is
// invalid params: a client never gains a role.
func TestSessionRolesComeFromMetaAndOnlyNarrow(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string
	fx := newFixture(t, fixtureOptions{script: `{"turns":[{"text":["one"]},{"text":["two"]}]}`,
		sessions: pablo.SessionOptions{Roles: []string{"support-lead", "auditor"}},
		runtime: func(o *pablo.RuntimeOptions) {
			o.OnStart = func(ti pablo.TaskInfo) {
				mu.Lock()
				seen = append(seen, strings.Join(ti.Roles, "+"))
				mu.Unlock()
			}
		}})
	p := serve(t, fx.sessions, acp.Options{Clock: newFakeClock()})
	p.initialize("pablo/v2")
	withRoles := func(roles any) map[string]any {
		return map[string]any{"cwd": fx.ws, "mcpServers": []any{}, "_meta": map[string]any{"pablo/v2": map[string]any{"roles": roles}}}
	}
	for i, bad := range []any{[]any{"admin"}, "support-lead", []any{7}, []any{"Two Words"}} {
		if f := p.call(10+i, "session/new", withRoles(bad)); f.Error == nil || f.Error.Code != -32602 {
			t.Errorf("roles %v: %s", bad, f.raw)
		}
	}
	named := p.call(20, "session/new", withRoles([]any{"support-lead"}))
	var r struct {
		SessionID string `json:"sessionId"`
	}
	if named.Error != nil || json.Unmarshal(named.Result, &r) != nil {
		t.Fatalf("a role the host gives: %s", named.raw)
	}
	unnamed := p.newSession(21, fx.ws)
	for i, sid := range []string{r.SessionID, unnamed} {
		p.request(30+i, "session/prompt", textPrompt(sid, "next"))
		if _, answer := p.until(30 + i); stopReasonOf(t, answer) != "end_turn" {
			t.Fatalf("prompt %d: %s", i, answer.raw)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(seen, ","); got != "support-lead,support-lead+auditor" {
		t.Errorf("the prompts' tasks held roles %q, want support-lead, then support-lead+auditor", got)
	}
}
