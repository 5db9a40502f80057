package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/graph"
)

// readinessExit maps a graph node's readiness to the doctor exit code
// that names its cause (REFERENCE §2): a missing grant is a credential
// failure, a denial a policy one, an unhealthy server an MCP one, and
// what cannot work here is unsupported.
func readinessExit(r graph.Readiness) int {
	switch r {
	case graph.MissingGrant:
		return doctorCredential
	case graph.Denied:
		return doctorPolicyDenied
	case graph.Unhealthy:
		return doctorMCP
	}
	return doctorUnsupported
}

// graph computes the capability requirement graph (with the health
// --probe mcp found) and reports one finding per node that is not ready,
// each naming its first reason and, as its code, its root cause's; a
// node policy turned off on purpose (a denied tool or optional server
// nothing requires) is reported, never failed.
func (dr *doctor) graph(ctx context.Context, d *pablo.Deployment, h *host, fixture bool, roles []string, kind string) {
	g, err := d.Graph(ctx, graph.Options{LookupEnv: h.lookupEnv, Health: dr.health, Cards: dr.cards, HostModel: fixture, Bubblewrap: h.bubblewrap, Roles: roles, TaskKind: kind})
	if err != nil {
		dr.fail("graph", doctorInvalid, "invalid_configuration", err.Error())
		return
	}
	dr.roles(g)
	required := map[string]bool{}
	for _, e := range g.Edges {
		if e.Kind != "offers" {
			required[e.To] = true
		}
	}
	bad := 0
	for _, n := range g.NotReady() {
		name := "graph " + n.ID
		r := n.Reasons[0]
		cause := r
		if c := g.Causes(n.ID); len(c) > 0 {
			cause = c[0]
		}
		detail := fmt.Sprintf("%s %s: %s", n.Kind, n.State, r.Detail)
		if r.Layer != "" {
			detail += fmt.Sprintf(" (layer %q rule %q)", r.Layer, r.Rule)
		}
		optional := n.Kind == "tool" || n.Kind == "mcp_tool" || (n.Kind == "mcp_server" && n.Attributes["required"] != "true")
		if n.State == graph.Denied && optional && !required[n.ID] {
			dr.skip(name, detail+"; nothing requires it")
			continue
		}
		// An optional server that cannot serve, and a credential only
		// optional servers use, leave those servers out of a run: as
		// `pablo mcp probe`, reported, never failed (serverExit).
		if (n.Kind == "mcp_server" && optional && !required[n.ID]) || (n.Kind == "credential" && onlyOptionalServersNeed(g, n.ID, required)) {
			dr.skip(name, detail+"; only an optional MCP server needs it, and a run leaves that server out")
			continue
		}
		if r.Code == "model_capability_missing" && n.Kind == "model" && routeReady(g) {
			dr.skip(name, detail+"; another entry serves the route")
			continue
		}
		dr.fail(name, readinessExit(n.State), cause.Code, detail)
		bad++
	}
	// An approval-gated node is usable: its calls wait for the task's
	// approver, and with no channel they are denied. Say which rule asks.
	for _, n := range g.ApprovalGated() {
		for _, r := range n.Reasons {
			if r.Code == "approval_required" {
				dr.ok("graph "+n.ID, "%s approval_gated: every call waits for the task's approver (layer %q rule %q)", n.Kind, r.Layer, r.Rule)
				break
			}
		}
	}
	if bad == 0 {
		dr.ok("graph", "%d nodes, %d edges, every required node ready; digest %s", len(g.Nodes), len(g.Edges), g.Digest)
	}
}

// roles reports the tool profile's readiness check "required roles
// admitted": ok when the task's roles (--role) hold every role the
// deployment requires, a warning naming each one missing (what requires
// it is denied, and fails below only when something required needs it).
func (dr *doctor) roles(g *graph.Graph) {
	n, ok := g.Node("tools")
	if !ok || n.Attributes["required_roles"] == "" {
		return
	}
	var missing []string
	for _, r := range n.Reasons {
		switch r.Code {
		case "required_roles_admitted":
			dr.ok("roles", "required roles admitted: %s", r.Detail)
		case "role_missing":
			missing = append(missing, r.Detail)
		}
	}
	if len(missing) > 0 {
		dr.warn("roles", strings.Join(missing, "; "))
	}
}

// onlyOptionalServersNeed reports whether every node that requires id is
// an optional MCP server nothing else requires.
func onlyOptionalServersNeed(g *graph.Graph, id string, required map[string]bool) bool {
	kinds := map[string]graph.Node{}
	for _, n := range g.Nodes {
		kinds[n.ID] = n
	}
	any := false
	for _, e := range g.Edges {
		if e.To != id || e.Kind == "offers" {
			continue
		}
		from := kinds[e.From]
		if from.Kind != "mcp_server" || from.Attributes["required"] == "true" || required[from.ID] {
			return false
		}
		any = true
	}
	return any
}

// routeReady reports whether the graph's model route is ready.
func routeReady(g *graph.Graph) bool {
	for _, n := range g.Nodes {
		if n.Kind == "model_route" {
			return n.State == graph.Ready
		}
	}
	return false
}

// probeA2A fetches every remote's Agent Card (a public GET: no
// credential, nothing sent to an endpoint) and reports each admitted or
// refused (exit 6, as pablo a2a probe); the graph carries the cards.
func (dr *doctor) probeA2A(ctx context.Context, d *pablo.Deployment, h *host) {
	cards, err := probeCards(ctx, d, h)
	if err != nil {
		dr.fail("probe.a2a", doctorMCP, "a2a_unavailable", err.Error())
		return
	}
	if len(cards) == 0 {
		dr.ok("probe.a2a", "no A2A remote is configured; nothing to fetch")
		return
	}
	dr.cards = cards
	for _, c := range cards {
		if c.Admitted {
			dr.ok("probe.a2a."+c.Remote, "card %s admitted", c.Card.Digest)
		} else {
			dr.fail("probe.a2a."+c.Remote, doctorMCP, "card_"+string(c.Reason), c.Detail)
		}
	}
}
