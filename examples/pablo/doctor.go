package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/a2a"
	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/deployment"
	"github.com/pabloagent/pablo/graph"
	"github.com/pabloagent/pablo/mcp"
	"github.com/pabloagent/pablo/skills"
)

// The doctor exit codes (the reference's, §2): the first failing finding
// sets the exit code.
const (
	doctorOK             = 0
	doctorInvalid        = 2
	doctorCredential     = 3
	doctorAuthRejected   = 4
	doctorUnsupported    = 5
	doctorMCP            = 6
	doctorPolicyDenied   = 7
	doctorProvider       = 8
	doctorInterrupted    = 130
	doctorReportVersion  = 1
	doctorProbeDeadline  = 10 * time.Second
	doctorProbeMaxTokens = 16
	doctorSkillsDeadline = 5 * time.Second
)

// doctorReport is the version-1 doctor report (--json).
type doctorReport struct {
	SchemaVersion int           `json:"schema_version"`
	Fingerprint   *string       `json:"fingerprint"`
	Checks        []doctorCheck `json:"checks"`
	ExitCode      int           `json:"exit_code"`
}

// doctorCheck is one finding. Code is present on failures: a stable,
// machine-readable reason.
type doctorCheck struct {
	Name   string `json:"name"`
	Status string `json:"status"` // ok, failed or skipped
	Code   string `json:"code,omitempty"`
	Detail string `json:"detail"`
	exit   int
}

// doctor collects findings in order.
type doctor struct {
	report doctorReport
	// health is what --probe mcp found, cards what --probe a2a fetched:
	// the graph includes them.
	health []mcp.Health
	cards  []a2a.Probe
}

func (dr *doctor) ok(name, format string, args ...any) {
	dr.report.Checks = append(dr.report.Checks, doctorCheck{Name: name, Status: "ok", Detail: fmt.Sprintf(format, args...)})
}

// warn reports what does not stop a run but is likely a mistake: the
// exit code is unchanged.
func (dr *doctor) warn(name, detail string) {
	dr.report.Checks = append(dr.report.Checks, doctorCheck{Name: name, Status: "warning", Detail: detail})
}

func (dr *doctor) skip(name, detail string) {
	dr.report.Checks = append(dr.report.Checks, doctorCheck{Name: name, Status: "skipped", Detail: detail})
}

func (dr *doctor) fail(name string, exit int, code, detail string) {
	dr.report.Checks = append(dr.report.Checks, doctorCheck{Name: name, Status: "failed", Code: code, Detail: detail, exit: exit})
	if dr.report.ExitCode == doctorOK {
		dr.report.ExitCode = exit
	}
}

// failedAmong names the first of the checks called names that failed, or
// "" when none did. A probe is gated on the checks it needs, not on every
// earlier one: the sandbox's canaries use no credential, so a missing
// provider key must not hide them.
func (dr *doctor) failedAmong(names ...string) string {
	for _, c := range dr.report.Checks {
		if c.Status != "failed" {
			continue
		}
		for _, n := range names {
			if c.Name == n {
				return n
			}
		}
	}
	return ""
}

// probeNeeds lists the checks probe needs to pass before it runs; config
// always precedes them (nothing runs without a loaded deployment).
func probeNeeds(probe string) []string {
	switch probe {
	case "provider":
		// One request with the model's credential; nothing else it does
		// depends on the offline checks.
		return []string{"credentials"}
	case "mcp":
		// Every server starts in the workspace, with its credentials,
		// under its sandbox, as policy admits it.
		return []string{"workspace", "credentials", "policy", "sandbox"}
	case "sandbox":
		// The canaries run under bubblewrap with the workspace's sandbox;
		// they resolve no credential and start no server.
		return []string{"workspace", "sandbox"}
	}
	return nil
}

// doctorCommand implements `pablo doctor [--json] --config F --bind ...
// [--probe provider|mcp]`. Without a probe it checks offline: the
// configuration loads, its credentials resolve (values are never shown),
// the workspace binding exists, Skills discover and activate, and no static
// policy makes a required MCP server useless. --probe provider sends one
// fixed short request (no tools, a 16-token allowance, a 10 s deadline);
// --probe mcp starts the configured servers and closes them without calling
// a tool; --probe sandbox runs the sandbox's live boundary canaries. A
// probe runs when the checks it needs passed (probeNeeds), whatever the
// others found.
func doctorCommand(ctx context.Context, args []string, h *host) error {
	var help *helpRequest
	if _, err := parseArgs(args, "doctor"); errors.As(err, &help) {
		return help
	}
	dr := &doctor{report: doctorReport{SchemaVersion: doctorReportVersion, Checks: []doctorCheck{}}}
	jsonOut := false
	for _, a := range args {
		if a == "--json" {
			jsonOut = true
		}
	}
	dr.run(ctx, args, h)
	if ctx.Err() != nil && dr.report.ExitCode == doctorOK {
		dr.fail("interrupted", doctorInterrupted, "interrupted", "the doctor was interrupted")
	}
	if jsonOut {
		b, _ := json.Marshal(dr.report)
		h.stdout.Write(append(b, '\n'))
	} else {
		dr.print(h)
	}
	if dr.report.ExitCode == doctorOK {
		return nil
	}
	first := ""
	for _, c := range dr.report.Checks {
		if c.Status == "failed" {
			first = c.Name
			break
		}
	}
	return &exitError{code: dr.report.ExitCode, err: fmt.Errorf("doctor: the %s check failed", first)}
}

func (dr *doctor) run(ctx context.Context, args []string, h *host) {
	p, err := parseArgs(args, "doctor")
	if err == nil && len(p.args) > 0 {
		err = usagef("doctor takes no positional arguments, got %q", p.args[0])
	}
	probe := ""
	if err == nil {
		probe = p.one("probe")
		if probe != "" && probe != "provider" && probe != "mcp" && probe != "sandbox" && probe != "a2a" {
			err = usagef("--probe takes provider, mcp, sandbox or a2a, got %q", probe)
		}
	}
	var overrides []pablo.Override
	if err == nil {
		overrides, err = runOverrides(p)
	}
	var d *pablo.Deployment
	if err == nil {
		var cleanup func()
		d, cleanup, err = loadRun(ctx, p, h, overrides)
		defer cleanup()
	}
	if err != nil {
		dr.fail("config", doctorInvalid, "invalid_configuration", err.Error())
		return
	}
	dr.report.Fingerprint = &d.Fingerprint
	dr.ok("config", "valid %s", d.Fingerprint)
	fixture := p.one("fixture-endpoint")

	if ws, err := d.Workspace(); err != nil {
		dr.fail("workspace", doctorInvalid, "workspace_unavailable", err.Error())
	} else {
		dr.ok("workspace", "%s", ws)
	}
	dr.credentials(ctx, d, h, fixture != "")
	if fixture == "" {
		dr.localModels(d)
	}
	dr.skills(ctx, d)
	dr.policy(d)
	dr.policyNames(ctx, d, h)
	dr.sandbox(ctx, d, h.bubblewrap)
	switch probe {
	case "sandbox":
		dr.probeSandbox(ctx, d, h.bubblewrap, h.forwarder)
	case "provider":
		if n := dr.failedAmong(probeNeeds("provider")...); n != "" {
			dr.skip("probe.provider", "the "+n+" check failed; nothing was sent")
		} else {
			dr.probeProvider(ctx, d, h, fixture)
		}
	case "mcp":
		if n := dr.failedAmong(probeNeeds("mcp")...); n != "" {
			dr.skip("probe.mcp", "the "+n+" check failed; no server was started")
		} else {
			dr.probeMCP(ctx, d, h)
		}
	case "a2a":
		dr.probeA2A(ctx, d, h)
	}
	dr.graph(ctx, d, h, fixture != "", p.values["role"], p.one("kind"))
}

// localModels notes each model endpoint that is plain http to this host's
// loopback interface: a local model server, allowed without a host switch
// because its traffic never leaves the host.
func (dr *doctor) localModels(d *pablo.Deployment) {
	for _, m := range d.ModelProfiles() {
		u, err := url.Parse(m.Endpoint)
		if err != nil || u.Scheme != "http" {
			continue
		}
		ip := net.ParseIP(u.Hostname())
		if u.Hostname() == "localhost" || ip != nil && ip.IsLoopback() {
			dr.ok("model.local", "%s: %s is a local model server over plain http on this host's loopback interface; its traffic never leaves the host", m.Option, m.Endpoint)
		}
	}
}

// credentialUse is one credential the configuration will resolve.
type credentialUse struct {
	what        string
	name        string
	consumer    authority.Consumer
	destination string
	// optional: only an optional MCP server uses it, and a run leaves
	// that server out when it does not resolve.
	optional bool
}

// credentialUses lists what a run of d would resolve, in a stable order.
func credentialUses(d *pablo.Deployment, fixture bool) []credentialUse {
	var uses []credentialUse
	if !fixture {
		for _, m := range d.ModelProfiles() {
			if m.Consumer == "" || m.Keyless {
				continue // no request, or a local server without a key
			}
			uses = append(uses, credentialUse{what: m.Option, name: m.Credential, consumer: m.Consumer, destination: m.Endpoint})
		}
	}
	opts := d.Options()
	if o := opts.OTel; o.Exporter == "otlp" && !o.SDKDisabled && o.Headers != "" {
		uses = append(uses, credentialUse{what: "/options/otel/headers", name: o.Headers, consumer: authority.ConsumerOTelHeaders, destination: o.Endpoint})
	}
	for _, name := range sortedNames(opts.MCP.Servers) {
		s := opts.MCP.Servers[name]
		for _, v := range sortedNames(s.Env) {
			uses = append(uses, credentialUse{what: "/options/mcp/servers/" + name + "/env/" + v, name: s.Env[v], consumer: authority.ConsumerMCPEnv, destination: "mcp:" + name + ":env:" + v, optional: !s.Required})
		}
		for _, k := range sortedNames(s.Headers) {
			uses = append(uses, credentialUse{what: "/options/mcp/servers/" + name + "/headers/" + k, name: s.Headers[k], consumer: authority.ConsumerMCPHeaders, destination: "mcp:" + name + ":header:" + k, optional: !s.Required})
		}
		if o := s.OAuth; o != nil {
			for _, c := range []struct{ key, name string }{{"client_secret", o.ClientSecret}, {"private_key", o.PrivateKey}, {"id_token", o.IDToken}} {
				if c.name != "" {
					uses = append(uses, credentialUse{what: "/options/mcp/servers/" + name + "/oauth/" + c.key, name: c.name, consumer: authority.ConsumerMCPOAuth, destination: "mcp:" + name + ":oauth:" + c.key, optional: !s.Required})
				}
			}
		}
	}
	for _, name := range sortedNames(opts.A2A.Remotes) {
		r := opts.A2A.Remotes[name]
		if r.Bearer != nil {
			uses = append(uses, credentialUse{what: "/options/a2a/remotes/" + name + "/bearer", name: r.Bearer.Credential, consumer: authority.ConsumerA2ABearer, destination: r.Endpoint})
		}
	}
	return uses
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// credentials resolves every credential a run would use, for exactly its
// consumer and destination. Values are never shown.
func (dr *doctor) credentials(ctx context.Context, d *pablo.Deployment, h *host, fixture bool) {
	uses := credentialUses(d, fixture)
	if len(uses) == 0 {
		dr.ok("credentials", "no credential is used")
		return
	}
	r, err := d.Resolver(authority.ResolverOptions{LookupEnv: h.lookupEnv})
	if err != nil {
		dr.fail("credentials", doctorCredential, "credential_unavailable", err.Error())
		return
	}
	var names, left []string
	missing := 0
	for _, u := range uses {
		if _, err := r.Resolve(ctx, u.name, u.consumer, u.destination); err != nil {
			if u.optional {
				// The run leaves the optional server out: reported, as
				// `pablo mcp probe` does, never failed.
				left = append(left, fmt.Sprintf("%s: %v; the optional server is left out", u.what, err))
				continue
			}
			// Every missing credential is named, not only the first: one
			// failed check each, so one pass shows all there is to set.
			dr.fail("credentials", doctorCredential, "credential_unavailable", fmt.Sprintf("%s: %v", u.what, err))
			missing++
			continue
		}
		names = append(names, u.name)
	}
	if missing > 0 {
		return
	}
	dr.ok("credentials", "%d resolvable (values not shown): %s", len(names), strings.Join(names, ", "))
	for _, l := range left {
		dr.skip("credentials", l)
	}
}

// skills discovers the configured roots and activates the configured
// Skills, under the reference's 5 s discovery deadline.
func (dr *doctor) skills(ctx context.Context, d *pablo.Deployment) {
	sk := d.Options().Skills
	opts, err := d.SkillOptions()
	if err != nil {
		dr.fail("skills", doctorInvalid, "skills_unavailable", err.Error())
		return
	}
	if opts.Empty() {
		dr.ok("skills", "no Skills roots are configured")
		return
	}
	ctx, cancel := context.WithTimeout(ctx, doctorSkillsDeadline)
	defer cancel()
	cat, err := skills.Discover(ctx, opts)
	if err != nil {
		dr.fail("skills", doctorInvalid, "skills_unavailable", err.Error())
		return
	}
	// A file or package the deployment names is configuration, not a scan:
	// one that does not load (missing, digest, ref or version) fails.
	for _, f := range cat.Findings() {
		if f.Root == skills.FileRoot || f.Root == skills.PackageRoot {
			dr.fail("skills", doctorInvalid, string(f.Code), f.String())
			return
		}
	}
	if err := skills.VerifyPins(opts, sk.Pins); err != nil {
		dr.fail("skills", doctorInvalid, string(skills.CodeOf(err)), err.Error())
		return
	}
	if len(sk.Activate) > 0 {
		if _, err := cat.Activate(ctx, sk.Activate); err != nil {
			dr.fail("skills", doctorInvalid, "skills_unavailable", err.Error())
			return
		}
	}
	dr.ok("skills", "%s discovered, %d activated", plural(len(sk.Roots), "root"), len(sk.Activate))
}

// policy flags static policy that makes configured work impossible: a
// required MCP server that some layer denies outright (server, launcher or
// executable), or whose every tool some layer's tool rules deny.
func (dr *doctor) policy(d *pablo.Deployment) {
	set, err := d.Authority()
	if err != nil {
		dr.fail("policy", doctorInvalid, "invalid_configuration", err.Error())
		return
	}
	servers := d.Options().MCP.Servers
	for _, name := range sortedNames(servers) {
		if !servers[name].Required {
			continue
		}
		// A tool name no server would use: what denies it, denies the
		// whole server.
		dec := set.Decide(authority.Request{Capability: authority.MCPTool(name, "pablo-doctor-probe")})
		if !dec.Allowed {
			for _, st := range dec.Trail {
				if !st.Allowed && (st.Dimension == authority.DimMCPServers || st.Dimension == authority.DimMCPLaunchers || st.Dimension == authority.DimExecutables) {
					dr.fail("policy", doctorPolicyDenied, "policy_denied", fmt.Sprintf("required MCP server %q is denied by layer %q rule %q (%s)", name, dec.Layer, dec.RuleID, st.Dimension))
					return
				}
			}
		}
		for _, l := range set.Layers() {
			if rule, denied := layerDeniesEveryTool(l, name); denied {
				dr.fail("policy", doctorPolicyDenied, "policy_denied", fmt.Sprintf("required MCP server %q: layer %q admits none of its tools (%s)", name, l.ID, rule))
				return
			}
		}
	}
	dr.ok("policy", "%s; no required MCP server is denied outright", plural(len(set.Layers()), "layer"))
}

// policyNames warns of every tools rule (and tool_names entry) naming a
// capability that exists nowhere in the deployment, with the nearest
// known name: such a rule validates, yet matches no call. Patterns and
// MCP tools are left to the decision.
func (dr *doctor) policyNames(ctx context.Context, d *pablo.Deployment, h *host) {
	set, err := d.Authority()
	if err != nil {
		return
	}
	g, err := d.Graph(ctx, graph.Options{LookupEnv: h.lookupEnv, Bubblewrap: h.bubblewrap})
	if err != nil {
		return
	}
	known := g.KnownNames()
	check := func(layer, rule, value string) {
		if value == "" || strings.ContainsAny(value, "*?[") || authority.ID(value).Kind() == authority.KindMCPTool || slices.Contains(known, value) {
			return
		}
		dr.warn("policy", fmt.Sprintf("layer %q rule %q names %q, no capability of this deployment%s", layer, rule, value, didYouMean(g.Nearest(value))))
	}
	for _, l := range set.Layers() {
		for _, id := range l.ToolNames {
			check(l.ID, "tool_names", string(id))
		}
		if r := l.Dimensions[authority.DimTools]; r != nil {
			for _, rule := range append(append([]authority.Rule{}, r.Allow...), r.Deny...) {
				check(l.ID, rule.ID, rule.Value)
			}
		}
	}
}

// layerDeniesEveryTool reports whether layer l can admit no tool of
// server: its tool list names none, or a tool dimension denies by default
// and allows none of them.
func layerDeniesEveryTool(l authority.Layer, server string) (string, bool) {
	prefix := "mcp/" + server + "/"
	if l.ToolNames != nil {
		any := false
		for _, id := range l.ToolNames {
			if strings.HasPrefix(string(id), prefix) {
				any = true
				break
			}
		}
		if !any {
			return "builtin.tool_names.allowlist_miss", true
		}
	}
	for _, dim := range []authority.Dimension{authority.DimTools, authority.DimMCPTools} {
		r, ok := l.Dimensions[dim]
		if !ok || r == nil {
			continue
		}
		if len(r.Allow) == 0 {
			if r.Default != authority.Allow {
				return "builtin." + string(dim) + ".default_deny", true
			}
			continue
		}
		allowed := false
		for _, rule := range r.Allow {
			if strings.HasPrefix(rule.Value, prefix) {
				allowed = true
				break
			}
		}
		if !allowed {
			return "builtin." + string(dim) + ".allowlist_miss", true
		}
	}
	return "", false
}

// probeProvider sends one fixed short request through the first model
// the run would use (route entry 0 for a route): no tools, a 16-token
// allowance, a 10 s deadline. A 2xx event stream is success; the body is
// not evaluated.
func (dr *doctor) probeProvider(ctx context.Context, d *pablo.Deployment, h *host, fixture string) {
	r := d.ProbeProvider(ctx, deployment.ProviderProbeOptions{LookupEnv: h.lookupEnv, Fixture: fixture,
		MaxOutputTokens: doctorProbeMaxTokens, Timeout: doctorProbeDeadline})
	msg := r.Detail
	if r.Target != "" {
		msg = r.Target + ": " + r.Detail
	}
	if r.Code == "" {
		dr.ok("probe.provider", "%s", msg)
		return
	}
	dr.fail("probe.provider", probeExit(r.Code), r.Code, msg)
}

// probeExit is the doctor's exit code of a provider probe's reason.
func probeExit(code string) int {
	switch code {
	case "invalid_configuration":
		return doctorInvalid
	case "credential_unavailable":
		return doctorCredential
	case "provider_auth_rejected":
		return doctorAuthRejected
	case "provider_request_unsupported":
		return doctorUnsupported
	case "interrupted":
		return doctorInterrupted
	}
	return doctorProvider
}

// probeMCP starts every configured server (none treated as required, so
// each is reported) and closes them all without calling a tool; it fails
// as `pablo mcp probe` exits (mcpProbe.exit).
func (dr *doctor) probeMCP(ctx context.Context, d *pablo.Deployment, h *host) {
	if len(d.Options().MCP.Servers) == 0 {
		dr.ok("probe.mcp", "no MCP servers are configured")
		return
	}
	probe := probeMCPServers(ctx, d, h)
	dr.health = probe.health
	if code, reason, detail := probe.exit(ctx.Err() != nil); code != doctorOK {
		dr.fail("probe.mcp", code, reason, detail)
		return
	}
	dr.ok("probe.mcp", "%s; all closed, no tool called", probe.summary())
}

func (dr *doctor) print(h *host) {
	for _, c := range dr.report.Checks {
		mark := map[string]string{"ok": "ok  ", "failed": "FAIL", "skipped": "skip", "warning": "warn"}[c.Status]
		fmt.Fprintf(h.stdout, "%s %-15s %s", mark, c.Name, oneLine(c.Detail))
		if c.Status == "failed" {
			fmt.Fprintf(h.stdout, " [%s, exit %d]", c.Code, c.exit)
		}
		fmt.Fprintln(h.stdout)
	}
}
