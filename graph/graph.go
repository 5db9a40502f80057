// Package graph is a deployment's capability requirement graph (seed
// 002): the nodes a deployment's tools, sandboxes, MCP servers, Skills,
// children, A2A remotes, model routes and credentials are, the edges
// between them, each node's readiness and the reasons for it, and the
// answer to why a capability is enabled or not. A host computes one with
// pablo's Deployment.Graph and Deployment.Why and reads it here; the
// Builder is how those methods assemble it.
package graph

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"

	"github.com/pabloagent/pablo/a2a"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/mcp"
)

// Readiness is the readiness state of one capability node (seed 002).
type Readiness string

// The readiness states. A host UI shows the state and its reasons; it
// never needs to guess why a capability is off.
const (
	// Ready: the node is admitted and everything it requires is ready.
	Ready Readiness = "ready"
	// MissingGrant: a credential the node needs does not resolve for its
	// consumer and destination (the reason names all three, never a value).
	MissingGrant Readiness = "missing_grant"
	// Denied: a policy layer denies the node (the reason names the layer
	// and the rule).
	Denied Readiness = "denied"
	// Unhealthy: a live probe found the node failed (the reason holds the
	// health state and its evidence). A Degraded server stays ready with
	// the reason recorded; its unavailable tools are denied nodes.
	Unhealthy Readiness = "unhealthy"
	// Unsupported: something the node needs is missing here or cannot
	// work as configured (the sandbox, a rule example, an adapter).
	Unsupported Readiness = "unsupported"
	// ApprovalGated: every layer admits the node and everything it
	// requires is ready, but each of its calls waits for the task's
	// Approver (docs/approvals.md); the reason (approval_required) names
	// the layer and rule, class key or privileged default that asks. With
	// no approval channel such a call is denied. It is usable: a node
	// requiring it stays ready.
	ApprovalGated Readiness = "approval_gated"
)

// Usable reports whether a node in state r can be used: ready, or ready
// behind an approval.
func (r Readiness) Usable() bool { return r == Ready || r == ApprovalGated }

// The node kinds of a Graph (Node.Kind).
const (
	KindToolProfile = "tool_profile"
	KindTool        = "tool"
	KindShellRules  = "shell_rules"
	KindSandbox     = "sandbox"
	KindMCPServer   = "mcp_server"
	KindMCPTool     = "mcp_tool"
	KindSkill       = "skill"
	KindRemote      = "remote"
	KindChildren    = "children"
	KindRoute       = "model_route"
	KindModel       = "model"
	KindCredential  = "credential"
	// KindMemory is the memory repository of options.memory: its ref and
	// the commit the ref names now.
	KindMemory = "memory"
)

// The edge kinds of a Graph (Edge.Kind): a node is ready only when every
// node it requires is; a route is ready when one of its alternatives is;
// what a node offers (a tool profile's tools, a server's tools) does not
// make it unready.
const (
	EdgeRequires    = "requires"
	EdgeAlternative = "alternative"
	EdgeOffers      = "offers"
)

// Reason is one reason for a node's readiness state. Only the fields
// that apply are set; none ever holds a credential value.
type Reason struct {
	// Code is a stable, machine-readable reason (policy_denied,
	// credential_unavailable, mcp_failed, sandbox_unavailable, ...).
	Code string `json:"code"`
	// Layer and Rule are the deciding layer and rule of a denial.
	Layer string `json:"layer,omitempty"`
	Rule  string `json:"rule,omitempty"`
	// Credential, Consumer and Destination name a missing grant.
	Credential  string `json:"credential,omitempty"`
	Consumer    string `json:"consumer,omitempty"`
	Destination string `json:"destination,omitempty"`
	// Health is a probed MCP health state (Failed, Degraded, ...), or a
	// fetched Agent Card's admission (admitted, refused).
	Health string `json:"health,omitempty"`
	// Digest is live evidence's digest: a fetched Agent Card's. It is
	// not part of the graph digest.
	Digest string `json:"digest,omitempty"`
	// Node is the required node this reason comes from, when the cause is
	// further down the graph.
	Node string `json:"node,omitempty"`
	// Detail says, in a sentence, what to change.
	Detail string `json:"detail"`
}

// Node is one capability or requirement of a deployment.
type Node struct {
	// ID is unique in its graph: "tool:fs.read", "mcp:records",
	// "skill:skills/invoices", "credential:NAME@DESTINATION", ...
	ID string `json:"id"`
	// Kind is what the node is: tool_profile, tool, shell_rules, sandbox,
	// mcp_server, mcp_tool, skill, remote, children, model_route, model or
	// credential.
	Kind string `json:"kind"`
	// Capability is the capability ID policy decides, when the node has one.
	Capability string `json:"capability,omitempty"`
	// State and Reasons are its readiness.
	State   Readiness `json:"state"`
	Reasons []Reason  `json:"reasons"`
	// Attributes describe the node (transport, sandbox profile, definition
	// digest, protocol version, credential references by name). They hold
	// nothing time- or health-dependent: the graph digest covers them.
	Attributes map[string]string `json:"attributes,omitempty"`
}

// Edge is one requirement: From needs (or offers) To.
type Edge struct {
	From string `json:"from"`
	To   string `json:"to"`
	// Kind is requires, alternative or offers.
	Kind string `json:"kind"`
}

// Graph is a deployment's capability requirement graph: the nodes in a
// stable order, the edges between them, and a digest of everything in it
// that is neither time- nor health-dependent.
type Graph struct {
	// Fingerprint is the deployment's fingerprint.
	Fingerprint string `json:"fingerprint"`
	// Digest is "sha256:" over the fingerprint, the nodes (ID, kind,
	// capability, attributes) and the edges: equal for an offline and a
	// probed graph of one deployment.
	Digest string `json:"digest"`
	// Probed says whether live MCP health is included.
	Probed bool   `json:"probed"`
	Nodes  []Node `json:"nodes"`
	Edges  []Edge `json:"edges"`
}

// Options are what computing a graph may use besides the deployment.
type Options struct {
	// LookupEnv and Host resolve credential sources, as for a run; nil
	// means none (every credential is then a missing grant).
	LookupEnv func(string) (string, bool)
	Host      func(ctx context.Context, name string) (string, bool, error)
	// HostModel says the host supplies the model (HostOptions.Model, a
	// fixture endpoint): the configured model's credentials are not used.
	HostModel bool
	// Health is live MCP health (from mcp.Catalog.Health); nil computes the
	// graph offline, every server's health Unknown.
	Health []mcp.Health
	// Cards are live A2A card probes (from a2a.Client.Probe); nil leaves
	// every remote's card unfetched. An admitted card's digest and a
	// refused card's reason land on the remote's node.
	Cards []a2a.Probe
	// Roles are the roles of the task the graph is computed for
	// (TaskRequest.Roles, pablo run --role): a capability requiring a
	// role outside them is denied with reason role_missing, and the tool
	// profile's readiness check "required roles admitted" compares them
	// with every role the deployment requires. Nil: a task given none.
	Roles []string
	// TaskKind is the kind of the task the graph is computed for
	// (TaskRequest.Kind, pablo run --kind): a Skill whose task-kinds do
	// not list it is denied with reason task_kind_mismatch (the task
	// neither activates nor reads it). Empty: a task of no kind, which
	// takes every Skill.
	TaskKind string
	// Bubblewrap is the bubblewrap executable a required sandbox is
	// checked with (empty: the default path).
	Bubblewrap string
	// Clock stamps nothing in the graph; it is accepted so a host passes
	// one clock everywhere.
	Clock ledger.Clock
}

// Node returns the node with id.
func (g *Graph) Node(id string) (Node, bool) {
	for _, n := range g.Nodes {
		if n.ID == id {
			return n, true
		}
	}
	return Node{}, false
}

// NotReady lists the nodes that are not ready, in graph order. An
// approval-gated node is usable, so it is not listed: ApprovalGated
// lists those.
func (g *Graph) NotReady() []Node {
	var out []Node
	for _, n := range g.Nodes {
		if !n.State.Usable() {
			out = append(out, n)
		}
	}
	return out
}

// ApprovalGated lists the approval-gated nodes, in graph order.
func (g *Graph) ApprovalGated() []Node {
	var out []Node
	for _, n := range g.Nodes {
		if n.State == ApprovalGated {
			out = append(out, n)
		}
	}
	return out
}

// requirements lists the edges leaving id.
func (g *Graph) requirements(id string) []Edge {
	var out []Edge
	for _, e := range g.Edges {
		if e.From == id {
			out = append(out, e)
		}
	}
	return out
}

// digest is "sha256:" over what the graph means, never its live state.
func (g *Graph) digest() string {
	type node struct {
		ID         string            `json:"id"`
		Kind       string            `json:"kind"`
		Capability string            `json:"capability,omitempty"`
		Attributes map[string]string `json:"attributes,omitempty"`
	}
	v := struct {
		Fingerprint string `json:"fingerprint"`
		Nodes       []node `json:"nodes"`
		Edges       []Edge `json:"edges"`
	}{Fingerprint: g.Fingerprint, Edges: g.Edges}
	for _, n := range g.Nodes {
		v.Nodes = append(v.Nodes, node{n.ID, n.Kind, n.Capability, n.Attributes})
	}
	b, _ := json.Marshal(v) // maps marshal with sorted keys
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// settle propagates readiness along requires and alternative edges until
// nothing changes (the graph is small and acyclic by construction).
func (g *Graph) settle() {
	index := map[string]int{}
	for i, n := range g.Nodes {
		index[n.ID] = i
	}
	for changed := true; changed; {
		changed = false
		for i := range g.Nodes {
			n := &g.Nodes[i]
			if !n.State.Usable() {
				continue
			}
			var alts, blocked []Node
			anyReady := false
			for _, e := range g.requirements(n.ID) {
				j, ok := index[e.To]
				if !ok {
					continue
				}
				req := g.Nodes[j]
				switch e.Kind {
				case EdgeRequires:
					if !req.State.Usable() {
						blocked = append(blocked, req)
					}
				case EdgeAlternative:
					alts = append(alts, req)
					anyReady = anyReady || req.State.Usable()
				}
			}
			if len(alts) > 0 && !anyReady {
				n.State = Unsupported
				for _, a := range alts {
					n.Reasons = append(n.Reasons, Reason{Code: "route_unsatisfiable", Node: a.ID, Detail: "no entry of the route is ready: " + a.ID + " is " + string(a.State)})
				}
				changed = true
				continue
			}
			if len(blocked) > 0 {
				n.State = blocked[0].State
				for _, b := range blocked {
					n.Reasons = append(n.Reasons, Reason{Code: "requirement_not_ready", Node: b.ID, Detail: "requires " + b.ID + ", which is " + string(b.State)})
				}
				changed = true
			}
		}
	}
}

// sortGraph orders nodes by kind rank then ID, and edges by endpoints.
func (g *Graph) sortGraph() {
	rank := map[string]int{KindToolProfile: 0, KindTool: 1, KindShellRules: 2, KindSandbox: 3, KindMCPServer: 4, KindMCPTool: 5,
		KindSkill: 6, KindChildren: 7, KindRemote: 8, KindRoute: 9, KindModel: 10, KindCredential: 11}
	sort.SliceStable(g.Nodes, func(i, j int) bool {
		a, b := g.Nodes[i], g.Nodes[j]
		if rank[a.Kind] != rank[b.Kind] {
			return rank[a.Kind] < rank[b.Kind]
		}
		return a.ID < b.ID
	})
	sort.Slice(g.Edges, func(i, j int) bool {
		a, b := g.Edges[i], g.Edges[j]
		if a.From != b.From {
			return a.From < b.From
		}
		return a.To < b.To
	})
}

// Causes returns the root causes of node id's state: its own reasons
// and, for a reason that comes from a required node, that node's causes,
// followed down the graph. A ready node has none.
func (g *Graph) Causes(id string) []Reason {
	var out []Reason
	seen := map[string]bool{}
	var walk func(id string)
	walk = func(id string) {
		if seen[id] {
			return
		}
		seen[id] = true
		n, ok := g.Node(id)
		if !ok || n.State == Ready {
			return
		}
		for _, r := range n.Reasons {
			if r.Node != "" {
				walk(r.Node)
				continue
			}
			out = append(out, r)
		}
	}
	walk(id)
	return out
}
