package acp_test

import (
	"context"
	"sync"
	"testing"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/acp"
	"github.com/pabloagent/pablo/model"
)

// requestsModel wraps a model and keeps the messages of every request.
type requestsModel struct {
	model.Model
	mu   sync.Mutex
	seen [][]model.Message
}

func (m *requestsModel) Generate(ctx context.Context, req *model.Request, emit func(string) error) (*model.Response, error) {
	m.mu.Lock()
	m.seen = append(m.seen, append([]model.Message(nil), req.Messages...))
	m.mu.Unlock()
	return m.Model.Generate(ctx, req, emit)
}

// A conversation is a conversation: the third prompt's first request holds
// the first two prompts' turns as the messages they were (the user's
// prompt, the assistant's tool call, the tool's result, the assistant's
// answer), then the third prompt.
func TestLaterPromptsCarryTheEarlierTurnsAsMessages(t *testing.T) {
	t.Parallel()
	var rec *requestsModel
	f := newFixture(t, fixtureOptions{
		script: `{"turns":[{"tool_calls":[{"id":"w1","name":"test_say","arguments":{"chunks":["hi"]}}]},{"text":["said it"]}]}`,
		runtime: func(o *pablo.RuntimeOptions) {
			rec = &requestsModel{Model: o.Model}
			o.Model = rec
		},
	})
	p := serve(t, f.sessions, acp.Options{Clock: newFakeClock()})
	p.initialize()
	sid := p.newSession(2, f.ws)
	for i, text := range []string{"one", "two", "three"} {
		p.request(3+i, "session/prompt", textPrompt(sid, text))
		if _, answer := p.until(3 + i); stopReasonOf(t, answer) != "end_turn" {
			t.Fatalf("prompt %q: %s", text, answer.raw)
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.seen) != 6 {
		t.Fatalf("%d model requests, want 2 per prompt", len(rec.seen))
	}
	third := rec.seen[4]
	type shape struct {
		role    model.Role
		content string
		calls   int
	}
	want := []shape{
		{model.RoleUser, "one", 0}, {model.RoleAssistant, "", 1}, {model.RoleTool, "", 0}, {model.RoleAssistant, "said it", 0},
		{model.RoleUser, "two", 0}, {model.RoleAssistant, "", 1}, {model.RoleTool, "", 0}, {model.RoleAssistant, "said it", 0},
		{model.RoleUser, "three", 0},
	}
	if len(third) != len(want) {
		t.Fatalf("the third prompt's request holds %d messages, want %d: %+v", len(third), len(want), third)
	}
	for i, w := range want {
		m := third[i]
		if m.Role != w.role || (w.content != "" && m.Content != w.content) || len(m.ToolCalls) != w.calls {
			t.Errorf("message %d is %s %q with %d calls, want %s %q with %d", i, m.Role, m.Content, len(m.ToolCalls), w.role, w.content, w.calls)
		}
		if m.Role == model.RoleTool && m.ToolCallID != third[i-1].ToolCalls[0].ID {
			t.Errorf("message %d answers %q, not its call %q", i, m.ToolCallID, third[i-1].ToolCalls[0].ID)
		}
	}
	if third[1].ToolCalls[0].ID == third[5].ToolCalls[0].ID {
		t.Errorf("two calls of the conversation share the wire ID %q", third[1].ToolCalls[0].ID)
	}
}
