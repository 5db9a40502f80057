package graph

import (
	"fmt"

	"github.com/pabloagent/pablo/authority"
)

// Builder assembles a Graph: nodes and edges as they are found, each
// node's own state and reasons; Graph then propagates readiness along the
// edges, orders the graph and computes its digest. pablo's
// Deployment.Graph uses one; a Builder is not safe for concurrent use.
type Builder struct {
	g     Graph
	index map[string]int
}

// NewBuilder starts the graph of the deployment with fingerprint; probed
// says whether live health (MCP health, Agent Cards) is part of it.
func NewBuilder(fingerprint string, probed bool) *Builder {
	return &Builder{g: Graph{Fingerprint: fingerprint, Probed: probed}, index: map[string]int{}}
}

// Node adds n, Ready unless its State says otherwise, and returns it; a
// node whose ID is already in the graph is returned as it is.
func (b *Builder) Node(n Node) *Node {
	if i, ok := b.index[n.ID]; ok {
		return &b.g.Nodes[i]
	}
	if n.State == "" {
		n.State = Ready
	}
	if n.Reasons == nil {
		n.Reasons = []Reason{}
	}
	b.index[n.ID] = len(b.g.Nodes)
	b.g.Nodes = append(b.g.Nodes, n)
	return &b.g.Nodes[len(b.g.Nodes)-1]
}

// Lookup returns the node with id, or nil when the graph has none. The
// pointer is valid until the next Node call.
func (b *Builder) Lookup(id string) *Node {
	i, ok := b.index[id]
	if !ok {
		return nil
	}
	return &b.g.Nodes[i]
}

// Edge adds the edge from → to of kind (EdgeRequires, EdgeAlternative or
// EdgeOffers).
func (b *Builder) Edge(from, to, kind string) {
	b.g.Edges = append(b.g.Edges, Edge{From: from, To: to, Kind: kind})
}

// Set records reason r on node id with state. The first state that is not
// ready stays; an approval gate gives way to any reason the node cannot
// be used at all.
func (b *Builder) Set(id string, state Readiness, r Reason) {
	n := &b.g.Nodes[b.index[id]]
	if n.State == Ready || (n.State == ApprovalGated && state != ApprovalGated) {
		n.State = state
	}
	n.Reasons = append(n.Reasons, r)
}

// Note records reason r on node id without changing its state (a degraded
// server, an admitted card, a flagged claim).
func (b *Builder) Note(id string, r Reason) {
	n := &b.g.Nodes[b.index[id]]
	n.Reasons = append(n.Reasons, r)
}

// Deny records a policy denial on node id when d does not allow, and the
// approval gate when it allows only behind an approval.
func (b *Builder) Deny(id string, d authority.Decision) {
	if !d.Allowed {
		code := "policy_denied"
		if d.MissingRole != "" {
			code = "role_missing"
		}
		b.Set(id, Denied, Reason{Code: code, Layer: d.Layer, Rule: d.RuleID, Detail: d.Reason})
		return
	}
	b.Gate(id, d)
}

// Gate records on node id that every call waits for the task's approver
// when d needs approval, naming what requires it.
func (b *Builder) Gate(id string, d authority.Decision) {
	if !d.Allowed || !d.NeedsApproval {
		return
	}
	src := authority.ApprovalSourceOf(d)
	b.Set(id, ApprovalGated, Reason{Code: "approval_required", Layer: src.Layer, Rule: src.RuleID,
		Detail: fmt.Sprintf("every call waits for the task's approver (required by layer %q rule %q); with no approval channel it is denied", src.Layer, src.RuleID)})
}

// Graph finishes the graph: readiness propagated along requires and
// alternative edges, nodes and edges in their stable order, the digest
// set. The Builder is not used after.
func (b *Builder) Graph() *Graph {
	b.g.settle()
	b.g.sortGraph()
	b.g.Digest = b.g.digest()
	return &b.g
}
