package authority

import (
	"fmt"
	"slices"
	"sort"

	"github.com/pabloagent/pablo/internal/textx"
)

// Authority decides requests and narrows into smaller authorities. It is the
// seam a host wraps to add its own checks; Set is Pablo's implementation.
type Authority interface {
	// Decide answers one request. It never blocks and never fails: a
	// malformed request is a denial.
	Decide(req Request) Decision
	// Narrow returns an authority that admits at most what this one
	// admits. Asking for anything this one does not admit is an error
	// wrapping ErrWiden.
	Narrow(n Narrowing) (Authority, error)
}

// Static is an optional capability of an Authority, named as http.Flusher
// is: an authority that implements it and reports true promises that
// Decide's answer depends on the request alone, never on time, state or
// the task asking, so a runtime may decide the tools it offers once and
// share that decision across tasks. [*Set] is static. A wrapper that keeps
// the promise forwards Static; one that does not implement it only costs
// each task its own decision of the tool list.
type Static interface {
	Authority
	Static() bool
}

// ResourceKind says how a request uses a resource.
type ResourceKind string

// The resource kinds a request can name.
const (
	// ResourceRead is a workspace-relative path that will be read.
	ResourceRead ResourceKind = "read"
	// ResourceWrite is a workspace-relative path that will be written.
	ResourceWrite ResourceKind = "write"
	// ResourceExecutable is an absolute launcher path.
	ResourceExecutable ResourceKind = "executable"
	// ResourceRemote is the name of a configured A2A remote a subagent
	// spawn_remote call delegates to, decided in DimA2ARemotes: a layer
	// without that dimension adds no constraint (configuration admitted
	// the remote), one with it must allow the name.
	ResourceRemote ResourceKind = "a2a_remote"
)

// Resource is something a request touches.
type Resource struct {
	Kind  ResourceKind `json:"kind"`
	Value string       `json:"value"`
}

// Request asks whether one capability may be used on some resources.
type Request struct {
	Capability ID         `json:"capability"`
	Resources  []Resource `json:"resources,omitempty"`
}

// MCPServer is what configuration says about one MCP server.
type MCPServer struct {
	// Launcher is the absolute command of a stdio server; empty for HTTP.
	Launcher string `json:"launcher,omitempty"`
	// Roles are the roles a task must hold to use any tool of the server
	// (its configuration's roles).
	Roles []string `json:"roles,omitempty"`
}

// Config is the configured possibility space and the layers over it.
type Config struct {
	// Native lists the native tools the configuration enables.
	Native []ID
	// MCPServers lists the MCP servers the host configured, by name.
	MCPServers map[string]MCPServer
	// Skills lists the Skills IDs that may be activated.
	Skills []ID
	// Host lists the host's own tools (KindHost IDs).
	Host []ID
	// Layers are evaluated in order; every one must allow.
	Layers []Layer
	// CapabilityRoles holds, by capability ID, the roles a task must hold
	// to use it (a Skill's, a memory tool's or a native tool's
	// configuration roles). A task holds the roles the host gives it
	// ([Set.WithRoles]); a Set built by New holds none.
	CapabilityRoles map[ID][]string
}

// Set is the standard Authority: a configured catalog and layers over it. The
// zero value admits nothing. A Set is immutable once built and safe for
// concurrent use.
type Set struct {
	native  []ID
	servers map[string]MCPServer
	skills  []ID
	host    []ID
	layers  []Layer
	// capRoles are the configuration's role requirements by capability.
	capRoles map[ID][]string
	// roles are the roles the task holds; rolesBound is true once they
	// were given (WithRoles), after which they only narrow.
	roles      []string
	rolesBound bool
}

// clone is a deep copy of s.
func (s *Set) clone() *Set {
	out := &Set{
		native:     slices.Clone(s.native),
		servers:    make(map[string]MCPServer, len(s.servers)),
		skills:     slices.Clone(s.skills),
		host:       slices.Clone(s.host),
		layers:     make([]Layer, 0, len(s.layers)+1),
		capRoles:   make(map[ID][]string, len(s.capRoles)),
		roles:      slices.Clone(s.roles),
		rolesBound: s.rolesBound,
	}
	for n, srv := range s.servers {
		srv.Roles = slices.Clone(srv.Roles)
		out.servers[n] = srv
	}
	for id, rs := range s.capRoles {
		out.capRoles[id] = slices.Clone(rs)
	}
	for _, l := range s.layers {
		out.layers = append(out.layers, l.clone())
	}
	return out
}

var _ Authority = (*Set)(nil)

// New builds a Set from cfg, copying everything so later changes to cfg have
// no effect. Layer IDs must be unique.
func New(cfg Config) (*Set, error) {
	s := &Set{servers: make(map[string]MCPServer, len(cfg.MCPServers))}
	for _, id := range cfg.Native {
		if id.Kind() != KindNative {
			return nil, fmt.Errorf("authority: %q is not a native tool", id)
		}
		s.native = append(s.native, id)
	}
	for name, srv := range cfg.MCPServers {
		if !ValidMCPServerName(name) {
			return nil, fmt.Errorf("authority: %q is not a valid MCP server name", name)
		}
		if err := ValidateRoles(srv.Roles); err != nil {
			return nil, fmt.Errorf("authority: MCP server %q: %w", name, err)
		}
		srv.Roles = slices.Clone(srv.Roles)
		s.servers[name] = srv
	}
	s.capRoles = make(map[ID][]string, len(cfg.CapabilityRoles))
	for id, rs := range cfg.CapabilityRoles {
		if err := ValidateRoles(rs); err != nil {
			return nil, fmt.Errorf("authority: %s: %w", id, err)
		}
		s.capRoles[id] = slices.Clone(rs)
	}
	s.skills = append(s.skills, cfg.Skills...)
	for _, id := range cfg.Host {
		if id.Kind() != KindHost {
			return nil, fmt.Errorf("authority: %q is not a host tool name (want dotted lowercase such as notes.read)", id)
		}
		s.host = append(s.host, id)
	}
	seen := map[string]bool{}
	for _, l := range cfg.Layers {
		if l.ID == "" || seen[l.ID] {
			return nil, fmt.Errorf("authority: layer ID %q is empty or repeated", l.ID)
		}
		seen[l.ID] = true
		for dim, r := range l.Dimensions {
			if err := r.validateApproval(); err != nil {
				return nil, fmt.Errorf("authority: layer %q %s: %w", l.ID, dim, err)
			}
		}
		s.layers = append(s.layers, l.clone())
	}
	return s, nil
}

// Layers returns a copy of the layers in evaluation order.
func (s *Set) Layers() []Layer {
	out := make([]Layer, len(s.layers))
	for i, l := range s.layers {
		out[i] = l.clone()
	}
	return out
}

// Native returns the configured native tools.
func (s *Set) Native() []ID { return slices.Clone(s.native) }

// Skills returns the configured Skills.
func (s *Set) Skills() []ID { return slices.Clone(s.skills) }

// Static implements [Static]: a Set never changes once built.
func (s *Set) Static() bool { return true }

// MCPServers returns the configured MCP server names, sorted.
func (s *Set) MCPServers() []string {
	names := make([]string, 0, len(s.servers))
	for n := range s.servers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Decide implements Authority.
func (s *Set) Decide(req Request) Decision {
	d := Decision{}
	id := req.Capability
	kind := id.Kind()
	deny := func(layer, rule, reason string) Decision {
		d.Allowed, d.Layer, d.RuleID, d.Reason = false, layer, rule, reason
		return d
	}
	var server, launcher string
	var serverRoles []string
	switch kind {
	case KindInvalid:
		return deny(LayerConfiguration, RuleToolUnavailable, fmt.Sprintf("%q is not a capability ID", textx.Shorten(string(id), 80)))
	case KindNative:
		if !slices.Contains(s.native, id) {
			return deny(LayerConfiguration, RuleToolUnavailable, fmt.Sprintf("%s is not enabled by the configuration", id))
		}
	case KindMCPTool:
		server, _, _ = id.MCP()
		srv, ok := s.servers[server]
		if !ok {
			return deny(LayerConfiguration, RuleUnconfiguredServer, fmt.Sprintf("MCP server %q is not configured by the host; no rule can create it", server))
		}
		launcher, serverRoles = srv.Launcher, srv.Roles
	case KindHost:
		if !slices.Contains(s.host, id) {
			return deny(LayerConfiguration, RuleToolUnavailable, fmt.Sprintf("host tool %s is not configured", id))
		}
	case KindSkill:
		if !slices.Contains(s.skills, id) {
			return deny(LayerConfiguration, RuleToolUnavailable, fmt.Sprintf("Skill %s is not configured", id))
		}
	}
	for _, r := range req.Resources {
		if r.Kind == ResourceExecutable && len(r.Value) == 0 {
			return deny(LayerConfiguration, RuleToolUnavailable, "empty executable")
		}
	}

	// A configuration's role requirement denies before any layer is
	// consulted: the capability is the configuration's, and so is the
	// requirement.
	if role := s.missingRole(serverRoles); role != "" {
		d = RoleDecision(id, LayerConfiguration, RuleRoleRequired, role)
		return d
	}
	if role := s.missingRole(s.capRoles[id]); role != "" {
		d = RoleDecision(id, LayerConfiguration, RuleRoleRequired, role)
		return d
	}

	checks := make([]check, 0, 8)
	checks = append(checks, check{DimToolNames, string(id)})
	if kind == KindMCPTool {
		checks = append(checks, check{DimMCPServers, server})
		if launcher != "" {
			checks = append(checks, check{DimMCPLaunchers, launcher}, check{DimExecutables, launcher})
		}
		checks = append(checks, check{DimMCPTools, string(id)})
	}
	checks = append(checks, check{DimTools, string(id)})
	for _, r := range req.Resources {
		switch r.Kind {
		case ResourceExecutable:
			checks = append(checks, check{DimExecutables, r.Value})
		case ResourceRead:
			checks = append(checks, check{DimReadRoots, r.Value})
		case ResourceWrite:
			checks = append(checks, check{DimWriteRoots, r.Value})
		case ResourceRemote:
			checks = append(checks, check{DimA2ARemotes, r.Value})
		default:
			// A host-defined resource kind is its own dimension, matched
			// exactly. With no rule for it anywhere, it fails closed.
			dim := Dimension(r.Kind)
			scoped := false
			for _, l := range s.layers {
				if _, ok := l.Dimensions[dim]; ok {
					scoped = true
					break
				}
			}
			if !scoped {
				return deny(LayerConfiguration, builtinID(dim, "unscoped"), fmt.Sprintf("no layer scopes resources of kind %q", textx.Shorten(string(r.Kind), 40)))
			}
			checks = append(checks, check{dim, r.Value})
		}
	}

	// Any layer's rule may add an approval requirement; the first one in
	// evaluation order is named. No layer removes one: a rule without
	// approval adds nothing, and there is no value that lifts it.
	var grantLayer, grantRule, approvalLayer, approvalRule string
	for _, l := range s.layers {
		for _, c := range checks {
			var v Verdict
			if c.dim == DimToolNames {
				if l.ToolNames == nil {
					continue
				}
				if l.admitsName(id) {
					v = Verdict{Allowed: true, RuleID: "builtin.tool_names.listed", Explicit: true}
				} else {
					v = Verdict{RuleID: "builtin.tool_names.allowlist_miss"}
				}
			} else {
				r, ok := l.Dimensions[c.dim]
				if !ok {
					continue
				}
				v = r.Evaluate(c.dim, c.value)
			}
			d.Trail = append(d.Trail, Step{Layer: l.ID, Dimension: c.dim, Value: c.value, Allowed: v.Allowed, RuleID: v.RuleID})
			if !v.Allowed {
				return deny(l.ID, v.RuleID, fmt.Sprintf("%s %q is not allowed by %s layer %q", c.dim, c.value, l.Kind, l.ID))
			}
			if role := s.missingRole(v.Roles); role != "" {
				r := RoleDecision(id, l.ID, v.RuleID, role)
				r.Trail = d.Trail
				r.Reason = fmt.Sprintf("%s %q: %s", c.dim, c.value, r.Reason)
				return r
			}
			if v.Explicit && grantLayer == "" && c.dim != DimToolNames {
				grantLayer, grantRule = l.ID, v.RuleID
			}
			if v.ApprovalRule != "" && approvalLayer == "" {
				approvalLayer, approvalRule = l.ID, v.ApprovalRule
			}
		}
	}
	d.Allowed = true
	switch {
	case grantLayer != "":
		d.Layer, d.RuleID = grantLayer, grantRule
	case len(d.Trail) > 0:
		d.Layer, d.RuleID = d.Trail[0].Layer, d.Trail[0].RuleID
	default:
		d.Layer, d.RuleID = LayerConfiguration, "builtin.configured"
	}
	d.Reason = "allowed by every layer"
	if approvalLayer != "" {
		d.RequireApproval(approvalLayer, approvalRule)
	}
	return d
}

type check struct {
	dim   Dimension
	value string
}
