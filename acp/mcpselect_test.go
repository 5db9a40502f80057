package acp_test

import (
	"testing"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/acp"
)

// A session may select host-approved MCP servers, each equal in every
// field; a server that differs in its command, arguments or URL is
// -32602, as are legacy SSE servers.
func TestMCPServersSelectAnExactSubset(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, fixtureOptions{script: `{"turns":[{"text":["ok"]}]}`, sessions: pablo.SessionOptions{MCPServers: []pablo.SessionMCPServer{
		{Name: "records", Command: "/usr/bin/records", Args: []string{"--ro"}},
		{Name: "docs", URL: "https://docs.test/mcp"},
	}}})
	p := serve(t, fx.sessions, acp.Options{Clock: newFakeClock()})
	p.initialize()
	stdio := func(cmd string, args ...string) map[string]any {
		return map[string]any{"name": "records", "command": cmd, "args": args, "env": []any{}}
	}
	http := func(url string) map[string]any {
		return map[string]any{"type": "http", "name": "docs", "url": url, "headers": []any{}}
	}
	cases := []struct {
		name    string
		servers []any
		ok      bool
	}{
		{"none", []any{}, true},
		{"the stdio server", []any{stdio("/usr/bin/records", "--ro")}, true},
		{"both", []any{stdio("/usr/bin/records", "--ro"), http("https://docs.test/mcp")}, true},
		{"other arguments", []any{stdio("/usr/bin/records", "--rw")}, false},
		{"another command", []any{stdio("/tmp/records", "--ro")}, false},
		{"another URL", []any{http("https://evil.test/mcp")}, false},
		{"legacy SSE", []any{map[string]any{"type": "sse", "name": "docs", "url": "https://docs.test/mcp", "headers": []any{}}}, false},
	}
	for i, tc := range cases {
		f := p.call(10+i, "session/new", map[string]any{"cwd": fx.ws, "mcpServers": tc.servers})
		if ok := f.Error == nil; ok != tc.ok || (!ok && f.Error.Code != -32602) {
			t.Errorf("%s: %s", tc.name, f.raw)
		}
	}
}
