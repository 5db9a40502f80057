package pablo

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/internal/config"
	"github.com/pabloagent/pablo/internal/sandbox"
	"github.com/pabloagent/pablo/mcp"
	"github.com/pabloagent/pablo/skills"
)

// authorityClaim matches text in Skill instructions that claims to grant
// authority. Such a claim is flagged on the Skill's node and never acted
// on: instructions are task data, and only the host's layers grant.
var authorityClaim = regexp.MustCompile(`(?i)\b(you (are|have been) (granted|authori[sz]ed|permitted)|grants? you|approval[- ]mode|bypass(es)? (the )?(policy|approvals?|sandbox)|ignore (the |all )?(policy|previous instructions))\b`)

// graphBuilder accumulates nodes and edges.
type graphBuilder struct {
	g     Graph
	index map[string]int
	// launcher checks every required sandbox with one bubblewrap run.
	launcher *sandbox.Launcher
}

func (b *graphBuilder) node(n GraphNode) *GraphNode {
	if i, ok := b.index[n.ID]; ok {
		return &b.g.Nodes[i]
	}
	if n.State == "" {
		n.State = Ready
	}
	if n.Reasons == nil {
		n.Reasons = []GraphReason{}
	}
	b.index[n.ID] = len(b.g.Nodes)
	b.g.Nodes = append(b.g.Nodes, n)
	return &b.g.Nodes[len(b.g.Nodes)-1]
}

func (b *graphBuilder) edge(from, to, kind string) {
	b.g.Edges = append(b.g.Edges, GraphEdge{From: from, To: to, Kind: kind})
}

func (b *graphBuilder) set(id string, state Readiness, r GraphReason) {
	n := &b.g.Nodes[b.index[id]]
	// The first state that is not ready stays; a gate gives way to any
	// reason the node cannot be used at all.
	if n.State == Ready || (n.State == ApprovalGated && state != ApprovalGated) {
		n.State = state
	}
	n.Reasons = append(n.Reasons, r)
}

// deny records a policy denial on node id when d does not allow, and the
// approval gate when it allows only behind an approval.
func (b *graphBuilder) deny(id string, d authority.Decision) {
	if !d.Allowed {
		b.set(id, Denied, GraphReason{Code: "policy_denied", Layer: d.Layer, Rule: d.RuleID, Detail: d.Reason})
		return
	}
	b.gate(id, d)
}

// gate records on node id that every call waits for the task's approver
// when d needs approval, naming what requires it.
func (b *graphBuilder) gate(id string, d authority.Decision) {
	if !d.Allowed || !d.NeedsApproval {
		return
	}
	src := authority.ApprovalSourceOf(d)
	b.set(id, ApprovalGated, GraphReason{Code: "approval_required", Layer: src.Layer, Rule: src.RuleID,
		Detail: fmt.Sprintf("every call waits for the task's approver (required by layer %q rule %q); with no approval channel it is denied", src.Layer, src.RuleID)})
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
func (d *Deployment) Graph(ctx context.Context, opts GraphOptions) (*Graph, error) {
	set, err := d.Authority()
	if err != nil {
		return nil, err
	}
	resolver, err := d.Resolver(authority.ResolverOptions{LookupEnv: opts.LookupEnv, Host: opts.Host})
	if err != nil {
		return nil, err
	}
	b := &graphBuilder{g: Graph{Fingerprint: d.c.Fingerprint, Probed: opts.Health != nil || opts.Cards != nil}, index: map[string]int{}}
	credential := func(from, name string, consumer authority.Consumer, dest string) {
		id := "credential:" + name + "@" + dest
		b.node(GraphNode{ID: id, Kind: nodeCredential, Attributes: map[string]string{"name": name, "consumer": string(consumer), "destination": dest}})
		b.edge(from, id, edgeRequires)
		if _, err := resolver.Resolve(ctx, name, consumer, dest); err != nil {
			n := &b.g.Nodes[b.index[id]]
			if n.State == Ready {
				b.set(id, MissingGrant, GraphReason{Code: "credential_unavailable", Credential: name, Consumer: string(consumer), Destination: dest,
					Detail: fmt.Sprintf("credential %q does not resolve for %s at %s: %v", name, consumer, dest, err)})
			}
		}
	}

	// The tool profile.
	b.node(GraphNode{ID: "tools", Kind: nodeToolProfile})
	for _, t := range d.NativeTools() {
		id := "tool:" + string(t)
		b.node(GraphNode{ID: id, Kind: nodeTool, Capability: string(t)})
		b.edge("tools", id, edgeOffers)
		dec, err := d.Decide(ctx, t, nil)
		if err != nil {
			return nil, err
		}
		b.deny(id, dec)
		if t != authority.ShellRun {
			continue
		}
		b.node(GraphNode{ID: "shell.rules", Kind: nodeShellRules})
		b.edge(id, "shell.rules", edgeRequires)
		if _, err := d.shellPolicy(); err != nil {
			b.set("shell.rules", Unsupported, GraphReason{Code: "shell_rules_invalid", Detail: err.Error()})
		} else if err := d.c.CheckShellExamples(); err != nil {
			b.set("shell.rules", Unsupported, GraphReason{Code: "rule_example_failed", Detail: err.Error()})
		}
		n, narrowed := d.c.ShellSandboxNarrowing()
		if err := b.sandbox(ctx, d, id, "sandbox:shell.run", d.shellSandbox(), n, narrowed, opts.Bubblewrap); err != nil {
			return nil, err
		}
	}

	// MCP servers, their credentials and, when probed, their health and tools.
	health := map[string]mcp.Health{}
	for _, h := range opts.Health {
		health[h.Server] = h
	}
	for _, name := range sortedKeys(d.c.Options.MCP.Servers) {
		s := d.c.Options.MCP.Servers[name]
		id := "mcp:" + name
		attrs := map[string]string{"transport": s.Transport, "required": strconv.FormatBool(s.Required)}
		for raw, pin := range s.Pins {
			attrs["pin:"+raw] = pin
		}
		b.node(GraphNode{ID: id, Kind: nodeMCPServer, Capability: "mcp/" + name, Attributes: attrs})
		// A tool name no server uses: what denies it denies the server.
		dec := set.Decide(authority.Request{Capability: authority.MCPTool(name, "pablo-graph-probe")})
		if !dec.Allowed {
			for _, st := range dec.Trail {
				if !st.Allowed && (st.Dimension == authority.DimMCPServers || st.Dimension == authority.DimMCPLaunchers || st.Dimension == authority.DimExecutables) {
					b.deny(id, dec)
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
			if key := d.c.Options.Approvals.RequiredBy(string(authority.MCPTool(name, "pablo-graph-probe"))); key != "" {
				gd.RequireApproval(config.ApprovalsLayer, key)
			}
		}
		b.gate(id, gd)
		for _, v := range sortedKeys(s.Env) {
			credential(id, s.Env[v], authority.ConsumerMCPEnv, "mcp:"+name+":env:"+v)
		}
		for _, k := range sortedKeys(s.Headers) {
			credential(id, s.Headers[k], authority.ConsumerMCPHeaders, "mcp:"+name+":header:"+k)
		}
		if s.Transport == string(mcp.Stdio) {
			p, _ := d.c.MCPSandbox(name)
			n, narrowed := d.c.MCPSandboxNarrowing(name)
			if err := b.sandbox(ctx, d, id, "sandbox:"+id, p, n, narrowed, opts.Bubblewrap); err != nil {
				return nil, err
			}
		}
		h, probed := health[name]
		if !probed {
			continue
		}
		if h.Version != "" {
			b.g.Nodes[b.index[id]].Attributes["protocol_version"] = h.Version
			if !slices.Contains(mcp.SupportedVersions(), h.Version) {
				b.set(id, Unsupported, GraphReason{Code: "mcp_version_unsupported", Health: string(h.State),
					Detail: fmt.Sprintf("the server negotiated MCP protocol version %q; this client implements %v", h.Version, mcp.SupportedVersions())})
			}
		}
		switch h.State {
		case mcp.Failed:
			b.set(id, Unhealthy, GraphReason{Code: "mcp_failed", Health: string(h.State), Detail: oneLineReason(h.Reason)})
		case mcp.Degraded:
			n := &b.g.Nodes[b.index[id]]
			n.Reasons = append(n.Reasons, GraphReason{Code: "mcp_degraded", Health: string(h.State), Detail: oneLineReason(h.Reason)})
		case mcp.Denied:
			r := GraphReason{Code: "policy_denied", Health: string(h.State), Detail: oneLineReason(h.Reason)}
			if h.Decision != nil {
				r.Layer, r.Rule = h.Decision.Layer, h.Decision.RuleID
			}
			b.set(id, Denied, r)
		}
		for _, t := range h.Tools {
			tid := "tool:" + string(t.ID)
			b.node(GraphNode{ID: tid, Kind: nodeMCPTool, Capability: string(t.ID), Attributes: map[string]string{"digest": t.Digest}})
			b.edge(id, tid, edgeOffers)
			if !t.Admitted {
				b.set(tid, Denied, GraphReason{Code: string(t.Code), Layer: t.Layer, Rule: t.RuleID, Detail: oneLineReason(t.Reason)})
				continue
			}
			td, err := d.Decide(ctx, t.ID, nil)
			if err != nil {
				return nil, err
			}
			b.gate(tid, td)
		}
	}

	if err := b.skills(ctx, d, set); err != nil {
		return nil, err
	}

	// Children, what they may be given, and the A2A remotes.
	if err := b.children(ctx, d, set, opts.Cards, credential); err != nil {
		return nil, err
	}

	// The model route, its models and their credentials.
	route := "model"
	o := &d.c.Options
	if o.ModelRoute != "" {
		route = "route:" + o.ModelRoute
		b.node(GraphNode{ID: route, Kind: nodeRoute, Attributes: map[string]string{"required_capabilities": strings.Join(d.c.RouteRequirements(o.ModelRoute), ",")}})
		entries, _ := d.c.RouteEntries(o.ModelRoute) // checked when the deployment loaded
		for _, e := range entries {
			n := e.Model
			id := "model:" + n
			m := o.Models[n]
			b.node(GraphNode{ID: id, Kind: nodeModel, Attributes: map[string]string{"provider": m.Provider, "model": m.ID, "capabilities": strings.Join(m.Supports(), ",")}})
			b.edge(route, id, edgeAlternative)
			if len(e.Missing) > 0 {
				b.set(id, Unsupported, GraphReason{Code: "model_capability_missing",
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
					b.edge(route, "credential:"+m.Credential+"@"+endpoint, edgeRequires)
				}
			}
		}
	} else {
		m := o.Model
		b.node(GraphNode{ID: route, Kind: nodeModel, Attributes: map[string]string{"provider": m.Provider, "model": m.ID}})
		if consumer, endpoint, _ := m.Target(); consumer != "" && !opts.HostModel {
			if _, declared := d.Credentials()[m.Credential]; declared || m.Provider != "openai_compatible" {
				credential(route, m.Credential, consumer, endpoint)
			}
		}
	}

	b.g.settle()
	b.g.sortGraph()
	b.g.Digest = b.g.digest()
	return &b.g, nil
}

// sandbox adds the sandbox node of a process-running capability: off is
// the host's recorded choice; a required sandbox must give what the
// deployment asks for (no authority layer lowering its filesystem or
// network scope), must not open what policy closes (a writable workspace
// where fs.write is denied), and must be buildable here.
func (b *graphBuilder) sandbox(ctx context.Context, d *Deployment, from, id string, p sandbox.Profile, narrowed config.SandboxNarrowing, isNarrowed bool, bwrap string) error {
	p = p.Normalized()
	b.node(GraphNode{ID: id, Kind: nodeSandbox, Attributes: map[string]string{"profile": p.String()}})
	b.edge(from, id, edgeRequires)
	if p.Mode == sandbox.Off {
		return nil
	}
	if isNarrowed {
		b.set(id, Unsupported, GraphReason{Code: "sandbox_narrowed", Layer: narrowed.Layer,
			Detail: fmt.Sprintf("the deployment asks for %s and authority layer %q lowers it to %s, so what needs the difference fails; ask for what the layer allows", narrowed.Requested, narrowed.Layer, narrowed.Effective)})
	}
	if p.Filesystem == sandbox.WorkspaceWrite {
		dec, err := d.Decide(ctx, authority.FSWrite, nil)
		if err != nil {
			return err
		}
		if !dec.Allowed {
			b.set(id, Unsupported, GraphReason{Code: "sandbox_policy_incompatible", Layer: dec.Layer, Rule: dec.RuleID,
				Detail: "the sandbox lets the process write the workspace (filesystem = workspace-write) while policy denies fs.write: " + dec.Reason + `; use filesystem = "read-only" or grant fs.write`})
		}
	}
	if b.launcher == nil {
		b.launcher = sandbox.NewLauncher(bwrap)
	}
	if err := b.launcher.Ready(ctx); err != nil {
		b.set(id, Unsupported, GraphReason{Code: "sandbox_unavailable", Detail: err.Error()})
	}
	return nil
}

// skills adds a node per discovered Skill with seed 002's five validation
// steps: the source resolves (discovery and, for activated Skills,
// activation), the instructions pass the policy check (a claim of granted
// authority is flagged, never acted on), required tools and MCP servers
// exist and are admitted, required credentials exist, and the output
// contract is a usable schema.
func (b *graphBuilder) skills(ctx context.Context, d *Deployment, set *authority.Set) error {
	if len(d.c.Options.Skills.Roots) == 0 {
		return nil
	}
	sopts, err := d.SkillOptions()
	if err != nil {
		return err
	}
	cat, err := skills.Discover(ctx, sopts)
	if err != nil {
		return err
	}
	activated := map[string]skills.ActiveSkill{}
	var activateErr error
	if selection := skillSelection(d.c.Options.Skills.Activate, set); len(selection) > 0 {
		if act, err := cat.Activate(ctx, selection); err != nil {
			activateErr = err
		} else {
			for _, s := range act.Skills() {
				activated[s.Skill.QualifiedName] = s
			}
		}
	}
	admitted := func(id string) bool {
		dec, err := d.Decide(ctx, authority.ID(id), nil)
		return err == nil && dec.Allowed
	}
	servers := func(name string) bool {
		_, ok := d.c.Options.MCP.Servers[name]
		return ok && admitted(string(authority.MCPTool(name, "pablo-graph-probe")))
	}
	for _, f := range cat.Findings() {
		id := "skill:" + f.Root + "/" + f.Dir
		b.node(GraphNode{ID: id, Kind: nodeSkill})
		b.set(id, Unsupported, GraphReason{Code: string(f.Code), Detail: f.Reason})
	}
	for _, s := range cat.Skills() {
		id := "skill:" + s.QualifiedName
		req := s.Requirements()
		attrs := map[string]string{"root": s.Root, "metadata_sha256": s.MetadataSHA256}
		if req.OutputSchema != nil {
			attrs["output_contract"] = string(req.OutputSchema)
		}
		b.node(GraphNode{ID: id, Kind: nodeSkill, Capability: s.QualifiedName, Attributes: attrs})
		if slices.Contains(d.c.Options.Skills.Activate, s.QualifiedName) {
			// Selected by its ID: the runtime activates it only when
			// the authority admits that ID.
			dec, err := d.Decide(ctx, authority.ID(s.QualifiedName), nil)
			if err != nil {
				return err
			}
			b.deny(id, dec)
		}
		for _, t := range req.Tools {
			tid := "tool:" + t
			if _, ok := b.index[tid]; ok {
				b.edge(id, tid, edgeRequires)
			}
		}
		for _, m := range req.MCPServers {
			if _, ok := b.index["mcp:"+m]; ok {
				b.edge(id, "mcp:"+m, edgeRequires)
			}
		}
		for _, f := range skills.Validate(s, admitted, servers) {
			state := Denied
			if f.Code == skills.CodeInvalidOutputContract || f.Code == skills.CodeMCPServerMissing {
				state = Unsupported
			}
			b.set(id, state, GraphReason{Code: string(f.Code), Detail: f.Reason})
		}
		if a, ok := activated[s.QualifiedName]; ok {
			attrs["instructions_sha256"] = sha256Tag([]byte(a.Instructions))
			if m := authorityClaim.FindString(a.Instructions); m != "" {
				n := &b.g.Nodes[b.index[id]]
				n.Reasons = append(n.Reasons, GraphReason{Code: "authority_claim_flagged",
					Detail: fmt.Sprintf("the instructions claim authority (%q); instructions are task data and grant nothing", m)})
			}
		} else if activateErr != nil && activates(d.c.Options.Skills.Activate, s) {
			b.set(id, Unsupported, GraphReason{Code: "skill_activation_failed", Detail: activateErr.Error()})
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
