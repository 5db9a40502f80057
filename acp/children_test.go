package acp_test

import (
	"strings"
	"testing"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/acp"
	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/children"
)

const childScript = `{"turns":[
	{"text":["spawning"],"tool_calls":[{"id":"s1","name":"subagent","arguments":{"action":"spawn","request":{"input":"child task","capabilities":{"tools":[]}}}}]},
	{"tool_calls":[{"id":"w1","name":"subagent","arguments":{"action":"wait","agent_ids":["{{agent_id:s1}}"],"mode":"all","timeout_ms":60000}}]},
	{"text":["root done"]}],
	"agents":[{"input":"child task","turns":[{"text":["from the child"]}]}]}`

// TestChildrenUpdatesAreForPabloV2Clients: a generic client sees the
// root's subagent calls and their results, never a child's own updates; a
// pablo/v2 client also gets the child's, each naming its agent and its
// root_seq, under call IDs that cannot collide with the root's.
func TestChildrenUpdatesAreForPabloV2Clients(t *testing.T) {
	for _, v2 := range []bool{false, true} {
		fx := newFixture(t, fixtureOptions{script: childScript, runtime: func(o *pablo.RuntimeOptions) {
			set, err := authority.New(authority.Config{Native: []authority.ID{authority.Subagent}})
			if err != nil {
				t.Fatal(err)
			}
			o.Authority, o.Children = set, &children.Capacity{}
		}})
		p := serve(t, fx.sessions, acp.Options{Clock: newFakeClock()})
		if v2 {
			p.initialize("pablo/v2")
		} else {
			p.initialize()
		}
		sid := p.newSession(2, fx.ws)
		p.request(3, "session/prompt", textPrompt(sid, "go"))
		updates, answer := p.until(3)
		if reason := stopReasonOf(t, answer); reason != "end_turn" {
			t.Fatalf("stop reason %s", reason)
		}
		var child, rootCalls int
		ids := map[string]bool{}
		for _, f := range updates {
			u := f.update()
			if id, ok := u["toolCallId"].(string); ok && u["sessionUpdate"] == "tool_call" {
				if ids[id] {
					t.Errorf("tool call ID %s announced twice", id)
				}
				ids[id] = true
				if u["title"] == "subagent" {
					rootCalls++
				}
			}
			if u["sessionUpdate"] == "agent_message_chunk" && strings.Contains(f.raw, "from the child") {
				child++
				if !v2 {
					t.Errorf("a generic client got a child's update: %s", f.raw)
				}
				if !strings.Contains(f.raw, `"depth":1`) || !strings.Contains(f.raw, `"root_seq":`) || !strings.Contains(f.raw, `"kind":"local_acp_temporary"`) {
					t.Errorf("a child's update without its agent: %s", f.raw)
				}
			}
		}
		if rootCalls != 2 {
			t.Errorf("v2=%v: %d subagent tool calls, want the root's spawn and wait", v2, rootCalls)
		}
		if v2 && child == 0 {
			t.Error("a pablo/v2 client got none of the child's updates")
		}
	}
}
