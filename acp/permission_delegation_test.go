package acp_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/acp"
	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/children"
)

// TestPermissionRequestNamesWhatASpawnDelegates: over a pablo/v2 session,
// a spawn that asks sends session/request_permission whose _meta names
// what it delegates (the action, the child's capabilities, the digest and
// size of its input), never the input; the wait of that child asks
// nothing.
func TestPermissionRequestNamesWhatASpawnDelegates(t *testing.T) {
	fx := newFixture(t, fixtureOptions{script: childScript, runtime: func(o *pablo.RuntimeOptions) {
		set, err := authority.New(authority.Config{Native: []authority.ID{authority.Subagent}})
		if err != nil {
			t.Fatal(err)
		}
		o.Authority, o.Children = gate{set, authority.Subagent}, &children.Capacity{}
	}})
	p := serve(t, fx.sessions, acp.Options{Clock: newFakeClock()})
	p.initialize("pablo/v2")
	sid := p.newSession(2, fx.ws)
	p.request(3, "session/prompt", textPrompt(sid, "go"))
	var ask frame
	for ask.Method == "" {
		f, _ := p.next()
		if f.Method == "session/request_permission" {
			ask = f
		}
	}
	var req struct {
		Meta map[string]struct {
			Approval struct {
				Effect     string          `json:"effect"`
				Delegation json.RawMessage `json:"delegation"`
			} `json:"approval"`
		} `json:"_meta"`
	}
	jsonUnmarshal(t, ask.Params, &req)
	a := req.Meta["pablo/v2"].Approval
	sum := sha256.Sum256([]byte("child task"))
	want := `{"action":"spawn","capabilities":{"mcp_servers":[],"model_route":[],"skills":[],"tools":[]},"input_bytes":` + strconv.Itoa(len("child task")) + `,"input_digest":"sha256:` + hex.EncodeToString(sum[:]) + `"}`
	if a.Effect != "delegate" || string(a.Delegation) != want {
		t.Fatalf("the request's _meta\n %s\nwant the delegation\n %s", ask.raw, want)
	}
	if strings.Contains(string(a.Delegation), "child task") {
		t.Errorf("the delegation holds the child's input: %s", a.Delegation)
	}
	p.send(`{"jsonrpc":"2.0","id":` + string(ask.ID) + `,"result":{"outcome":{"outcome":"selected","optionId":"allow_once"}}}`)
	updates, answer := p.until(3)
	if reason := stopReasonOf(t, answer); reason != "end_turn" {
		t.Fatalf("stop reason %s", reason)
	}
	for _, f := range updates {
		if f.Method == "session/request_permission" {
			t.Errorf("a call that delegates nothing asked: %s", f.raw)
		}
	}
}
