package main

import (
	"context"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/graph"
)

// knownCapability fails with a usage error, and the nearest known name,
// when id (given as what, e.g. "--approve") is no capability of d at all:
// not a native tool and nothing the deployment's offline capability graph
// answers to. A name that exists but is off or denied is known: the
// decision, not this check, says why it cannot run; so does an MCP tool's.
func knownCapability(ctx context.Context, d *pablo.Deployment, h *host, what, id string) error {
	if authority.ID(id).Kind() == authority.KindMCPTool {
		// mcp/SERVER/TOOL: the decision names an unconfigured server
		// (builtin.mcp.unconfigured_server), and a configured server's
		// tools are known only once it answers.
		return nil
	}
	for _, n := range authority.NativeTools() {
		if string(n) == id {
			return nil
		}
	}
	g, err := d.Graph(ctx, graph.Options{LookupEnv: h.lookupEnv, Bubblewrap: h.bubblewrap})
	if err != nil {
		return err
	}
	if node, _ := g.NodeFor(id); node != "" {
		return nil
	}
	return usagef("%s %q: no capability of this deployment is called that%s; name a native tool (fs.read), mcp/SERVER/TOOL of a configured server, a Skill ROOT/NAME or a remote", what, id, didYouMean(g.Nearest(id)))
}

// knownCapabilities checks each of ids as knownCapability does.
func knownCapabilities(ctx context.Context, d *pablo.Deployment, h *host, what string, ids []string) error {
	for _, id := range ids {
		if err := knownCapability(ctx, d, h, what, id); err != nil {
			return err
		}
	}
	return nil
}

// didYouMean is the suffix of a message that refuses an unknown name:
// `; did you mean "X"?` for the nearest known name, or "" for none.
func didYouMean(nearest string) string {
	if nearest == "" {
		return ""
	}
	return `; did you mean "` + nearest + `"?`
}
