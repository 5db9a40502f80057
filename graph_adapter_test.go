package pablo

import (
	"testing"

	"github.com/pabloagent/pablo/graph"

	"github.com/pabloagent/pablo/mcp"
)

// A probed server whose negotiated protocol version this client does not
// implement is unsupported (the adapter check for MCP).
func TestGraphMCPVersionTheClientDoesNotImplementIsUnsupported(t *testing.T) {
	d := graphDeployment(t, "[options.shell]\nenabled = false\n"+graphScriptModel+graphMCPServer, "")
	env := graph.Options{LookupEnv: func(string) (string, bool) { return "x", true }}
	env.Health = []mcp.Health{{Server: "records", State: mcp.Ready, Version: mcp.SupportedVersions()[0]}}
	wantState(t, mustGraph(t, d, env), "mcp:records", graph.Ready, "")
	env.Health = []mcp.Health{{Server: "records", State: mcp.Ready, Version: "1999-01-01"}}
	wantState(t, mustGraph(t, d, env), "mcp:records", graph.Unsupported, "mcp_version_unsupported")
}

// A Skill's required credentials are its required servers': a Skill that
// needs a server whose credential does not resolve is a missing grant,
// naming the credential, its consumer and destination.
func TestGraphSkillRequiringAServerWithAMissingCredential(t *testing.T) {
	skill := "---\nname: review\ndescription: Review things.\nallowed-tools: mcp/records/lookup\n---\nLook the invoice up.\n"
	d := graphDeployment(t, "[options.shell]\nenabled = false\n"+graphScriptModel+graphMCPServer, skill)
	g := mustGraph(t, d, graph.Options{})
	wantState(t, g, "skill:team/review", graph.MissingGrant, "credential_unavailable")
	if c := g.Causes("skill:team/review")[0]; c.Credential != "records" || c.Consumer != "mcp.headers" {
		t.Fatalf("cause %+v", c)
	}
	wantState(t, mustGraph(t, d, graph.Options{LookupEnv: func(string) (string, bool) { return "x", true }}), "skill:team/review", graph.Ready, "")
}
