package main

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/mcp"
)

// An MCP server's form elicitation reaches the official ACP TypeScript
// client when it negotiates pablo/elicitation-v1 (its handler of
// _pablo/v1/elicitation answers, and the server gets the answer with the
// form's defaults); without the extension the client is never asked and
// the server gets a decline. The server is the repository's fault server
// in its elicit mode, run by `pablo acp` as a configured stdio server.
func TestACPElicitationWithTheTypeScriptClient(t *testing.T) {
	if testing.Short() {
		t.Skip("builds pablo and runs Node")
	}
	peers := needACPPeers(t)
	dir := t.TempDir()
	bin := buildPablo(t, dir)
	fault := filepath.Join(dir, "fault")
	if out, err := exec.Command("go", "build", "-o", fault, "../mcpservers/fault").CombinedOutput(); err != nil {
		t.Fatalf("build the fault server: %v\n%s", err, out)
	}
	ask := authority.MCPTool("records", "ask")
	ws := realDir(t)
	cfg := acpDeployment(t, dir, "elicitation",
		`{"turns":[{"text":["Asking."],"tool_calls":[{"name":"`+mcp.Alias(ask)+`","arguments":{}}]},{"text":["Done."]}]}`,
		"[options.shell]\nenabled = false\n[options.mcp.servers.records]\ntransport = \"stdio\"\ncommand = \""+fault+"\"\nargs = [\"-mode\", \"elicit\"]\n")
	runACPPeer(t, peers, map[string]any{
		"sdk": peers.sdk, "bin": bin, "workspace": ws,
		"run": []string{"elicitation"},
		"elicitation": map[string]any{"args": []string{"acp", "--stdio", "--config", cfg, "--bind", "workspace=" + ws},
			"workspace": ws, "capability": string(ask)},
	})
}
