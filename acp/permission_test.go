package acp_test

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/acp"
	"github.com/pabloagent/pablo/authority"
)

// gate asks for approval of one tool: the test approver's stand-in for
// the approval policy of issue 20.
type gate struct {
	authority.Authority
	tool authority.ID
}

func (g gate) Decide(req authority.Request) authority.Decision {
	d := g.Authority.Decide(req)
	if d.Allowed && req.Capability == g.tool {
		d.NeedsApproval = true
	}
	return d
}

// A call that needs approval becomes session/request_permission bound to
// it (the toolCallId of its tool_call, sent first), offering ACP's four
// options; allow runs it, reject and a cancelled outcome keep it from
// running (the recoverable approval_rejected: the turn goes on), an error
// answer denies it terminally (refusal), and session/cancel while the
// client decides cancels the prompt.
func TestPermissionRequestsAreBoundToTheCall(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		answer string // a result, or "" to cancel the prompt instead
		stop   string
		ran    bool
	}{
		{"allow", `{"outcome":{"outcome":"selected","optionId":"allow_once"}}`, "end_turn", true},
		{"allow always", `{"outcome":{"outcome":"selected","optionId":"allow_always"}}`, "end_turn", true},
		{"reject", `{"outcome":{"outcome":"selected","optionId":"reject_once"}}`, "end_turn", false},
		{"reject always", `{"outcome":{"outcome":"selected","optionId":"reject_always"}}`, "end_turn", false},
		{"an unknown option", `{"outcome":{"outcome":"selected","optionId":"allow"}}`, "end_turn", false},
		{"cancelled outcome", `{"outcome":{"outcome":"cancelled"}}`, "end_turn", false},
		{"an error answer", ``, "refusal", false},
		{"session/cancel while asked", "", "cancelled", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fx := newFixture(t, fixtureOptions{
				script:  `{"turns":[{"text":["x"],"tool_calls":[{"name":"test.say","arguments":{"chunks":["ran"]}}]},{"text":["done"]}]}`,
				runtime: func(o *pablo.RuntimeOptions) { o.Authority = gate{o.Authority, "test.say"} },
			})
			p := serve(t, fx.sessions, acp.Options{Clock: newFakeClock()})
			p.initialize()
			sid := p.newSession(2, fx.ws)
			p.request(3, "session/prompt", textPrompt(sid, "say"))
			var callID string
			var ask frame
			for ask.Method == "" {
				f, _ := p.next()
				switch {
				case f.Method == "session/update" && f.update()["sessionUpdate"] == "tool_call":
					callID = f.update()["toolCallId"].(string)
				case f.Method == "session/request_permission":
					ask = f
				}
			}
			var req struct {
				SessionID string `json:"sessionId"`
				ToolCall  struct {
					ToolCallID string          `json:"toolCallId"`
					Title      string          `json:"title"`
					RawInput   json.RawMessage `json:"rawInput"`
				} `json:"toolCall"`
				Options []struct {
					Kind     string `json:"kind"`
					OptionID string `json:"optionId"`
				} `json:"options"`
			}
			jsonUnmarshal(t, ask.Params, &req)
			if callID == "" || req.ToolCall.ToolCallID != callID || req.SessionID != sid || req.ToolCall.Title != "test.say" ||
				string(req.ToolCall.RawInput) != `{"chunks":["ran"]}` {
				t.Fatalf("the request is not bound to the call %q: %s", callID, ask.raw)
			}
			if len(req.Options) != 4 || req.Options[0].Kind != "allow_once" || req.Options[1].Kind != "allow_always" ||
				req.Options[2].Kind != "reject_once" || req.Options[3].Kind != "reject_always" {
				t.Fatalf("options %s", ask.raw)
			}
			switch {
			case tc.name == "an error answer":
				p.send(`{"jsonrpc":"2.0","id":` + string(ask.ID) + `,"error":{"code":-32603,"message":"no"}}`)
			case tc.answer == "":
				p.notify("session/cancel", map[string]any{"sessionId": sid})
			default:
				p.send(`{"jsonrpc":"2.0","id":` + string(ask.ID) + `,"result":` + tc.answer + `}`)
			}
			updates, answer := p.until(3)
			if got := stopReasonOf(t, answer); got != tc.stop {
				t.Fatalf("stop %q, want %q", got, tc.stop)
			}
			ran := false
			for _, u := range updates {
				if u.update()["status"] == "in_progress" {
					ran = true
				}
			}
			if ran != tc.ran {
				t.Fatalf("the call ran: %v, want %v", ran, tc.ran)
			}
		})
	}
}

// Two sessions run their prompts at once.
func TestTwoSessionsRunConcurrently(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, fixtureOptions{script: `{"turns":[{"text":["x"],"tool_calls":[{"name":"test.wait","arguments":{}}]},{"text":["never"]}]}`})
	p := serve(t, fx.sessions, acp.Options{Clock: newFakeClock()})
	p.initialize()
	a := p.newSession(2, fx.ws)
	b := p.newSession(3, fx.ws)
	p.request(4, "session/prompt", textPrompt(a, "wait"))
	p.request(5, "session/prompt", textPrompt(b, "wait"))
	<-fx.tools.started
	<-fx.tools.started // both prompts are in their tool at once
	p.notify("session/cancel", map[string]any{"sessionId": b})
	p.notify("session/cancel", map[string]any{"sessionId": a})
	answered := map[string]string{}
	for len(answered) < 2 {
		f, _ := p.next()
		if f.Method == "" {
			answered[string(f.ID)] = stopReasonOf(t, f)
		}
	}
	for _, id := range []int{4, 5} {
		if answered[strconv.Itoa(id)] != "cancelled" {
			t.Fatalf("answers %v", answered)
		}
	}
}
