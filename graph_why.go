package pablo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/pabloagent/pablo/authority"
)

// ErrUnknownCapability is the kind of the error Why returns for a name
// that is no capability of the deployment: errors.Is(err,
// ErrUnknownCapability).
var ErrUnknownCapability = errors.New("pablo: unknown capability")

// MaxCapabilityBytes bounds the capability name Why accepts.
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
	Chain []GraphNode `json:"chain"`
	// Causes are the root causes; empty when admitted, except for an
	// approval-gated capability, whose cause names what requires the
	// approval.
	Causes []GraphReason `json:"causes"`
	// Digest is the digest of the graph the answer was read from.
	Digest string `json:"digest"`
}

// Why explains capability: a native tool (fs.write), an MCP tool
// (mcp/records/lookup) or server (records), a Skill (team/review), an A2A
// remote, a model route or a model, or a graph node ID. A name that is
// none of them fails with ErrUnknownCapability, saying what to name.
func (d *Deployment) Why(ctx context.Context, capability string, opts GraphOptions) (*Explanation, error) {
	if capability == "" || len(capability) > MaxCapabilityBytes || strings.ContainsAny(capability, " \t\r\n") {
		return nil, fmt.Errorf("%w: the capability must be 1..%d bytes with no whitespace, got %q", ErrUnknownCapability, MaxCapabilityBytes, truncateName(capability))
	}
	g, err := d.Graph(ctx, opts)
	if err != nil {
		return nil, err
	}
	node, decide := g.nodeFor(capability)
	if node == "" && isNativeTool(authority.ID(capability)) {
		// A native tool the configuration leaves off: the decision says
		// which layer.
		dec, err := d.Decide(ctx, authority.ID(capability), nil)
		if err != nil {
			return nil, err
		}
		n := GraphNode{ID: "tool:" + capability, Kind: nodeTool, Capability: capability, State: Denied,
			Reasons: []GraphReason{{Code: "policy_denied", Layer: dec.Layer, Rule: dec.RuleID, Detail: dec.Reason}}}
		if dec.Allowed {
			n.Reasons = []GraphReason{{Code: "tool_not_enabled", Detail: "the deployment does not enable " + capability + "; enable it in options"}}
			n.State = Unsupported
		}
		return &Explanation{Capability: capability, Node: n.ID, Decision: &dec, Chain: []GraphNode{n}, Causes: n.Reasons, Digest: g.Digest}, nil
	}
	if node == "" {
		return nil, fmt.Errorf("%w: %q is no capability of this deployment; name a native tool (fs.read), mcp/SERVER/TOOL of a configured server, a Skill ROOT/NAME, a remote, a route or a model", ErrUnknownCapability, capability)
	}
	e := &Explanation{Capability: capability, Node: node, Chain: g.chain(node), Causes: g.Causes(node), Digest: g.Digest}
	if e.Causes == nil {
		e.Causes = []GraphReason{}
	}
	n, _ := g.Node(node)
	e.Admitted = n.State.usable()
	switch {
	case n.Kind == nodeSkill:
		// The runtime activates a Skill the selection names, unless the
		// authority denies its ID (skillSelection); its requirements'
		// readiness is explained, and does not stop the activation.
		if err := d.whySkill(ctx, n, e); err != nil {
			return nil, err
		}
		return e, nil
	case n.Kind == nodeRemote || n.Kind == nodeChildren:
		// Reached through the subagent tool: its decision.
		dec, err := d.Decide(ctx, authority.Subagent, nil)
		if err != nil {
			return nil, err
		}
		e.Decision = &dec
	}
	if decide {
		dec, err := d.Decide(ctx, authority.ID(capability), nil)
		if err != nil {
			return nil, err
		}
		e.Decision = &dec
		if !dec.Allowed {
			e.Admitted = false
			if n.State == Ready {
				e.Causes = append(e.Causes, GraphReason{Code: "policy_denied", Layer: dec.Layer, Rule: dec.RuleID, Detail: dec.Reason})
			}
		}
	}
	return e, nil
}

// nodeFor finds the node standing for name, and whether policy decides
// name as a capability ID.
func (g *Graph) nodeFor(name string) (string, bool) {
	for _, n := range g.Nodes {
		if n.Capability == name && (n.Kind == nodeTool || n.Kind == nodeMCPTool) {
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

// isNativeTool reports whether id is one of the native tools.
func isNativeTool(id authority.ID) bool {
	switch id {
	case authority.FSRead, authority.FSList, authority.FSSearch, authority.FSWrite, authority.FSEdit,
		authority.ShellRun, authority.SkillRead, authority.Subagent:
		return true
	}
	return false
}

// truncateName keeps an error message short.
func truncateName(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// chain is node id and every not-ready node its reasons lead to, in the
// order they are reached.
func (g *Graph) chain(id string) []GraphNode {
	var out []GraphNode
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

// whySkill sets e for the Skill node n as the runtime decides it: admitted
// when options.skills.activate selects it (by ID or name), the authority
// admits its ID when selected by ID, and its activation succeeds.
func (d *Deployment) whySkill(ctx context.Context, n GraphNode, e *Explanation) error {
	sel := d.c.Options.Skills.Activate
	_, name, _ := strings.Cut(n.Capability, "/")
	byID := slices.Contains(sel, n.Capability)
	selected := byID || slices.Contains(sel, name)
	failed := false
	for _, r := range n.Reasons {
		failed = failed || r.Code == "skill_activation_failed"
	}
	if byID {
		dec, err := d.Decide(ctx, authority.ID(n.Capability), nil)
		if err != nil {
			return err
		}
		e.Decision = &dec
	}
	e.Admitted = selected && !failed && (e.Decision == nil || e.Decision.Allowed)
	if !selected && n.Capability != "" {
		e.Causes = append(e.Causes, GraphReason{Code: "skill_not_activated",
			Detail: "Skill " + n.Capability + " is discovered but options.skills.activate does not select it; add it there (or pass --skill) to activate it"})
	}
	return nil
}
