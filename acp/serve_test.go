package acp_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/acp"
)

const toolScript = `{"turns":[
	{"text":["Checking", " the", " note."],"tool_calls":[{"name":"test.say","arguments":{"chunks":["a","b"]}}]},
	{"text":["Done."]}]}`

// The whole turn: initialize → session/new → session/prompt → the updates
// in order → end_turn, and nothing else on the output.
func TestPromptStreamsUpdatesAndEndsTheTurn(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, fixtureOptions{script: toolScript})
	p := serve(t, fx.sessions, acp.Options{Clock: newFakeClock()})
	p.initialize()
	sid := p.newSession(2, fx.ws)
	p.request(3, "session/prompt", textPrompt(sid, "What is due?"))
	updates, answer := p.until(3)
	if got := stopReasonOf(t, answer); got != "end_turn" {
		t.Fatalf("stop reason %q", got)
	}
	var kinds []string
	for _, f := range updates {
		if f.Method != "session/update" {
			t.Fatalf("not an update: %s", f.raw)
		}
		u := f.update()
		k := u["sessionUpdate"].(string)
		switch k {
		case "agent_message_chunk":
			k += ":" + u["content"].(map[string]any)["text"].(string)
		case "tool_call":
			if u["kind"] != "other" || u["status"] != "pending" || u["title"] != "test.say" {
				t.Errorf("tool_call %s", f.raw)
			}
			if in, _ := json.Marshal(u["rawInput"]); string(in) != `{"chunks":["a","b"]}` {
				t.Errorf("rawInput %s", in)
			}
		case "tool_call_update":
			k += ":" + u["status"].(string)
			if u["status"] == "completed" {
				out, _ := json.Marshal(u["rawOutput"])
				if !strings.Contains(string(out), `"status":"completed"`) {
					t.Errorf("rawOutput %s", out)
				}
			}
		}
		if strings.Contains(f.raw, "_meta") {
			t.Errorf("a generic client got metadata: %s", f.raw)
		}
		kinds = append(kinds, k)
	}
	want := []string{"agent_message_chunk:Checking", "agent_message_chunk: the note.", "tool_call",
		"tool_call_update:in_progress", "tool_call_update:completed", "agent_message_chunk:Done."}
	if strings.Join(kinds, "|") != strings.Join(want, "|") {
		t.Fatalf("updates\n%v\nwant\n%v", kinds, want)
	}
	if err := p.end(); err != nil {
		t.Fatalf("Serve: %v", err)
	}
}

// A session is a conversation: a second prompt runs after the first and
// sees it.
func TestASessionTakesManyPrompts(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, fixtureOptions{script: `{"turns":[{"text":["one"]},{"text":["two"]}]}`})
	p := serve(t, fx.sessions, acp.Options{Clock: newFakeClock()})
	p.initialize()
	sid := p.newSession(2, fx.ws)
	for i := 3; i < 5; i++ {
		p.request(i, "session/prompt", textPrompt(sid, "next"))
		if _, answer := p.until(i); stopReasonOf(t, answer) != "end_turn" {
			t.Fatalf("prompt %d: %s", i, answer.raw)
		}
	}
}

func TestInitializeNegotiatesOnceAndEchoesExtensions(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, fixtureOptions{script: `{"turns":[{"text":["ok"]}]}`})
	p := serve(t, fx.sessions, acp.Options{Clock: newFakeClock(), Agent: acp.Implementation{Name: "pablo", Version: "v0"}})
	// pablo/task-v2 without pablo/v2 and output-v1 without task-v2 are not
	// accepted; an unknown name is ignored.
	f := p.call(1, "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{"_meta": map[string]any{
		"pablo/v2": true, "pablo/model-route-v1": true, "pablo/output-v1": true, "pablo/unknown": true, "pablo/skills-v1": false}}})
	var r struct {
		ProtocolVersion   int `json:"protocolVersion"`
		AgentCapabilities struct {
			Meta               map[string]bool `json:"_meta"`
			LoadSession        bool            `json:"loadSession"`
			PromptCapabilities map[string]bool `json:"promptCapabilities"`
			SessionCaps        map[string]any  `json:"sessionCapabilities"`
		} `json:"agentCapabilities"`
		AgentInfo   map[string]string `json:"agentInfo"`
		AuthMethods []any             `json:"authMethods"`
	}
	if err := json.Unmarshal(f.Result, &r); err != nil {
		t.Fatal(err)
	}
	if r.ProtocolVersion != 1 || r.AgentInfo["name"] != "pablo" || r.AgentInfo["version"] != "v0" || r.AuthMethods == nil || len(r.AuthMethods) != 0 {
		t.Fatalf("initialize: %s", f.raw)
	}
	if len(r.AgentCapabilities.Meta) != 2 || !r.AgentCapabilities.Meta["pablo/v2"] || !r.AgentCapabilities.Meta["pablo/model-route-v1"] {
		t.Fatalf("echo: %v", r.AgentCapabilities.Meta)
	}
	for k, v := range r.AgentCapabilities.PromptCapabilities {
		if v {
			t.Errorf("prompt capability %s advertised", k)
		}
	}
	if r.AgentCapabilities.LoadSession || r.AgentCapabilities.SessionCaps["list"] != nil || r.AgentCapabilities.SessionCaps["resume"] != nil {
		t.Fatalf("durable capabilities without a store: %s", f.raw)
	}
	again := p.call(2, "initialize", map[string]any{"protocolVersion": 1})
	if again.Error == nil || again.Error.Code != -32600 {
		t.Fatalf("second initialize: %s", again.raw)
	}
}

// Every refusal of a supported method is -32602; unsupported methods are
// -32601.
func TestInvalidParamsAreRefusedWithTheirCode(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, fixtureOptions{script: `{"turns":[{"text":["x"],"tool_calls":[{"name":"test.wait","arguments":{}}]}]}`})
	p := serve(t, fx.sessions, acp.Options{Clock: newFakeClock()})
	if f := p.call(9, "session/new", map[string]any{"cwd": fx.ws}); f.Error == nil || f.Error.Code != -32600 {
		t.Fatalf("before initialize: %s", f.raw)
	}
	p.initialize()
	sid := p.newSession(2, fx.ws)
	block := func(b map[string]any) map[string]any {
		return map[string]any{"sessionId": sid, "prompt": []any{b}}
	}
	cases := []struct {
		name   string
		method string
		params any
		code   int
	}{
		{"unknown method", "session/fork", map[string]any{}, -32601},
		{"load without a store", "session/load", map[string]any{"sessionId": sid, "cwd": fx.ws, "mcpServers": []any{}}, -32601},
		{"list without a store", "session/list", map[string]any{}, -32601},
		{"no params", "session/new", nil, -32602},
		{"no cwd", "session/new", map[string]any{"mcpServers": []any{}}, -32602},
		{"relative cwd", "session/new", map[string]any{"cwd": "work", "mcpServers": []any{}}, -32602},
		{"missing cwd", "session/new", map[string]any{"cwd": fx.ws + "/missing", "mcpServers": []any{}}, -32602},
		{"cwd of the wrong type", "session/new", map[string]any{"cwd": 7}, -32602},
		{"additional directories", "session/new", map[string]any{"cwd": fx.ws, "additionalDirectories": []string{"/tmp"}}, -32602},
		{"client env", "session/new", map[string]any{"cwd": fx.ws, "mcpServers": []any{map[string]any{"name": "s", "command": "/bin/true", "args": []string{}, "env": []any{map[string]any{"name": "K", "value": "v"}}}}}, -32602},
		{"client headers", "session/new", map[string]any{"cwd": fx.ws, "mcpServers": []any{map[string]any{"type": "http", "name": "s", "url": "https://x.test/mcp", "headers": []any{map[string]any{"name": "K", "value": "v"}}}}}, -32602},
		{"a server the host did not approve", "session/new", map[string]any{"cwd": fx.ws, "mcpServers": []any{map[string]any{"name": "s", "command": "/bin/true", "args": []string{}, "env": []any{}}}}, -32602},
		{"unknown session", "session/prompt", textPrompt("nope", "x"), -32602},
		{"no session", "session/prompt", map[string]any{"prompt": []any{}}, -32602},
		{"empty prompt", "session/prompt", map[string]any{"sessionId": sid, "prompt": []any{}}, -32602},
		{"image", "session/prompt", block(map[string]any{"type": "image", "data": "AA==", "mimeType": "image/png"}), -32602},
		{"audio", "session/prompt", block(map[string]any{"type": "audio", "data": "AA==", "mimeType": "audio/wav"}), -32602},
		{"embedded resource", "session/prompt", block(map[string]any{"type": "resource", "resource": map[string]any{"uri": "file:///a", "text": "x"}}), -32602},
		{"prompt over the bound", "session/prompt", textPrompt(sid, strings.Repeat("x", acp.MaxPromptBytes+1)), -32602},
		{"close an unknown session", "session/close", map[string]any{"sessionId": "nope"}, -32602},
	}
	for i, tc := range cases {
		f := p.call(100+i, tc.method, tc.params)
		if f.Error == nil || f.Error.Code != tc.code {
			t.Errorf("%s: %s", tc.name, f.raw)
		}
	}
	// A second prompt while one runs is refused; the first still answers.
	p.request(3, "session/prompt", textPrompt(sid, "wait"))
	<-fx.tools.started
	p.request(4, "session/prompt", textPrompt(sid, "again"))
	before, busy := p.until(4)
	if busy.Error == nil || busy.Error.Code != -32602 {
		t.Fatalf("second prompt: %s", busy.raw)
	}
	p.notify("session/cancel", map[string]any{"sessionId": sid})
	rest, answer := p.until(3)
	if stopReasonOf(t, answer) != "cancelled" {
		t.Fatalf("answer %s", answer.raw)
	}
	for _, f := range append(before, rest...) {
		if f.Method != "session/update" {
			t.Fatalf("not an update: %s", f.raw)
		}
	}
}

// A resource link becomes a bounded textual reference; it is never
// fetched.
func TestResourceLinksBecomeTextualReferences(t *testing.T) {
	t.Parallel()
	rec := &recordModel{}
	fx := newFixture(t, fixtureOptions{script: `{"turns":[{"text":["ok"]}]}`, runtime: func(o *pablo.RuntimeOptions) {
		rec.Model = o.Model
		o.Model = rec
	}})
	p := serve(t, fx.sessions, acp.Options{Clock: newFakeClock()})
	p.initialize()
	sid := p.newSession(2, fx.ws)
	p.request(3, "session/prompt", map[string]any{"sessionId": sid, "prompt": []any{
		map[string]any{"type": "text", "text": "Read this:"},
		map[string]any{"type": "resource_link", "name": "notes.md", "uri": "http://127.0.0.1:1/" + strings.Repeat("a", 5000), "title": "Notes"},
	}})
	if _, answer := p.until(3); stopReasonOf(t, answer) != "end_turn" {
		t.Fatalf("answer %s", answer.raw)
	}
	in := rec.lastInput()
	if !strings.HasPrefix(in, "Read this:\n[resource link: \"notes.md\" <http://127.0.0.1:1/aaa") || !strings.HasSuffix(in, `> title "Notes" (not fetched)]`) {
		t.Fatalf("input %q", in)
	}
	if len(in) > 2200 {
		t.Fatalf("the link is not bounded: %d bytes", len(in))
	}
}

// A cancel mid-tool answers cancelled once the tool is joined, after the
// tool's updates; nothing follows the answer.
func TestCancelMidToolAnswersCancelledAfterCleanup(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"session/cancel", "$/cancel_request"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			fx := newFixture(t, fixtureOptions{script: `{"turns":[{"text":["x"],"tool_calls":[{"name":"test.wait","arguments":{}}]},{"text":["never"]}]}`})
			p := serve(t, fx.sessions, acp.Options{Clock: newFakeClock()})
			p.initialize()
			sid := p.newSession(2, fx.ws)
			p.request(3, "session/prompt", textPrompt(sid, "wait"))
			<-fx.tools.started
			if how == "session/cancel" {
				p.notify(how, map[string]any{"sessionId": sid})
			} else {
				p.notify(how, map[string]any{"requestId": 3})
			}
			updates, answer := p.until(3)
			if stopReasonOf(t, answer) != "cancelled" {
				t.Fatalf("answer %s", answer.raw)
			}
			last := updates[len(updates)-1].update()
			if last["sessionUpdate"] != "tool_call_update" || (last["status"] != "completed" && last["status"] != "failed") {
				t.Fatalf("the tool's last update is not its settlement: %v", last)
			}
			if err := p.end(); err != nil {
				t.Fatal(err)
			}
			if rest := p.drain(); len(rest) != 0 {
				t.Fatalf("frames after the answer: %v", rest)
			}
		})
	}
}

// EOF in the middle of a prompt cancels it; the prompt is joined and
// answered before Serve returns.
func TestEOFMidPromptCancelsAndJoins(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, fixtureOptions{script: `{"turns":[{"text":["x"],"tool_calls":[{"name":"test.wait","arguments":{}}]}]}`})
	p := serve(t, fx.sessions, acp.Options{Clock: newFakeClock()})
	p.initialize()
	sid := p.newSession(2, fx.ws)
	p.request(3, "session/prompt", textPrompt(sid, "wait"))
	<-fx.tools.started
	p.in.Close()
	_, answer := p.until(3)
	if stopReasonOf(t, answer) != "cancelled" {
		t.Fatalf("answer %s", answer.raw)
	}
	if err := <-p.served; err != nil {
		t.Fatalf("Serve after EOF: %v", err)
	}
	p.served <- nil
}

// Each framing fault closes the connection with its rule; the output
// holds only the frames answered before.
func TestFaultyFramesCloseTheConnection(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, fixtureOptions{script: `{"turns":[{"text":["ok"]}]}`})
	cases := []struct {
		name  string
		input string
		rule  acp.FrameRule
	}{
		{"garbage", "garbage", acp.FrameNotObject},
		{"malformed object", `{"jsonrpc":`, acp.FrameMalformed},
		{"invalid UTF-8", "{\"jsonrpc\":\"2.0\",\"method\":\"x\xff\"}", acp.FrameInvalidUTF8},
		{"batch", `[{"jsonrpc":"2.0","id":5,"method":"initialize","params":{"protocolVersion":1}}]`, acp.FrameBatch},
		{"over the line bound", `{"jsonrpc":"2.0","method":"` + strings.Repeat("x", 600) + `"}`, acp.FrameTooLong},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := serve(t, fx.sessions, acp.Options{Clock: newFakeClock(), MaxLine: 512})
			p.initialize()
			// The reader may stop inside the frame: the rest is never read.
			p.in.Write([]byte(tc.input + "\n"))
			p.in.Write([]byte(`{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":1}}` + "\n"))
			rest := p.drain()
			err := <-p.served
			p.served <- err
			var fe *acp.FrameError
			if !errors.As(err, &fe) || fe.Rule != tc.rule || fe.Frame != 2 {
				t.Fatalf("Serve: %v", err)
			}
			if len(rest) != 0 {
				t.Fatalf("frames after the fault: %v", rest)
			}
		})
	}
	t.Run("no final newline", func(t *testing.T) {
		t.Parallel()
		p := serve(t, fx.sessions, acp.Options{Clock: newFakeClock()})
		p.initialize()
		p.in.Write([]byte(`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":1}}`))
		p.in.Close()
		if rest := p.drain(); len(rest) != 0 {
			t.Fatalf("an unterminated frame was answered: %v", rest)
		}
		err := <-p.served
		p.served <- err
		var fe *acp.FrameError
		if !errors.As(err, &fe) || fe.Rule != acp.FrameUnterminated {
			t.Fatalf("Serve: %v", err)
		}
	})
}

// The reference's line bound through Serve: a frame of 32 MiB + 1 bytes
// closes the connection.
func TestAFrameOverThirtyTwoMiBClosesTheConnection(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 32 MiB")
	}
	t.Parallel()
	fx := newFixture(t, fixtureOptions{script: `{"turns":[{"text":["ok"]}]}`})
	p := serve(t, fx.sessions, acp.Options{Clock: newFakeClock()})
	p.initialize()
	line := `{"jsonrpc":"2.0","method":"x","params":"` + strings.Repeat("x", acp.DefaultMaxLine) + `"}`
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		// 32 MiB + 1 bytes and the newline.
		p.in.Write([]byte(line[:acp.DefaultMaxLine+1] + "\n"))
	}()
	p.drain()
	p.in.Close()
	<-wrote
	err := <-p.served
	p.served <- err
	var fe *acp.FrameError
	if !errors.As(err, &fe) || fe.Rule != acp.FrameTooLong {
		t.Fatalf("Serve: %v", err)
	}
}
