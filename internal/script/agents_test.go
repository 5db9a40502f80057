package script

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/model"
)

// TestAgentScriptsAreCheckedAndCounted: an agent script needs its input,
// once, and turns; its turns count against the script's bounds, and
// MaxAgents agents load where one more is refused.
func TestAgentScriptsAreCheckedAndCounted(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ doc, pointer, says string }{
		{`{"turns":[{"text":["a"]}],"agents":[{"turns":[{"text":["b"]}]}]}`, "/agents/0/input", "needs the input"},
		{`{"turns":[{"text":["a"]}],"agents":[{"input":"x","turns":[{"text":["b"]}]},{"input":"x","turns":[{"text":["c"]}]}]}`, "/agents/1/input", "same input"},
		{`{"turns":[{"text":["a"]}],"agents":[{"input":"x","turns":[]}]}`, "/agents/0/turns", "no turns"},
		{`{"turns":[{"text":["a"]}],"agents":[{"input":"x","turns":[{"tool_calls":[{"arguments":{}}]}]}]}`, "/agents/0/turns/0/tool_calls/0/name", "needs a name"},
		{`{"turns":[{"text":["a"]}],"agents":[{"input":"x","Turns":[{"text":["b"]}]}]}`, "", "unknown field"},
	} {
		_, err := Parse([]byte(c.doc))
		var se *Error
		if !errors.As(err, &se) || !strings.Contains(err.Error(), c.says) || (c.pointer != "" && se.Pointer != c.pointer) {
			t.Errorf("%s: got %v, want %q at %q", c.doc, err, c.says, c.pointer)
		}
	}
	agents := func(n int) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = `{"input":"` + strconv.Itoa(i) + `","turns":[{"text":["x"]}]}`
		}
		return `{"turns":[{"text":["a"]}],"agents":[` + strings.Join(parts, ",") + `]}`
	}
	if _, err := Parse([]byte(agents(MaxAgents))); err != nil {
		t.Errorf("%d agents: %v", MaxAgents, err)
	}
	if _, err := Parse([]byte(agents(MaxAgents + 1))); err == nil || !strings.Contains(err.Error(), "agents") {
		t.Errorf("%d agents: %v", MaxAgents+1, err)
	}
	// An argument key in an agent's tool call may be spelled any way, as
	// in the root's.
	if _, err := Parse([]byte(`{"turns":[{"text":["a"]}],"agents":[{"input":"x","turns":[{"tool_calls":[{"name":"t","arguments":{"Path":"a"}}]}]}]}`)); err != nil {
		t.Error(err)
	}
}

// TestAgentScriptAnswersItsInput: a request whose first user message is an
// agent's input replays that agent's turns; the root replays its own; and
// the ID references resolve from the conversation's tool results, or fail
// the turn.
func TestAgentScriptAnswersItsInput(t *testing.T) {
	t.Parallel()
	s, err := Parse([]byte(`{"turns":[
		{"text":["root"],"tool_calls":[{"id":"w","name":"subagent","arguments":{"action":"wait","agent_ids":["{{agent_id:s1}}"],"handoffs":[{"result_id":"{{result_id:s1}}"}]}}]}],
		"agents":[{"input":"report A","turns":[{"text":["child"]}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	m := NewModel(s)
	gen := func(msgs ...model.Message) (*model.Response, error) {
		req := &model.Request{Messages: msgs}
		model.SetTurn(req, 1)
		return m.Generate(context.Background(), req, func(string) error { return nil })
	}
	resp, err := gen(model.Message{Role: model.RoleUser, Content: "report A"})
	if err != nil || resp.Text != "child" {
		t.Fatalf("child: %+v %v", resp, err)
	}
	_, err = gen(model.Message{Role: model.RoleUser, Content: "go"})
	if err == nil || !strings.Contains(err.Error(), "no spawn result") {
		t.Fatalf("unresolved reference: %v", err)
	}
	spawn := model.Message{Role: model.RoleTool, ToolCallID: "s1", Content: `{"subagent":{"action":"spawn","agent":{"agent_id":"A-1"}}}`}
	_, err = gen(model.Message{Role: model.RoleUser, Content: "go"}, spawn)
	if err == nil || !strings.Contains(err.Error(), "no settled snapshot") {
		t.Fatalf("unresolved result: %v", err)
	}
	wait := model.Message{Role: model.RoleTool, ToolCallID: "w0", Content: `{"subagent":{"action":"wait","settled":[{"agent_id":"A-1","result_id":"R-1"}],"remaining":[]}}`}
	resp, err = gen(model.Message{Role: model.RoleUser, Content: "go"}, spawn, wait)
	if err != nil {
		t.Fatal(err)
	}
	var args struct {
		AgentIDs []string `json:"agent_ids"`
		Handoffs []struct {
			ResultID string `json:"result_id"`
		} `json:"handoffs"`
	}
	if err := json.Unmarshal(resp.ToolCalls[0].Arguments, &args); err != nil || args.AgentIDs[0] != "A-1" || args.Handoffs[0].ResultID != "R-1" {
		t.Fatalf("resolved %s: %v", resp.ToolCalls[0].Arguments, err)
	}
}
