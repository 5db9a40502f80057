package acp_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/acp"
	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/mcp"
)

// authTool is a host tool standing in for an OAuth MCP server's
// authorization step: test.authorize hands an authorization URL to the
// opener its call's context carries, as the host's mcp.Authorizer does,
// and reports what happened.
type authTool struct{}

func (authTool) Tools() []pablo.ToolSpec {
	return []pablo.ToolSpec{{ID: "test.authorize", Description: "opens an authorization URL",
		InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false}`)}}
}

func (authTool) Call(ctx context.Context, _ pablo.ToolInvocation) pablo.ToolResult {
	open := mcp.AuthorizationOpenerFrom(ctx)
	if open == nil {
		return pablo.ToolCompleted(map[string]any{"report": "no opener"})
	}
	err := open(ctx, mcp.AuthorizationRequest{Server: "linear", Issuer: "https://auth.example", State: "st-1",
		URL: "https://auth.example/authorize?state=st-1&code_challenge=c", Scopes: []string{"read"}})
	if err != nil {
		return pablo.ToolCompleted(map[string]any{"report": "refused: " + err.Error()})
	}
	return pablo.ToolCompleted(map[string]any{"report": "opened"})
}

// An OAuth MCP server's authorization step reaches a client that
// negotiated pablo/authorization-v1 as _pablo/v1/authorize, bound to the
// session and naming the server, issuer, URL and scopes (never a state or
// verifier of its own: the redirect goes to the host's listener); only the
// outcome "opened" hands the step over, any other answer or an error
// answer refuses it with a reason. A client without the extension gives
// the host no opener, so the host keeps to its stored grants. The opener
// is on the context a task's catalogs are opened with (where an MCP
// server is authorized at startup) and on its calls' (a step-up).
func TestAuthorizationURLGoesToTheClientThroughTheExtension(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		ext    bool
		answer string // a result; "" sends an error answer
		report string
	}{
		{"opened", true, `{"outcome":"opened"}`, "opened"},
		{"declined", true, `{"outcome":"declined"}`, `refused: the ACP client did not open the authorization URL`},
		{"an error answer", true, "", "refused: the ACP client answered _pablo/v1/authorize with an error"},
		{"not negotiated", false, "", "no opener"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var atOpen atomic.Bool
			fx := newFixture(t, fixtureOptions{
				script: `{"turns":[{"text":["x"],"tool_calls":[{"name":"test_authorize","arguments":{}}]},{"text":["done"]}]}`,
				runtime: func(o *pablo.RuntimeOptions) {
					set, err := authority.New(authority.Config{Host: []authority.ID{"test.authorize"}})
					if err != nil {
						t.Fatal(err)
					}
					o.Authority, o.Catalogs = set, []pablo.ToolCatalog{authTool{}}
					// Where the MCP catalog opens a task's servers (and
					// authorizes them at startup): the opener is there too.
					o.OpenCatalogs = func(ctx context.Context, _ pablo.TaskInfo) ([]pablo.ToolCatalog, error) {
						atOpen.Store(mcp.AuthorizationOpenerFrom(ctx) != nil)
						return nil, nil
					}
				},
			})
			p := serve(t, fx.sessions, acp.Options{Clock: newFakeClock()})
			if tc.ext {
				p.initialize(acp.ExtAuthorization)
			} else {
				p.initialize()
			}
			sid := p.newSession(2, fx.ws)
			p.request(3, "session/prompt", textPrompt(sid, "connect"))
			var raws []string
			asked := false
			for {
				f, ok := p.next()
				if !ok {
					t.Fatal("the connection ended before the answer")
				}
				raws = append(raws, f.raw)
				if f.Method == acp.MethodAuthorize {
					asked = true
					var req map[string]any
					jsonUnmarshal(t, f.Params, &req)
					b, _ := json.Marshal(req)
					want := `{"issuer":"https://auth.example","scopes":["read"],"server":"linear","sessionId":"` + sid +
						`","url":"https://auth.example/authorize?state=st-1\u0026code_challenge=c"}`
					if string(b) != want {
						t.Fatalf("the request is\n%s\nwant\n%s", b, want)
					}
					if tc.answer == "" {
						p.send(`{"jsonrpc":"2.0","id":` + string(f.ID) + `,"error":{"code":-32603,"message":"no"}}`)
					} else {
						p.send(`{"jsonrpc":"2.0","id":` + string(f.ID) + `,"result":` + tc.answer + `}`)
					}
				}
				if f.Method == "" && string(f.ID) == "3" {
					break
				}
			}
			all := strings.Join(raws, "\n")
			if atOpen.Load() != tc.ext {
				t.Fatalf("the opener on the catalogs' open: %v, want %v", atOpen.Load(), tc.ext)
			}
			if asked != tc.ext || !strings.Contains(all, tc.report) {
				t.Fatalf("asked %v; report %q not in the frames:\n%s", asked, tc.report, all)
			}
		})
	}
}
