package pablo

import (
	"context"
	"encoding/json"

	"github.com/pabloagent/pablo/authority"

	"github.com/pabloagent/pablo/graph"
	"github.com/pabloagent/pablo/internal/graphfill"
)

// Graph computes the deployment's capability requirement graph: the tool
// profile (native tools, the literal command policy, the sandbox), each
// MCP server (transport, credential references, health, discovered tools
// with their digests when opts.Health holds them), each Skill (required
// tools and servers, output contract, validation), A2A remotes, model
// routes and the credentials they use, each with its readiness and
// reasons. Decisions come from Deployment.Decide, the function the runtime
// and `pablo policy check` use. It reads credential sources to learn
// whether they resolve, never records a value, and starts no MCP server;
// a required sandbox is checked with one bubblewrap run.
func (d *Deployment) Graph(ctx context.Context, opts graph.Options) (*graph.Graph, error) {
	return graphfill.Graph(ctx, d.graphSource(opts.Roles), opts)
}

// Why explains capability: a native tool (fs.write), an MCP tool
// (mcp/records/lookup) or server (records), a Skill (team/review), an A2A
// remote, a model route or a model, or a graph node ID. A name that is
// none of them fails with [graph.ErrUnknownCapability], saying what to name.
func (d *Deployment) Why(ctx context.Context, capability string, opts graph.Options) (*graph.Explanation, error) {
	return graphfill.Why(ctx, d.graphSource(opts.Roles), capability, opts)
}

// graphSource is what the graph is filled from: the configuration and the
// runtime's own decision function, for a task holding roles.
func (d *Deployment) graphSource(roles []string) *graphfill.Source {
	decide := func(ctx context.Context, id authority.ID, args json.RawMessage) (authority.Decision, error) {
		return d.decideAs(ctx, id, args, roles)
	}
	return &graphfill.Source{Config: d.c, Decision: decide, Roles: roles, SkillOptions: d.SkillOptions, Memory: d.memoryGraph}
}
