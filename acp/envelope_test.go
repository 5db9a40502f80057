package acp_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/acp"
)

// TestADuplicateMemberOrAnObjectIDIsAnInvalidRequest: JSON-RPC 2.0 allows
// one id, a string, a number or null. A frame with two ids (the decoder
// would keep the last), an object or array id (it would be echoed), or any
// other member written twice (jsonrpc, method, params, under any spelling
// the decoder folds to it) is answered -32600 with id null, runs nothing,
// and the connection goes on.
func TestADuplicateMemberOrAnObjectIDIsAnInvalidRequest(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, fixtureOptions{script: `{"turns":[{"text":["ok"]}]}`})
	p := serve(t, fx.sessions, acp.Options{Clock: newFakeClock()})
	p.initialize()
	cwd, _ := json.Marshal(fx.ws)
	newSession := `"method":"session/new","params":{"cwd":` + string(cwd) + `,"mcpServers":[]}`
	for _, tc := range []struct{ name, frame, member string }{
		{"two ids", `{"jsonrpc":"2.0","id":1,"id":2,` + newSession + `}`, "id"},
		{"two ids spelled apart", `{"jsonrpc":"2.0","id":1,"ID":2,` + newSession + `}`, "id"},
		{"an object id", `{"jsonrpc":"2.0","id":{"a":1},` + newSession + `}`, "id"},
		{"an array id", `{"jsonrpc":"2.0","id":[3],` + newSession + `}`, "id"},
		{"a boolean id", `{"jsonrpc":"2.0","id":true,` + newSession + `}`, "id"},
		{"two methods", `{"jsonrpc":"2.0","id":4,"method":"initialize",` + newSession + `}`, "method"},
		{"two params", `{"jsonrpc":"2.0","id":5,` + newSession + `,"params":{}}`, "params"},
		{"two versions", `{"jsonrpc":"1.0","id":6,"jsonrpc":"2.0",` + newSession + `}`, "jsonrpc"},
		{"a response with two ids", `{"jsonrpc":"2.0","id":7,"id":8,"result":{}}`, "id"},
		{"a notification with two methods", `{"jsonrpc":"2.0","method":"session/cancel","method":"x","params":{}}`, "method"},
	} {
		p.send(tc.frame)
		f, ok := p.next()
		if !ok {
			t.Fatalf("%s: the connection closed", tc.name)
		}
		if f.Error == nil || f.Error.Code != -32600 || string(f.ID) != "null" || f.Method != "" {
			t.Fatalf("%s: answered %s, want -32600 with id null", tc.name, f.raw)
		}
		if !strings.Contains(string(f.Error.Data), "member "+tc.member) {
			t.Errorf("%s: the reason %s does not name %s", tc.name, f.Error.Data, tc.member)
		}
	}
	// Nothing ran: no session was made, and the next request is served.
	if f := p.call(9, "session/prompt", textPrompt("1", "x")); f.Error == nil || f.Error.Code != -32602 {
		t.Fatalf("a prompt to a session that must not exist: %s", f.raw)
	}
	if sid := p.newSession(10, fx.ws); sid == "" {
		t.Fatal("no session after the refusals")
	}
	if err := p.end(); err != nil {
		t.Fatalf("Serve: %v", err)
	}
}
