package config

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/pabloagent/pablo/authority"
)

// checkRuleIDs requires rule IDs to be unique across ordinary policy and
// authority, and bounds the total number of rules.
func (d *Deployment) checkRuleIDs() error {
	seen := map[string]string{}
	total := 0
	var walk func(v any, ptr string) error
	walk = func(v any, ptr string) error {
		switch x := v.(type) {
		case map[string]any:
			if id, ok := x["id"].(string); ok && (x["value"] != nil || x["executable"] != nil) {
				total++
				if total > maxRulesTotal {
					return &Error{Code: CodeLimit, Option: ptr, Message: fmt.Sprintf("more than %d configured rules", maxRulesTotal)}
				}
				if prev, dup := seen[id]; dup {
					return &Error{Code: CodeConflict, Option: ptr, Message: fmt.Sprintf("rule ID %q is also used at %s", id, prev)}
				}
				seen[id] = ptr
			}
			for _, k := range sortedKeys(x) {
				if err := walk(x[k], ptr+pointer(k)); err != nil {
					return err
				}
			}
		case []any:
			for i, e := range x {
				if err := walk(e, ptr+"/"+strconv.Itoa(i)); err != nil {
					return err
				}
			}
		}
		return nil
	}
	ids := map[string]bool{}
	for i, l := range d.tree["authority"].([]any) {
		id := l.(map[string]any)["id"].(string)
		if ids[id] {
			return &Error{Code: CodeConflict, Option: "/authority/" + strconv.Itoa(i) + "/id", AuthorityID: id, Message: "authority layer IDs must be unique"}
		}
		ids[id] = true
	}
	if err := walk(get(d.options(), "policy"), "/options/policy"); err != nil {
		return err
	}
	if err := walk(get(d.options(), "mcp", "policies"), "/options/mcp/policies"); err != nil {
		return err
	}
	if err := walk(get(d.options(), "shell"), "/options/shell"); err != nil {
		return err
	}
	return walk(d.tree["authority"], "/authority")
}

// checkAuthority decodes the layers and requires every resolved value to
// sit under every ceiling.
func (d *Deployment) checkAuthority(modelsInUse []string) error {
	o := d.options()
	var opts Options
	raw, _ := json.Marshal(o)
	_ = json.Unmarshal(raw, &opts)
	enabled := d.nativeTools(&opts)
	for i, lv := range d.tree["authority"].([]any) {
		lm := lv.(map[string]any)
		raw, _ := json.Marshal(lm)
		var layer AuthorityLayer
		if err := json.Unmarshal(raw, &layer); err != nil {
			return &Error{Code: CodeInvalidValue, Option: "/authority/" + strconv.Itoa(i), Message: "malformed authority layer"}
		}
		layer.present = map[string]bool{}
		for k := range lm {
			layer.present[k] = true
		}
		ptr := "/authority/" + strconv.Itoa(i)
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
		if layer.Has("model_ids") || layer.Has("provider_endpoints") {
			for _, m := range d.modelProfiles(&opts, modelsInUse) {
				if layer.Has("model_ids") && !slices.Contains(layer.ModelIDs, m.ID) {
					return violate("/model_ids", "model %q is not in the layer's model_ids", m.ID)
				}
				if ep := modelEndpoint(m); layer.Has("provider_endpoints") && ep != "" && !slices.Contains(layer.ProviderEndpoints, ep) {
					return violate("/provider_endpoints", "endpoint %q is not in the layer's provider_endpoints", ep)
				}
			}
		}
		if layer.Has("credential_ids") {
			for name, dests := range d.credDests {
				if len(dests) > 0 && !slices.Contains(layer.CredentialIDs, name) {
					return violate("/credential_ids", "credential %q is not in the layer's credential_ids", name)
				}
			}
		}
		if layer.Has("otel_endpoints") && opts.OTel.Exporter == "otlp" && !slices.Contains(layer.OTelEndpoints, opts.OTel.Endpoint) {
			return violate("/otel_endpoints", "the OTLP endpoint is not in the layer's otel_endpoints")
		}
		if layer.CaptureContent != nil && !*layer.CaptureContent && opts.Trace.CaptureContent {
			return violate("/capture_content", "the layer forbids trace content capture")
		}
		if lim, ok := lm["limits"].(map[string]any); ok {
			if err := ceilingLimits(lim, asMap(o["limits"]), ptr+"/limits", layer.ID); err != nil {
				return err
			}
		}
		if layer.Has("workspace_roots") && !containedIn(opts.Run.Workspace, layer.WorkspaceRoots) {
			return violate("/workspace_roots", "run.workspace %s is outside the layer's workspace_roots", opts.Run.Workspace)
		}
		if layer.Has("skill_roots") {
			for _, id := range sortedKeysOf(opts.Skills.Roots) {
				if !containedIn(opts.Skills.Roots[id], layer.SkillRoots) {
					return violate("/skill_roots", "Skills root %q is outside the layer's skill_roots", id)
				}
			}
		}
		if layer.Has("a2a_remotes") {
			for _, name := range sortedKeysOf(opts.A2A.Remotes) {
				want, ok := layer.A2ARemotes[name]
				got := opts.A2A.Remotes[name]
				if !ok || want.CardURL != got.CardURL || want.Endpoint != got.Endpoint {
					return violate("/a2a_remotes", "remote %q is not admitted by the layer with the same card_url and endpoint", name)
				}
			}
		}
		if env := layer.Shell.Environment; env != nil {
			for name := range opts.Shell.Environment.Values {
				if !slices.Contains(env.AllowedNames, name) {
					return violate("/shell/environment/allowed_names", "shell environment value %s is not allowed by the layer", name)
				}
			}
		}
		d.layers = append(d.layers, layer)
	}
	return nil
}

func sortedKeysOf[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
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

// ceilingLimits requires each resolved limit to be no larger than the
// layer's ceiling; unlimited is larger than every finite value.
func ceilingLimits(ceil, resolved map[string]any, ptr, id string) error {
	for _, k := range sortedKeys(ceil) {
		if sub, ok := ceil[k].(map[string]any); ok {
			if err := ceilingLimits(sub, asMap(resolved[k]), ptr+pointer(k), id); err != nil {
				return err
			}
			continue
		}
		if !limitLE(resolved[k], ceil[k]) {
			return &Error{Code: CodeAuthorityViolation, Option: ptr + pointer(k), AuthorityID: id,
				Message: fmt.Sprintf("resolved %s = %v exceeds the ceiling %v", k, resolved[k], ceil[k])}
		}
	}
	return nil
}

func limitLE(v, ceil any) bool {
	num := func(x any) (uint64, bool) {
		switch n := x.(type) {
		case int64:
			return uint64(n), true
		case string:
			if n == "unlimited" {
				return 0, false
			}
			u, err := strconv.ParseUint(n, 10, 64)
			return u, err == nil
		}
		return 0, false
	}
	c, cFinite := num(ceil)
	if !cFinite {
		return true
	}
	x, xFinite := num(v)
	return xFinite && x <= c
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

func modelEndpoint(m ModelOptions) string {
	switch m.Provider {
	case "vercel":
		return VercelEndpoint
	case "openrouter":
		return OpenRouterEndpoint
	}
	return m.Endpoint
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
		srv := authority.MCPServer{}
		if s.Transport == "stdio" {
			srv.Launcher = s.Command
		}
		cfg.MCPServers[name] = srv
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
