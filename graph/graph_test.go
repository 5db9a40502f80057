package graph_test

import (
	"testing"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/graph"
)

// A node is ready only when every node it requires is: a missing grant
// two edges down makes both nodes above it unready, each naming the node
// it comes from, and Causes follows them down to the grant.
func TestReadinessFollowsRequiresEdgesToTheRootCause(t *testing.T) {
	b := graph.NewBuilder("fp", false)
	b.Node(graph.Node{ID: "tool:x", Kind: graph.KindTool})
	b.Node(graph.Node{ID: "mcp:s", Kind: graph.KindMCPServer})
	b.Node(graph.Node{ID: "credential:K@d", Kind: graph.KindCredential})
	b.Edge("tool:x", "mcp:s", graph.EdgeRequires)
	b.Edge("mcp:s", "credential:K@d", graph.EdgeRequires)
	b.Set("credential:K@d", graph.MissingGrant, graph.Reason{Code: "credential_unavailable", Credential: "K", Detail: "set K"})
	g := b.Graph()
	for _, id := range []string{"tool:x", "mcp:s", "credential:K@d"} {
		if n, _ := g.Node(id); n.State != graph.MissingGrant {
			t.Errorf("%s is %s, want missing_grant", id, n.State)
		}
	}
	causes := g.Causes("tool:x")
	if len(causes) != 1 || causes[0].Code != "credential_unavailable" || causes[0].Credential != "K" {
		t.Fatalf("causes of tool:x = %+v, want the one missing grant", causes)
	}
	chain := g.Chain("tool:x")
	if len(chain) != 3 || chain[0].ID != "tool:x" || chain[1].ID != "mcp:s" || chain[2].ID != "credential:K@d" {
		t.Fatalf("chain of tool:x = %+v, want tool:x, mcp:s, credential:K@d", chain)
	}
	if len(g.NotReady()) != 3 {
		t.Errorf("NotReady = %+v, want all three", g.NotReady())
	}
}

// A route is ready when one alternative is, and unsupported, naming each
// alternative, when none is; what a node offers never makes it unready.
func TestARouteNeedsOneReadyAlternativeAndOffersBlockNothing(t *testing.T) {
	build := func(secondReady bool) *graph.Graph {
		b := graph.NewBuilder("fp", false)
		b.Node(graph.Node{ID: "route:r", Kind: graph.KindRoute})
		b.Node(graph.Node{ID: "model:a", Kind: graph.KindModel})
		b.Node(graph.Node{ID: "model:b", Kind: graph.KindModel})
		b.Node(graph.Node{ID: "tools", Kind: graph.KindToolProfile})
		b.Node(graph.Node{ID: "tool:fs.write", Kind: graph.KindTool})
		b.Edge("route:r", "model:a", graph.EdgeAlternative)
		b.Edge("route:r", "model:b", graph.EdgeAlternative)
		b.Edge("tools", "tool:fs.write", graph.EdgeOffers)
		b.Set("model:a", graph.Unsupported, graph.Reason{Code: "model_capability_missing", Detail: "x"})
		if !secondReady {
			b.Set("model:b", graph.Unsupported, graph.Reason{Code: "model_capability_missing", Detail: "x"})
		}
		b.Deny("tool:fs.write", authority.Decision{Allowed: false, Layer: "ops", RuleID: "ops.deny", Reason: "no"})
		return b.Graph()
	}
	if n, _ := build(true).Node("route:r"); n.State != graph.Ready {
		t.Errorf("route with one ready alternative is %s, want ready", n.State)
	}
	g := build(false)
	n, _ := g.Node("route:r")
	if n.State != graph.Unsupported || len(n.Reasons) != 2 || n.Reasons[0].Code != "route_unsatisfiable" {
		t.Errorf("route with no ready alternative = %+v, want unsupported with route_unsatisfiable per alternative", n)
	}
	if n, _ := g.Node("tools"); n.State != graph.Ready {
		t.Errorf("the tool profile is %s because a tool it offers is denied, want ready", n.State)
	}
}

// The digest covers what the graph means, never its live state: a node's
// readiness and reasons do not change it; an attribute does.
func TestDigestCoversMeaningNotLiveState(t *testing.T) {
	build := func(unhealthy bool, version string) *graph.Graph {
		b := graph.NewBuilder("fp", unhealthy)
		b.Node(graph.Node{ID: "mcp:s", Kind: graph.KindMCPServer, Attributes: map[string]string{"transport": version}})
		if unhealthy {
			b.Set("mcp:s", graph.Unhealthy, graph.Reason{Code: "mcp_failed", Detail: "down"})
		}
		return b.Graph()
	}
	if a, b := build(false, "stdio").Digest, build(true, "stdio").Digest; a != b {
		t.Errorf("an unhealthy probe changed the digest: %s vs %s", a, b)
	}
	if a, b := build(false, "stdio").Digest, build(false, "http").Digest; a == b {
		t.Errorf("a changed attribute left the digest %s", a)
	}
}

// An approval gate is usable and gives way to any reason the node cannot
// be used at all; NotReady leaves it out and ApprovalGated lists it.
func TestAnApprovalGateIsUsableAndGivesWayToADenial(t *testing.T) {
	gated := authority.Decision{Allowed: true}
	gated.RequireApproval("options.approvals", "options.approvals.filesystem_write")
	b := graph.NewBuilder("fp", false)
	b.Node(graph.Node{ID: "tool:fs.write", Kind: graph.KindTool})
	b.Node(graph.Node{ID: "tool:fs.edit", Kind: graph.KindTool})
	b.Gate("tool:fs.write", gated)
	b.Gate("tool:fs.edit", gated)
	b.Set("tool:fs.edit", graph.Unsupported, graph.Reason{Code: "sandbox_unavailable", Detail: "x"})
	g := b.Graph()
	if len(g.NotReady()) != 1 || g.NotReady()[0].ID != "tool:fs.edit" {
		t.Errorf("NotReady = %+v, want only tool:fs.edit", g.NotReady())
	}
	if ag := g.ApprovalGated(); len(ag) != 1 || ag[0].ID != "tool:fs.write" || ag[0].Reasons[0].Code != "approval_required" {
		t.Errorf("ApprovalGated = %+v, want tool:fs.write with approval_required", ag)
	}
}
