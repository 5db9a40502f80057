package authority

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/pabloagent/pablo/internal/textx"
)

// Narrowing is a request to shrink an authority, as a child spawn asks. A nil
// list keeps what the parent has; a non-nil list keeps only what it names,
// and every name must already be admitted by the parent.
type Narrowing struct {
	// ID names the new layer (for example "child:<agent id>").
	ID string
	// Tools keeps only these capability IDs (native, host or MCP tools):
	// a non-nil list keeps exactly what it names, so an empty one keeps
	// no tool at all. Keeping a server (MCPServers) keeps none of its
	// tools unless they are named here.
	Tools []ID
	// MCPServers keeps only these MCP servers. With a nil Tools it keeps
	// every tool of these servers the parent admits.
	MCPServers []string
	// Skills keeps only these Skills.
	Skills []ID
	// ReadRoots and WriteRoots keep only these workspace subtrees.
	ReadRoots  []string
	WriteRoots []string
	// Roles, when not nil, keeps only these of the roles the parent
	// holds: a child never gains a role.
	Roles []string
}

// Narrow implements Authority. The result is this Set with the configured
// catalog filtered and one more layer appended, so by construction it can
// only admit less: every decision of the result runs every layer of the
// parent.
func (s *Set) Narrow(n Narrowing) (Authority, error) {
	return s.NarrowSet(n)
}

// NarrowSet is Narrow with a concrete result.
func (s *Set) NarrowSet(n Narrowing) (*Set, error) {
	id := n.ID
	if id == "" {
		id = "child"
	}
	for _, l := range s.layers {
		if l.ID == id {
			return nil, fmt.Errorf("authority: narrowing layer %q already exists", id)
		}
	}
	out := s.clone()
	var errs []error
	if n.Roles != nil {
		for _, r := range n.Roles {
			if !slices.Contains(s.roles, r) {
				errs = append(errs, fmt.Errorf("role %q: %w (the parent does not hold it)", textx.Shorten(r, 64), ErrWiden))
			}
		}
		out.roles = slices.DeleteFunc(out.roles, func(r string) bool { return !slices.Contains(n.Roles, r) })
		out.rolesBound = true
	}
	child := Layer{ID: id, Kind: KindChild, Dimensions: map[Dimension]*Rules{}}

	if n.Tools != nil {
		var mcpTools []Rule
		for _, t := range n.Tools {
			if d := s.Decide(Request{Capability: t}); !d.Allowed {
				errs = append(errs, fmt.Errorf("tool %q: %w (%s)", textx.Shorten(string(t), 80), ErrWiden, d.Reason))
				continue
			}
			if t.Kind() == KindMCPTool {
				mcpTools = append(mcpTools, Rule{ID: "child.tools", Value: string(t)})
			}
		}
		out.native = slices.DeleteFunc(out.native, func(t ID) bool { return !slices.Contains(n.Tools, t) })
		out.host = slices.DeleteFunc(out.host, func(t ID) bool { return !slices.Contains(n.Tools, t) })
		child.Dimensions[DimMCPTools] = &Rules{Default: Deny, Allow: mcpTools}
	}
	if n.MCPServers != nil {
		for _, name := range n.MCPServers {
			if _, ok := s.servers[name]; !ok {
				errs = append(errs, fmt.Errorf("MCP server %q: %w (not configured for the parent)", textx.Shorten(name, 40), ErrWiden))
			}
		}
		maps.DeleteFunc(out.servers, func(name string, _ MCPServer) bool { return !slices.Contains(n.MCPServers, name) })
	}
	if n.Skills != nil {
		for _, sk := range n.Skills {
			if !slices.Contains(s.skills, sk) {
				errs = append(errs, fmt.Errorf("skill %q: %w", textx.Shorten(string(sk), 80), ErrWiden))
			}
		}
		out.skills = slices.DeleteFunc(out.skills, func(sk ID) bool { return !slices.Contains(n.Skills, sk) })
	}
	roots := func(dim Dimension, kind ResourceKind, tool ID, list []string) {
		if list == nil {
			return
		}
		r := &Rules{Default: Deny}
		for _, root := range list {
			if d := s.Decide(Request{Capability: tool, Resources: []Resource{{Kind: kind, Value: root}}}); !d.Allowed && d.RuleID != RuleToolUnavailable {
				errs = append(errs, fmt.Errorf("%s %q: %w (%s)", dim, textx.Shorten(root, 80), ErrWiden, d.Reason))
			}
			r.Allow = append(r.Allow, Rule{ID: "child." + string(dim), Value: root})
		}
		child.Dimensions[dim] = r
	}
	roots(DimReadRoots, ResourceRead, FSRead, n.ReadRoots)
	roots(DimWriteRoots, ResourceWrite, FSWrite, n.WriteRoots)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	out.layers = append(out.layers, child)
	return out, nil
}
