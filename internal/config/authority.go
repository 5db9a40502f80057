package config

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/pabloagent/pablo/authority"
)

// ruleSite is one configured rule: the pointer it is written at and its ID.
type ruleSite struct{ ptr, id string }

// rulesAt lists a rule set's rules, allow before deny.
func rulesAt(ptr string, r *authority.Rules) []ruleSite {
	if r == nil {
		return nil
	}
	var out []ruleSite
	for _, l := range []struct {
		key   string
		rules []authority.Rule
	}{{"allow", r.Allow}, {"deny", r.Deny}} {
		for i, rule := range l.rules {
			out = append(out, ruleSite{ptr + "/" + l.key + "/" + strconv.Itoa(i), rule.ID})
		}
	}
	return out
}

// commandRulesAt lists a command policy's rules, allow before deny.
func commandRulesAt(ptr string, c *CommandRules) []ruleSite {
	if c == nil {
		return nil
	}
	var out []ruleSite
	for _, l := range []struct {
		key   string
		rules []CommandRule
	}{{"allow", c.Allow}, {"deny", c.Deny}} {
		for i, rule := range l.rules {
			out = append(out, ruleSite{ptr + "/" + l.key + "/" + strconv.Itoa(i), rule.ID})
		}
	}
	return out
}

// rules lists the policy's rules by dimension, in key order.
func (p *PolicyOptions) rules(ptr string) []ruleSite {
	return slices.Concat(rulesAt(ptr+"/executables", p.Executables), rulesAt(ptr+"/read_roots", p.ReadRoots),
		rulesAt(ptr+"/tools", p.Tools), rulesAt(ptr+"/write_roots", p.WriteRoots))
}

// rules lists the MCP policy's rules by dimension, in key order.
func (p *MCPPolicy) rules(ptr string) []ruleSite {
	return slices.Concat(rulesAt(ptr+"/launchers", p.Launchers), rulesAt(ptr+"/servers", p.Servers), rulesAt(ptr+"/tools", p.Tools))
}

// rules lists every rule the deployment configures, in the order of its
// document: ordinary policy, MCP policies, shell, then the authority
// layers, each table by key.
func (d *Deployment) rules() []ruleSite {
	o := &d.Options
	out := o.Policy.rules("/options/policy")
	for i := range o.MCP.Policies {
		out = append(out, o.MCP.Policies[i].rules("/options/mcp/policies/"+strconv.Itoa(i))...)
	}
	out = append(out, commandRulesAt("/options/shell/commands", o.Shell.Commands)...)
	out = append(out, rulesAt("/options/shell/cwd_roots", o.Shell.CWDRoots)...)
	for i := range d.layers {
		l := &d.layers[i]
		ptr := "/authority/" + strconv.Itoa(i)
		out = append(out, l.MCP.rules(ptr+"/mcp")...)
		out = append(out, l.Policy.rules(ptr+"/policy")...)
		out = append(out, commandRulesAt(ptr+"/shell/commands", l.Shell.Commands)...)
		out = append(out, rulesAt(ptr+"/shell/cwd_roots", l.Shell.CWDRoots)...)
	}
	return out
}

// checkRuleIDs requires authority layer IDs to be unique, rule IDs to be
// unique across ordinary policy and authority, and bounds the total number
// of rules.
func (d *Deployment) checkRuleIDs() error {
	ids := map[string]bool{}
	for i, l := range d.layers {
		if ids[l.ID] {
			return &Error{Code: CodeConflict, Option: "/authority/" + strconv.Itoa(i) + "/id", AuthorityID: l.ID, Message: "authority layer IDs must be unique"}
		}
		ids[l.ID] = true
	}
	seen := map[string]string{}
	for n, r := range d.rules() {
		if n+1 > maxRulesTotal {
			return &Error{Code: CodeLimit, Option: r.ptr, Message: fmt.Sprintf("more than %d configured rules", maxRulesTotal)}
		}
		if prev, dup := seen[r.id]; dup {
			return &Error{Code: CodeConflict, Option: r.ptr, Message: fmt.Sprintf("rule ID %q is also used at %s", r.id, prev)}
		}
		seen[r.id] = r.ptr
	}
	return nil
}

// checkAuthority requires every resolved value to sit under every
// authority layer's ceiling, in the layers' order.
func (d *Deployment) checkAuthority(modelsInUse []string) error {
	o := &d.Options
	for i, layer := range d.layers {
		if err := checkLayer(o, layer, "/authority/"+strconv.Itoa(i), d.nativeTools(o), d.modelProfiles(o, modelsInUse), d.credDests); err != nil {
			return err
		}
	}
	return nil
}

// checkLayer requires the options to sit under one layer: the enabled
// tools, the models in use and their endpoints, the credentials in use, the
// OTLP endpoint, content capture, the limits, the workspace and Skills
// roots, the A2A remotes and the shell environment.
func checkLayer(o *Options, layer AuthorityLayer, ptr string, enabled []authority.ID, models []ModelOptions, credDests map[string][]string) error {
	violate := func(sub, format string, args ...any) error {
		return &Error{Code: CodeAuthorityViolation, Option: ptr + sub, AuthorityID: layer.ID, Message: fmt.Sprintf(format, args...)}
	}
	if layer.Has("tool_names") {
		for _, t := range enabled {
			if !slices.Contains(layer.ToolNames, string(t)) {
				return violate("/tool_names", "enabled tool %s is not in the layer's tool_names", t)
			}
		}
	}
	for _, m := range models {
		if layer.Has("model_ids") && !slices.Contains(layer.ModelIDs, m.ID) {
			return violate("/model_ids", "model %q is not in the layer's model_ids", m.ID)
		}
		if _, ep, _ := m.Target(); layer.Has("provider_endpoints") && ep != "" && !slices.Contains(layer.ProviderEndpoints, ep) {
			return violate("/provider_endpoints", "endpoint %q is not in the layer's provider_endpoints", ep)
		}
	}
	// The selected route's complexity router sends its Vercel credential
	// to the evaluation-model endpoint: a provider endpoint like any other.
	if r, ok := o.Routes[o.ModelRoute]; ok && r.Router != nil && layer.Has("provider_endpoints") && !slices.Contains(layer.ProviderEndpoints, RouterEndpoint) {
		return violate("/provider_endpoints", "the complexity router's endpoint %q is not in the layer's provider_endpoints", RouterEndpoint)
	}
	if layer.Has("credential_ids") {
		for _, name := range sortedKeysOf(credDests) {
			if len(credDests[name]) > 0 && !slices.Contains(layer.CredentialIDs, name) {
				return violate("/credential_ids", "credential %q is not in the layer's credential_ids", name)
			}
		}
	}
	if layer.Has("otel_endpoints") && o.OTel.Exporter == "otlp" && !slices.Contains(layer.OTelEndpoints, o.OTel.Endpoint) {
		return violate("/otel_endpoints", "the OTLP endpoint is not in the layer's otel_endpoints")
	}
	if layer.CaptureContent != nil && !*layer.CaptureContent && o.Trace.CaptureContent {
		return violate("/capture_content", "the layer forbids trace content capture")
	}
	if err := checkCeilings(layer, &o.Limits, ptr); err != nil {
		return err
	}
	if layer.Has("workspace_roots") && !containedIn(o.Run.Workspace, layer.WorkspaceRoots) {
		return violate("/workspace_roots", "run.workspace %s is outside the layer's workspace_roots", o.Run.Workspace)
	}
	if layer.Has("skill_roots") {
		for _, id := range sortedKeysOf(o.Skills.Roots) {
			if !containedIn(o.Skills.Roots[id], layer.SkillRoots) {
				return violate("/skill_roots", "Skills root %q is outside the layer's skill_roots", id)
			}
		}
	}
	if layer.Has("a2a_remotes") {
		for _, name := range sortedKeysOf(o.A2A.Remotes) {
			want, ok := layer.A2ARemotes[name]
			got := o.A2A.Remotes[name]
			if !ok || want.CardURL != got.CardURL || want.Endpoint != got.Endpoint {
				return violate("/a2a_remotes", "remote %q is not admitted by the layer with the same card_url and endpoint", name)
			}
		}
	}
	if env := layer.Shell.Environment; env != nil {
		for _, name := range sortedKeysOf(o.Shell.Environment.Values) {
			if !slices.Contains(env.AllowedNames, name) {
				return violate("/shell/environment/allowed_names", "shell environment value %s is not allowed by the layer", name)
			}
		}
	}
	return nil
}

// containedIn reports whether p lies inside one of roots (same base and
// binding, path within by whole components).
func containedIn(p PathRef, roots []PathRef) bool {
	for _, r := range roots {
		if r.Base == p.Base && r.Name == p.Name && authority.WithinRoot(r.Path, p.Path) {
			return true
		}
	}
	return false
}

// nativeTools lists the native tools the options enable.
func (d *Deployment) nativeTools(o *Options) []authority.ID {
	var out []authority.ID
	if o.Filesystem.Enabled {
		out = append(out, authority.FSRead, authority.FSList, authority.FSSearch)
		if o.Filesystem.Write {
			out = append(out, authority.FSWrite, authority.FSEdit)
		}
	}
	if o.Shell.Enabled {
		out = append(out, authority.ShellRun)
	}
	if len(o.Skills.Activate) > 0 {
		out = append(out, authority.SkillRead)
	}
	if o.Children.Enabled {
		out = append(out, authority.Subagent)
	}
	return out
}

// NativeTools lists the native tools this deployment enables.
func (d *Deployment) NativeTools() []authority.ID { return d.nativeTools(&d.Options) }

func (d *Deployment) modelProfiles(o *Options, inUse []string) []ModelOptions {
	if o.ModelRoute == "" {
		return []ModelOptions{o.Model}
	}
	var out []ModelOptions
	for _, name := range inUse {
		out = append(out, o.Models[name])
	}
	return out
}

// Layer IDs of ordinary policy. They use "/", which rule and authority IDs
// cannot, so they never collide with a deployment's layer IDs.
const (
	LayerPolicy    = "options/policy"
	layerMCPPolicy = "options/mcp/policies/"
)

// Authority builds the task authority: the configured catalog, then every
// authority layer, then ordinary policy. Omitted policy dimensions take the
// reference defaults: tools allow, the /bin/sh launcher allow, read roots
// allow inside the workspace, write roots deny unless write is opted in.
func (d *Deployment) Authority() (*authority.Set, error) {
	o := &d.Options
	cfg := authority.Config{Native: d.NativeTools(), MCPServers: map[string]authority.MCPServer{}}
	for name, s := range o.MCP.Servers {
		srv := authority.MCPServer{Roles: s.Roles}
		if s.Transport == "stdio" {
			srv.Launcher = s.Command
		}
		cfg.MCPServers[name] = srv
	}
	if o.Memory.Configured() {
		for _, g := range MemoryGrants() {
			if _, ok := o.Memory.Grants[g[0]]; ok {
				cfg.Host = append(cfg.Host, authority.ID(g[1]))
			}
		}
	}
	if len(o.RequiredRoles) > 0 {
		cfg.CapabilityRoles = map[authority.ID][]string{}
		for id, roles := range o.RequiredRoles {
			cfg.CapabilityRoles[authority.ID(id)] = roles
		}
	}
	for _, a := range o.Skills.Activate {
		if id := authority.ID(a); id.Kind() == authority.KindSkill {
			cfg.Skills = append(cfg.Skills, id)
		}
	}
	for _, l := range d.layers {
		layer := authority.Layer{ID: l.ID, Kind: authority.KindAuthority, Dimensions: map[authority.Dimension]*authority.Rules{}}
		if l.Has("tool_names") {
			layer.ToolNames = []authority.ID{}
			for _, t := range l.ToolNames {
				layer.ToolNames = append(layer.ToolNames, authority.ID(t))
			}
		}
		addPolicy(layer.Dimensions, l.Policy)
		addMCP(layer.Dimensions, l.MCP)
		if l.Has("a2a_remotes") {
			layer.Dimensions[authority.DimA2ARemotes] = remoteRules(l.A2ARemotes)
		}
		cfg.Layers = append(cfg.Layers, layer)
	}
	policy := authority.Layer{ID: LayerPolicy, Kind: authority.KindPolicy, Dimensions: map[authority.Dimension]*authority.Rules{}}
	addPolicy(policy.Dimensions, o.Policy)
	if _, ok := policy.Dimensions[authority.DimWriteRoots]; !ok && !o.Filesystem.Write {
		policy.Dimensions[authority.DimWriteRoots] = &authority.Rules{Default: authority.Deny}
	}
	cfg.Layers = append(cfg.Layers, policy)
	for i, p := range o.MCP.Policies {
		layer := authority.Layer{ID: layerMCPPolicy + strconv.Itoa(i), Kind: authority.KindPolicy, Dimensions: map[authority.Dimension]*authority.Rules{}}
		addMCP(layer.Dimensions, p)
		cfg.Layers = append(cfg.Layers, layer)
	}
	return authority.New(cfg)
}

// remoteRules are the rules of an [[authority]] layer's a2a_remotes: the
// remotes it admits, by name, each an allow rule "a2a_remotes.NAME" that
// carries the entry's approval; any other name is denied.
func remoteRules(remotes map[string]A2ARemote) *authority.Rules {
	r := &authority.Rules{Default: authority.Deny}
	for _, name := range sortedKeysOf(remotes) {
		r.Allow = append(r.Allow, authority.Rule{ID: RemoteRuleID(name), Value: name, Approval: remotes[name].Approval, Roles: remotes[name].Roles})
	}
	return r
}

// RemoteRuleID is the rule ID of an [[authority]] layer's a2a_remotes
// entry for the remote name: what a decision on a spawn_remote to it
// names.
func RemoteRuleID(name string) string { return "a2a_remotes." + name }

func addPolicy(dims map[authority.Dimension]*authority.Rules, p PolicyOptions) {
	for dim, r := range map[authority.Dimension]*authority.Rules{
		authority.DimTools: p.Tools, authority.DimExecutables: p.Executables,
		authority.DimReadRoots: p.ReadRoots, authority.DimWriteRoots: p.WriteRoots,
	} {
		if r != nil {
			dims[dim] = r
		}
	}
}

func addMCP(dims map[authority.Dimension]*authority.Rules, p MCPPolicy) {
	for dim, r := range map[authority.Dimension]*authority.Rules{
		authority.DimMCPServers: p.Servers, authority.DimMCPTools: p.Tools, authority.DimMCPLaunchers: p.Launchers,
	} {
		if r != nil {
			dims[dim] = r
		}
	}
}
