package graphfill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/graph"
	"github.com/pabloagent/pablo/internal/config"
	"github.com/pabloagent/pablo/internal/sandbox"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/mcp"
	"github.com/pabloagent/pablo/skills"
)

// authorityClaim matches text in Skill instructions that claims to grant
// authority. Such a claim is flagged on the Skill's node and never acted
// on: instructions are task data, and only the host's layers grant. It is
// compiled where a Skill's instructions are read, not by the package's
// initialiser: that cost 34 KB and 153 allocations at the start of every
// pablo process, whatever its command (GODEBUG=inittrace=1).
const authorityClaim = `(?i)\b(you (are|have been) (granted|authori[sz]ed|permitted)|grants? you|approval[- ]mode|bypass(es)? (the )?(policy|approvals?|sandbox)|ignore (the |all )?(policy|previous instructions))\b`

// graphBuilder is the graph's Builder and the one sandbox launcher every
// required sandbox is checked with (one bubblewrap run).
type graphBuilder struct {
	*graph.Builder
	launcher *sandbox.Launcher
}

// Graph computes the deployment's capability requirement graph: the tool
// profile (native tools, the literal command policy, the sandbox), each
// MCP server (transport, credential references, health, discovered tools
// with their digests when opts.Health holds them), each Skill (required
// tools and servers, output contract, validation), A2A remotes, model
// routes and the credentials they use, each with its readiness and
// reasons. Decisions come from Deployment.Decide, the function the runtime
// and `pablo policy check` use. It reads credential sources to learn
// whether they resolve, never records a value, and starts no MCP server;
// a required sandbox is checked with one bubblewrap run.
func Graph(ctx context.Context, d *Source, opts graph.Options) (*graph.Graph, error) {
	set, err := d.Authority()
	if err != nil {
		return nil, err
	}
	resolver, err := d.Resolver(authority.ResolverOptions{LookupEnv: opts.LookupEnv, Host: opts.Host})
	if err != nil {
		return nil, err
	}
	b := &graphBuilder{Builder: graph.NewBuilder(d.Config.Fingerprint, opts.Health != nil || opts.Cards != nil)}
	credential := func(from, name string, consumer authority.Consumer, dest string) {
		id := "credential:" + name + "@" + dest
		b.Node(graph.Node{ID: id, Kind: graph.KindCredential, Attributes: map[string]string{"name": name, "consumer": string(consumer), "destination": dest}})
		b.Edge(from, id, graph.EdgeRequires)
		if _, err := resolver.Resolve(ctx, name, consumer, dest); err != nil {
			if b.Lookup(id).State == graph.Ready {
				b.Set(id, graph.MissingGrant, graph.Reason{Code: "credential_unavailable", Credential: name, Consumer: string(consumer), Destination: dest,
					Detail: fmt.Sprintf("credential %q does not resolve for %s at %s: %v", name, consumer, dest, err)})
			}
		}
	}

	// The tool profile, and its readiness check "required roles
	// admitted": every role a rule or the configuration requires, against
	// the roles the task holds (opts.Roles). A missing role is noted
	// here; each capability requiring it is denied (role_missing).
	profile := graph.Node{ID: "tools", Kind: graph.KindToolProfile, Attributes: map[string]string{}}
	if required := set.RequiredRoles(); len(required) > 0 {
		profile.Attributes["required_roles"] = strings.Join(required, ",")
	}
	// Audit levels (seed 002) are shown where a deployment sets them, so
	// a graph without them keeps its digest.
	o := &d.Config.Options
	audited := o.Audit.Level != "" || len(o.Audit.Capabilities) > 0
	if audited {
		profile.Attributes["audit_level"] = o.ToolLevel("")
	}
	auditOf := func(capability string) map[string]string {
		if !audited {
			return nil
		}
		return map[string]string{"audit_level": o.ToolLevel(capability)}
	}
	b.Node(profile)
	if required := set.RequiredRoles(); len(required) > 0 {
		missing := set.MissingRoles()
		if len(missing) == 0 {
			b.Note("tools", graph.Reason{Code: "required_roles_admitted", Detail: fmt.Sprintf("the task holds every required role (%s)", strings.Join(required, ", "))})
		}
		for _, r := range missing {
			b.Note("tools", graph.Reason{Code: "role_missing",
				Detail: fmt.Sprintf("role %q is required and the task does not hold it; what requires it is denied (give it with TaskRequest.Roles or pablo run --role %s)", r, r)})
		}
	}
	for _, t := range d.NativeTools() {
		id := "tool:" + string(t)
		b.Node(graph.Node{ID: id, Kind: graph.KindTool, Capability: string(t), Attributes: auditOf(string(t))})
		b.Edge("tools", id, graph.EdgeOffers)
		dec, err := d.Decide(ctx, t, nil)
		if err != nil {
			return nil, err
		}
		b.Deny(id, dec)
		if t != authority.ShellRun {
			continue
		}
		b.Node(graph.Node{ID: "shell.rules", Kind: graph.KindShellRules})
		b.Edge(id, "shell.rules", graph.EdgeRequires)
		if _, err := d.shellPolicy(); err != nil {
			b.Set("shell.rules", graph.Unsupported, graph.Reason{Code: "shell_rules_invalid", Detail: err.Error()})
		} else if err := d.Config.CheckShellExamples(); err != nil {
			b.Set("shell.rules", graph.Unsupported, graph.Reason{Code: "rule_example_failed", Detail: err.Error()})
		}
		n, narrowed := d.Config.ShellSandboxNarrowing()
		if err := b.sandbox(ctx, d, id, "sandbox:shell.run", d.shellSandbox(), n, narrowed, opts.Bubblewrap); err != nil {
			return nil, err
		}
	}

	if d.Memory != nil {
		d.Memory(b.Builder, set)
	}

	// MCP servers, their credentials and, when probed, their health and tools.
	health := map[string]mcp.Health{}
	for _, h := range opts.Health {
		health[h.Server] = h
	}
	for _, name := range sortedKeys(d.Config.Options.MCP.Servers) {
		s := d.Config.Options.MCP.Servers[name]
		id := "mcp:" + name
		attrs := map[string]string{"transport": s.Transport, "required": strconv.FormatBool(s.Required)}
		for raw, pin := range s.Pins {
			attrs["pin:"+raw] = pin
		}
		b.Node(graph.Node{ID: id, Kind: graph.KindMCPServer, Capability: "mcp/" + name, Attributes: attrs})
		// A tool name no server uses: what denies it denies the server.
		dec := set.Decide(authority.Request{Capability: authority.MCPTool(name, "pablo-graph-probe")})
		if len(s.Roles) > 0 {
			attrs["required_roles"] = strings.Join(s.Roles, ",")
		}
		if !dec.Allowed && dec.MissingRole != "" && dec.RuleID == authority.RuleRoleRequired {
			b.Deny(id, dec) // the server's own roles
		} else if !dec.Allowed {
			for _, st := range dec.Trail {
				if !st.Allowed && (st.Dimension == authority.DimMCPServers || st.Dimension == authority.DimMCPLaunchers || st.Dimension == authority.DimExecutables) {
					b.Deny(id, dec)
					break
				}
			}
		}
		// Every tool of the server asks: options.approvals.mcp, or a
		// server or launcher rule with approval (seen when the probe tool
		// is allowed; a tools allowlist may leave it out).
		gd, err := d.Decide(ctx, authority.MCPTool(name, "pablo-graph-probe"), nil)
		if err != nil {
			return nil, err
		}
		if !gd.Allowed {
			gd = authority.Decision{Allowed: true}
			if key := d.Config.Options.Approvals.RequiredBy(string(authority.MCPTool(name, "pablo-graph-probe"))); key != "" {
				gd.RequireApproval(config.ApprovalsLayer, key)
			}
		}
		b.Gate(id, gd)
		for _, v := range sortedKeys(s.Env) {
			credential(id, s.Env[v], authority.ConsumerMCPEnv, "mcp:"+name+":env:"+v)
		}
		for _, k := range sortedKeys(s.Headers) {
			credential(id, s.Headers[k], authority.ConsumerMCPHeaders, "mcp:"+name+":header:"+k)
		}
		if s.Transport == string(mcp.Stdio) {
			p, _ := d.Config.MCPSandbox(name)
			n, narrowed := d.Config.MCPSandboxNarrowing(name)
			if err := b.sandbox(ctx, d, id, "sandbox:"+id, p, n, narrowed, opts.Bubblewrap); err != nil {
				return nil, err
			}
		}
		h, probed := health[name]
		if !probed {
			continue
		}
		if h.Version != "" {
			b.Lookup(id).Attributes["protocol_version"] = h.Version
			if !slices.Contains(mcp.SupportedVersions(), h.Version) {
				b.Set(id, graph.Unsupported, graph.Reason{Code: "mcp_version_unsupported", Health: string(h.State),
					Detail: fmt.Sprintf("the server negotiated MCP protocol version %q; this client implements %v", h.Version, mcp.SupportedVersions())})
			}
		}
		switch h.State {
		case mcp.Failed:
			b.Set(id, graph.Unhealthy, graph.Reason{Code: "mcp_failed", Health: string(h.State), Detail: oneLineReason(h.Reason)})
		case mcp.Degraded:
			b.Note(id, graph.Reason{Code: "mcp_degraded", Health: string(h.State), Detail: oneLineReason(h.Reason)})
		case mcp.Denied:
			r := graph.Reason{Code: "policy_denied", Health: string(h.State), Detail: oneLineReason(h.Reason)}
			if h.Decision != nil {
				r.Layer, r.Rule = h.Decision.Layer, h.Decision.RuleID
			}
			b.Set(id, graph.Denied, r)
		}
		for _, t := range h.Tools {
			tid := "tool:" + string(t.ID)
			tattrs := map[string]string{"digest": t.Digest}
			if audited {
				tattrs["audit_level"] = o.ToolLevel(string(t.ID))
			}
			b.Node(graph.Node{ID: tid, Kind: graph.KindMCPTool, Capability: string(t.ID), Attributes: tattrs})
			b.Edge(id, tid, graph.EdgeOffers)
			if !t.Admitted {
				b.Set(tid, graph.Denied, graph.Reason{Code: string(t.Code), Layer: t.Layer, Rule: t.RuleID, Detail: oneLineReason(t.Reason)})
				continue
			}
			td, err := d.Decide(ctx, t.ID, nil)
			if err != nil {
				return nil, err
			}
			b.Gate(tid, td)
		}
	}

	if err := b.skills(ctx, d, set, opts.TaskKind); err != nil {
		return nil, err
	}

	// Children, what they may be given, and the A2A remotes.
	if err := b.children(ctx, d, set, opts.Cards, credential); err != nil {
		return nil, err
	}

	// The model route, its models and their credentials.
	route := "model"
	if o.ModelRoute != "" {
		route = "route:" + o.ModelRoute
		b.Node(graph.Node{ID: route, Kind: graph.KindRoute, Attributes: map[string]string{"required_capabilities": strings.Join(d.Config.RouteRequirements(o.ModelRoute), ",")}})
		entries, _ := d.Config.RouteEntries(o.ModelRoute) // checked when the deployment loaded
		for _, e := range entries {
			n := e.Model
			id := "model:" + n
			m := o.Models[n]
			b.Node(graph.Node{ID: id, Kind: graph.KindModel, Attributes: map[string]string{"provider": m.Provider, "model": m.ID, "capabilities": strings.Join(m.Supports(), ",")}})
			b.Edge(route, id, graph.EdgeAlternative)
			if len(e.Missing) > 0 {
				b.Set(id, graph.Unsupported, graph.Reason{Code: "model_capability_missing",
					Detail: fmt.Sprintf("model %q lacks %s, which route %q requires; the route never selects it", n, strings.Join(e.Missing, ", "), o.ModelRoute)})
			}
			if !e.Selectable() {
				continue // never selected, so its credential is never used
			}
			if consumer, endpoint, _ := m.Target(); consumer != "" && !opts.HostModel {
				if _, declared := d.Credentials()[m.Credential]; declared || m.Provider != "openai_compatible" {
					credential(id, m.Credential, consumer, endpoint)
					// The runtime resolves every selectable entry's
					// credential when it starts: one that does not
					// resolve stops the route, not just its entry.
					b.Edge(route, "credential:"+m.Credential+"@"+endpoint, graph.EdgeRequires)
				}
			}
		}
	} else {
		m := o.Model
		b.Node(graph.Node{ID: route, Kind: graph.KindModel, Attributes: map[string]string{"provider": m.Provider, "model": m.ID}})
		if consumer, endpoint, _ := m.Target(); consumer != "" && !opts.HostModel {
			if _, declared := d.Credentials()[m.Credential]; declared || m.Provider != "openai_compatible" {
				credential(route, m.Credential, consumer, endpoint)
			}
		}
	}

	return b.Graph(), nil
}

// sandbox adds the sandbox node of a process-running capability: off is
// the host's recorded choice; a required sandbox must give what the
// deployment asks for (no authority layer lowering its filesystem or
// network scope), must not open what policy closes (a writable workspace
// where fs.write is denied), and must be buildable here.
func (b *graphBuilder) sandbox(ctx context.Context, d *Source, from, id string, p sandbox.Profile, narrowed config.SandboxNarrowing, isNarrowed bool, bwrap string) error {
	p = p.Normalized()
	b.Node(graph.Node{ID: id, Kind: graph.KindSandbox, Attributes: map[string]string{"profile": p.String()}})
	b.Edge(from, id, graph.EdgeRequires)
	if p.Mode == sandbox.Off {
		return nil
	}
	if isNarrowed {
		b.Set(id, graph.Unsupported, graph.Reason{Code: "sandbox_narrowed", Layer: narrowed.Layer,
			Detail: fmt.Sprintf("the deployment asks for %s and authority layer %q lowers it to %s, so what needs the difference fails; ask for what the layer allows", narrowed.Requested, narrowed.Layer, narrowed.Effective)})
	}
	if p.Filesystem == sandbox.WorkspaceWrite || p.Filesystem == sandbox.RepoWrite {
		dec, err := d.Decide(ctx, authority.FSWrite, nil)
		if err != nil {
			return err
		}
		if !dec.Allowed {
			b.Set(id, graph.Unsupported, graph.Reason{Code: "sandbox_policy_incompatible", Layer: dec.Layer, Rule: dec.RuleID,
				Detail: "the sandbox lets the process write the workspace (filesystem = " + string(p.Filesystem) + ") while policy denies fs.write: " + dec.Reason + `; use filesystem = "read-only" or grant fs.write`})
		}
	}
	if b.launcher == nil {
		b.launcher = sandbox.NewLauncher(bwrap)
	}
	if err := b.launcher.Ready(ctx); err != nil {
		b.Set(id, graph.Unsupported, graph.Reason{Code: "sandbox_unavailable", Detail: err.Error()})
	}
	return nil
}

// skills adds a node per discovered Skill with seed 002's five validation
// steps: the source resolves (discovery and, for activated Skills,
// activation), the instructions pass the policy check (a claim of granted
// authority is flagged, never acted on), required tools and MCP servers
// exist and are admitted, required credentials exist, and the output
// contract is a usable schema.
//
// kind is the task's kind: a Skill not for it is denied (task_kind_mismatch)
// and its instructions are not activated.
func (b *graphBuilder) skills(ctx context.Context, d *Source, set *authority.Set, kind string) error {
	if d.SkillOptions == nil {
		return nil
	}
	sopts, err := d.SkillOptions()
	if err != nil {
		return err
	}
	if sopts.Empty() {
		return nil
	}
	cat, err := skills.Discover(ctx, sopts)
	if err != nil {
		return err
	}
	activated := map[string]skills.ActiveSkill{}
	var activateErr error
	if selection := SkillSelection(d.Config.Options.Skills.Activate, set); len(selection) > 0 {
		if act, err := cat.Activate(ctx, selection); err != nil {
			activateErr = err
		} else {
			for _, s := range act.ForTaskKind(kind).Skills() {
				activated[s.Skill.QualifiedName] = s
			}
		}
	}
	admitted := func(id string) bool {
		dec, err := d.Decide(ctx, authority.ID(id), nil)
		return err == nil && dec.Allowed
	}
	servers := func(name string) bool {
		_, ok := d.Config.Options.MCP.Servers[name]
		return ok && admitted(string(authority.MCPTool(name, "pablo-graph-probe")))
	}
	for _, f := range cat.Findings() {
		id := "skill:" + f.Root + "/" + f.Dir
		b.Node(graph.Node{ID: id, Kind: graph.KindSkill})
		state := graph.Unsupported
		if f.Code == skills.CodeDigestMismatch {
			state = graph.Denied // as a root package's pin that differs
		}
		b.Set(id, state, graph.Reason{Code: string(f.Code), Detail: f.Reason})
	}
	var claim *regexp.Regexp
	for _, s := range cat.Skills() {
		id := "skill:" + s.QualifiedName
		req := s.Requirements()
		attrs := map[string]string{"root": s.Root, "metadata_sha256": s.MetadataSHA256}
		if req.OutputSchema != nil {
			attrs["output_contract"] = string(req.OutputSchema)
		}
		if src := s.Source; src != nil {
			// Where a file or package Skill came from; a git package's
			// commit is the one its ref resolved to now.
			for k, v := range map[string]string{"source": src.Format, "source_ref": src.Ref,
				"source_commit": src.Commit, "source_subdir": src.Subdir, "source_digest": src.Digest} {
				if v != "" {
					attrs[k] = v
				}
			}
		}
		// Seed 002's bundle metadata, where the Skill declares it.
		bundle := s.Bundle()
		for k, v := range map[string]string{"owner": bundle.Owner, "version": bundle.Version, "task_kinds": strings.Join(bundle.TaskKinds, ","),
			"compatible_adapters": strings.Join(bundle.CompatibleAdapters, ","), "credentials": strings.Join(bundle.Credentials, ",")} {
			if v != "" {
				attrs[k] = v
			}
		}
		b.Node(graph.Node{ID: id, Kind: graph.KindSkill, Capability: s.QualifiedName, Attributes: attrs})
		if slices.Contains(d.Config.Options.Skills.Activate, s.QualifiedName) {
			// Selected by its ID: the runtime activates it only when
			// the authority admits that ID.
			dec, err := d.Decide(ctx, authority.ID(s.QualifiedName), nil)
			if err != nil {
				return err
			}
			b.Deny(id, dec)
		}
		for _, t := range req.Tools {
			tid := "tool:" + t
			if b.Lookup(tid) != nil {
				b.Edge(id, tid, graph.EdgeRequires)
			}
		}
		for _, m := range req.MCPServers {
			if b.Lookup("mcp:"+m) != nil {
				b.Edge(id, "mcp:"+m, graph.EdgeRequires)
			}
		}
		for _, f := range skills.Validate(s, admitted, servers) {
			state := graph.Denied
			if f.Code == skills.CodeInvalidOutputContract || f.Code == skills.CodeMCPServerMissing {
				state = graph.Unsupported
			}
			b.Set(id, state, graph.Reason{Code: string(f.Code), Detail: f.Reason})
		}
		target := skills.Target{Adapter: skills.Adapter, TaskKind: kind, Credential: func(n string) bool { _, ok := d.Credentials()[n]; return ok }}
		if o := d.Config.Options.Output.Schema; o != "" {
			target.OutputSchema = json.RawMessage(o)
		}
		for _, f := range skills.ValidateBundle(s, target) {
			r := graph.Reason{Code: string(f.Code), Detail: f.Reason}
			state := graph.Unsupported
			switch f.Code {
			case skills.CodeCredentialMissing:
				state = graph.MissingGrant
			case skills.CodeTaskKindMismatch:
				state = graph.Denied // for another kind of task
			}
			b.Set(id, state, r)
		}
		if pin, ok := d.Config.Options.Skills.Pins[s.QualifiedName]; ok {
			if err := skills.VerifyPin(sopts, s.QualifiedName, pin); err != nil {
				code := "skill_pin_unverified"
				if errors.Is(err, skills.ErrDigestMismatch) {
					code = string(skills.CodeDigestMismatch)
				}
				b.Set(id, graph.Denied, graph.Reason{Code: code, Detail: err.Error()})
			}
		}
		if a, ok := activated[s.QualifiedName]; ok {
			attrs["instructions_sha256"] = sha256Tag([]byte(a.Instructions))
			if claim == nil {
				claim = regexp.MustCompile(authorityClaim)
			}
			if m := claim.FindString(a.Instructions); m != "" {
				b.Note(id, graph.Reason{Code: "authority_claim_flagged",
					Detail: fmt.Sprintf("the instructions claim authority (%q); instructions are task data and grant nothing", m)})
			}
		} else if activateErr != nil && s.Bundle().ForTaskKind(kind) && activates(d.Config.Options.Skills.Activate, s) {
			b.Set(id, graph.Unsupported, graph.Reason{Code: "skill_activation_failed", Detail: activateErr.Error()})
		}
	}
	return nil
}

// activates reports whether selection names s.
func activates(selection []string, s skills.Skill) bool {
	for _, e := range selection {
		if e == s.QualifiedName || e == s.Name {
			return true
		}
	}
	return false
}

// oneLineReason keeps the first line of a reason.
func oneLineReason(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// sha256Tag is "sha256:" and the lowercase hex SHA-256 of b.
func sha256Tag(b []byte) string { return string(ledger.RefOf(b)) }

// SkillSelection is what a runtime activates of selection: every entry
// but the Skills set denies (a denied Skill is left out, never an error).
// A Skill denied only for a role is activated: each task then takes it
// when it holds the role (its authority decides, as for its tools).
func SkillSelection(selection []string, set *authority.Set) []string {
	out := make([]string, 0, len(selection))
	for _, e := range selection {
		if id := authority.ID(e); id.Kind() == authority.KindSkill {
			if d := set.Decide(authority.Request{Capability: id}); !d.Allowed && d.MissingRole == "" {
				continue
			}
		}
		out = append(out, e)
	}
	return out
}
