package graph

import (
	"errors"
	"strings"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/internal/suggest"
)

// ErrUnknownCapability is the kind of the error pablo's Deployment.Why returns for a name
// that is no capability of the deployment: errors.Is(err,
// ErrUnknownCapability).
var ErrUnknownCapability = errors.New("pablo: unknown capability")

// MaxCapabilityBytes bounds the capability name Deployment.Why accepts.
const MaxCapabilityBytes = 512

// Explanation answers why a capability is enabled, disabled or
// unavailable: the decision of the function the runtime and `pablo policy
// check` share, the chain of graph nodes from the capability down to
// what is not ready, and the root causes (layers, rules, missing grants,
// health, what is unsupported). It never holds a credential value.
type Explanation struct {
	// Capability is the name asked about.
	Capability string `json:"capability"`
	// Admitted says a task of this deployment may use it now.
	Admitted bool `json:"admitted"`
	// Node is the graph node that stands for it.
	Node string `json:"node"`
	// Decision is the authority's decision, for a capability policy
	// decides (a tool, an MCP tool); nil for one it does not (a route).
	Decision *authority.Decision `json:"decision,omitempty"`
	// Chain is Node and each node its state comes from, in order.
	Chain []Node `json:"chain"`
	// Causes are the root causes; empty when admitted, except for an
	// approval-gated capability, whose cause names what requires the
	// approval.
	Causes []Reason `json:"causes"`
	// Digest is the digest of the graph the answer was read from.
	Digest string `json:"digest"`
}

// NodeFor finds the node standing for name (a capability ID, mcp/SERVER/TOOL,
// a server, a Skill, a remote, a route, a model or a node ID), and whether
// policy decides name as a capability ID; "" when none does.
func (g *Graph) NodeFor(name string) (string, bool) {
	for _, n := range g.Nodes {
		if n.Capability == name && (n.Kind == KindTool || n.Kind == KindMCPTool) {
			return n.ID, true
		}
	}
	if rest, ok := strings.CutPrefix(name, "mcp/"); ok {
		if server, tool, ok := strings.Cut(rest, "/"); ok && tool != "" {
			if _, ok := g.Node("mcp:" + server); ok {
				return "mcp:" + server, true
			}
		}
	}
	for _, prefix := range []string{"", "mcp:", "skill:", "remote:", "route:", "model:"} {
		if _, ok := g.Node(prefix + name); ok {
			return prefix + name, false
		}
	}
	return "", false
}

// Names lists the names NodeFor finds, each once, in node order: every
// node's capability and its ID without the kind's prefix (the server, the
// Skill ROOT/NAME, the remote, the route, the model). It is what a "did
// you mean" chooses from when a name is none of them.
func (g *Graph) Names() []string {
	seen := map[string]bool{}
	var out []string
	add := func(s string) {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, n := range g.Nodes {
		add(n.Capability)
		for _, prefix := range []string{"mcp:", "skill:", "remote:", "route:", "model:"} {
			if rest, ok := strings.CutPrefix(n.ID, prefix); ok && !strings.Contains(rest, "@") {
				add(rest)
			}
		}
	}
	return out
}

// Chain is node id and every not-ready node its reasons lead to, in the
// order they are reached.
func (g *Graph) Chain(id string) []Node {
	var out []Node
	seen := map[string]bool{}
	var walk func(id string)
	walk = func(id string) {
		n, ok := g.Node(id)
		if seen[id] || !ok {
			return
		}
		seen[id] = true
		out = append(out, n)
		for _, r := range n.Reasons {
			if r.Node != "" {
				walk(r.Node)
			}
		}
	}
	walk(id)
	return out
}

// KnownNames lists every capability name a deployment with this graph
// knows: the native tools, then [Graph.Names].
func (g *Graph) KnownNames() []string {
	var out []string
	for _, id := range authority.NativeTools() {
		out = append(out, string(id))
	}
	return append(out, g.Names()...)
}

// Nearest returns the known name ([Graph.KnownNames]) nearest to a
// misspelt name, or "" when none is near enough (within a third of its
// length, at least 1 and at most 3 edits; an exact match is no
// suggestion): the "did you mean" of every message that refuses a name no
// capability answers to, the CLI's and the library's alike.
func (g *Graph) Nearest(name string) string {
	return suggest.Nearest(name, g.KnownNames())
}
