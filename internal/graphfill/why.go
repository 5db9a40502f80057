package graphfill

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/graph"
	"github.com/pabloagent/pablo/internal/suggest"
	"github.com/pabloagent/pablo/skills"
)

// Why explains capability: a native tool (fs.write), an MCP tool
// (mcp/records/lookup) or server (records), a Skill (team/review), an A2A
// remote, a model route or a model, or a graph node ID. A name that is
// none of them fails with [graph.ErrUnknownCapability], saying what to name.
func Why(ctx context.Context, d *Source, capability string, opts graph.Options) (*graph.Explanation, error) {
	if capability == "" || len(capability) > graph.MaxCapabilityBytes || strings.ContainsAny(capability, " \t\r\n") {
		return nil, fmt.Errorf("%w: the capability must be 1..%d bytes with no whitespace, got %q", graph.ErrUnknownCapability, graph.MaxCapabilityBytes, truncateName(capability))
	}
	g, err := Graph(ctx, d, opts)
	if err != nil {
		return nil, err
	}
	node, decide := g.NodeFor(capability)
	if node == "" && isNativeTool(authority.ID(capability)) {
		// A native tool the configuration leaves off: the decision says
		// which layer.
		dec, err := d.Decide(ctx, authority.ID(capability), nil)
		if err != nil {
			return nil, err
		}
		n := graph.Node{ID: "tool:" + capability, Kind: graph.KindTool, Capability: capability, State: graph.Denied,
			Reasons: []graph.Reason{{Code: "policy_denied", Layer: dec.Layer, Rule: dec.RuleID, Detail: dec.Reason}}}
		if dec.Allowed {
			n.Reasons = []graph.Reason{{Code: "tool_not_enabled", Detail: "the deployment does not enable " + capability + "; enable it in options"}}
			n.State = graph.Unsupported
		}
		return &graph.Explanation{Capability: capability, Node: n.ID, Decision: &dec, Chain: []graph.Node{n}, Causes: n.Reasons, Digest: g.Digest}, nil
	}
	if node == "" {
		return nil, fmt.Errorf("%w: %q is no capability of this deployment%s; name a native tool (fs.read), mcp/SERVER/TOOL of a configured server, a Skill ROOT/NAME, a remote, a route or a model", graph.ErrUnknownCapability, capability, suggest.DidYouMean(capability, g.KnownNames()))
	}
	e := &graph.Explanation{Capability: capability, Node: node, Chain: g.Chain(node), Causes: g.Causes(node), Digest: g.Digest}
	if e.Causes == nil {
		e.Causes = []graph.Reason{}
	}
	n, _ := g.Node(node)
	e.Admitted = n.State.Usable()
	switch {
	case n.Kind == graph.KindSkill:
		// The runtime activates a Skill the selection names, unless the
		// authority denies its ID (skillSelection); its requirements'
		// readiness is explained, and does not stop the activation.
		if err := d.whySkill(ctx, n, e); err != nil {
			return nil, err
		}
		return e, nil
	case n.Kind == graph.KindRemote || n.Kind == graph.KindChildren:
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
			if n.State == graph.Ready {
				e.Causes = append(e.Causes, graph.Reason{Code: "policy_denied", Layer: dec.Layer, Rule: dec.RuleID, Detail: dec.Reason})
			}
		}
	}
	return e, nil
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

// whySkill sets e for the Skill node n as the runtime decides it: admitted
// when options.skills.activate selects it (by ID or name), the authority
// admits its ID when selected by ID, its activation succeeds and it is
// for the task's kind (graph.Options.TaskKind): a task of another kind
// is neither offered nor activates it (task_kind_mismatch), a denial
// like any other.
func (d *Source) whySkill(ctx context.Context, n graph.Node, e *graph.Explanation) error {
	sel := d.Config.Options.Skills.Activate
	_, name, _ := strings.Cut(n.Capability, "/")
	byID := slices.Contains(sel, n.Capability)
	selected := byID || slices.Contains(sel, name)
	failed := false
	for _, r := range n.Reasons {
		failed = failed || r.Code == "skill_activation_failed" || r.Code == string(skills.CodeTaskKindMismatch)
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
		e.Causes = append(e.Causes, graph.Reason{Code: "skill_not_activated",
			Detail: "Skill " + n.Capability + " is discovered but options.skills.activate does not select it; add it there (or pass --skill) to activate it"})
	}
	return nil
}
