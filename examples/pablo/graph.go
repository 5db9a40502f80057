package main

import (
	"context"
	"fmt"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/a2a"
	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/graph"
	"github.com/pabloagent/pablo/mcp"
	"github.com/pabloagent/pablo/skills"
)

// graphReportVersion is the version of `pablo graph --json`.
const graphReportVersion = 1

// graphCommand implements `pablo graph [--probe] [--json]`: the
// capability requirement graph with its digest, offline unless --probe
// starts the MCP servers (none treated as required, no tool called) to
// include their live health and discovered tools. It exits 0 whatever
// the readiness: `pablo doctor` is the command that fails on it.
func graphCommand(ctx context.Context, args []string, h *host) error {
	p, err := parseArgs(args, "graph")
	if err != nil {
		return err
	}
	if len(p.args) != 0 {
		return usagef("graph takes no positional arguments, got %q", p.args[0])
	}
	d, err := loadDeployment(ctx, p, h, nil)
	if err != nil {
		return err
	}
	opts, err := graphOptions(ctx, d, h, p)
	if err != nil {
		return err
	}
	g, err := d.Graph(ctx, opts)
	if err != nil {
		return err
	}
	if p.bools["json"] {
		writeJSON(h, struct {
			SchemaVersion int `json:"schema_version"`
			*graph.Graph
		}{graphReportVersion, g})
		return nil
	}
	fmt.Fprintf(h.stdout, "graph %s (%d nodes, %d edges, probed %t)\n", g.Digest, len(g.Nodes), len(g.Edges), g.Probed)
	for _, n := range g.Nodes {
		fmt.Fprintf(h.stdout, "%-13s %-12s %s", n.State, n.Kind, n.ID)
		if n.State != graph.Ready && len(n.Reasons) > 0 {
			fmt.Fprintf(h.stdout, ": %s", oneLine(n.Reasons[0].Detail))
		}
		fmt.Fprintln(h.stdout)
		for _, e := range g.Edges {
			if e.From == n.ID {
				fmt.Fprintf(h.stdout, "    %s %s\n", e.Kind, e.To)
			}
		}
	}
	return nil
}

// probeHealth starts every configured MCP server, none treated as
// required, and closes them without calling a tool: their health.
func probeHealth(ctx context.Context, d *pablo.Deployment, h *host) ([]mcp.Health, error) {
	health, _, err := probeMCP(ctx, d, h)
	return health, err
}

// probeMCP is probeHealth with the admitted tools' definitions (their
// descriptions as the servers wrote them).
func probeMCP(ctx context.Context, d *pablo.Deployment, h *host) ([]mcp.Health, []authority.ToolSpec, error) {
	if len(d.Options().MCP.Servers) == 0 {
		return []mcp.Health{}, nil, nil
	}
	opts, err := d.MCPOptions(pablo.HostOptions{LookupEnv: h.lookupEnv})
	if err != nil {
		return nil, nil, err
	}
	for i := range opts.Servers {
		opts.Servers[i].Required = false
	}
	cat, err := mcp.Open(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	health, tools := cat.Health(), cat.Tools()
	if err := cat.Close(); err != nil {
		return nil, nil, fmt.Errorf("MCP cleanup: %w", err)
	}
	return health, tools, nil
}

// probeCards fetches and admits every configured A2A remote's Agent Card
// (a public GET: no credential is resolved or sent, nothing reaches an
// endpoint), as `pablo a2a probe` does.
func probeCards(ctx context.Context, d *pablo.Deployment, h *host) ([]a2a.Probe, error) {
	if len(d.Options().A2A.Remotes) == 0 {
		return []a2a.Probe{}, nil
	}
	opts, err := d.A2AOptions(pablo.HostOptions{LookupEnv: h.lookupEnv})
	if err != nil {
		return nil, err
	}
	opts.Resolve = nil
	c, err := a2a.NewClient(opts)
	if err != nil {
		return nil, err
	}
	defer c.CloseIdleConnections()
	return c.Probe(ctx), nil
}

// graphOptions are the options `graph` and `why` compute the graph with:
// the host's environment and bubblewrap, and with probe, live MCP health
// and A2A cards.
func graphOptions(ctx context.Context, d *pablo.Deployment, h *host, p *parsed) (graph.Options, error) {
	opts := graph.Options{LookupEnv: h.lookupEnv, Bubblewrap: h.bubblewrap, Roles: p.values["role"], TaskKind: p.one("kind")}
	if err := skills.ValidateTaskKind(opts.TaskKind); err != nil {
		return opts, usagef("--kind: %v", err)
	}
	if err := authority.ValidateRoles(opts.Roles); err != nil {
		return opts, usagef("--role: %v", err)
	}
	if !p.bools["probe"] {
		return opts, nil
	}
	var err error
	if opts.Health, err = probeHealth(ctx, d, h); err != nil {
		return opts, &exitError{code: 6, err: err}
	}
	if opts.Cards, err = probeCards(ctx, d, h); err != nil {
		return opts, err
	}
	return opts, nil
}
