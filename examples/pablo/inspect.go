package main

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/a2a"
	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/clock"
	"github.com/pabloagent/pablo/graph"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/mcp"
	"github.com/pabloagent/pablo/skills"
)

// inspectAssets are the inspector's templates and stylesheet: compiled
// into the executable, so a page loads nothing from anywhere else.
//
//go:embed inspect/*.tmpl inspect/style.css
var inspectAssets embed.FS

// skillPreviewLimit bounds the instruction preview of a Skill page.
const skillPreviewLimit = 4096

// inspectCommand implements `pablo inspect`: a read-only local web UI
// over one or more deployments (each a stack), computed from the same
// graph and why code path as `pablo graph` and `pablo why`.
func inspectCommand(ctx context.Context, args []string, h *host) error {
	p, err := parseArgs(args, "inspect")
	if err != nil {
		return err
	}
	if len(p.args) != 0 {
		return usagef("inspect takes no positional arguments, got %q", p.args[0])
	}
	stacks, err := loadStacks(ctx, p, h)
	if err != nil {
		return err
	}
	addr := p.one("listen")
	explicit := addr != ""
	if !explicit {
		addr = "127.0.0.1:0"
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usagef("--listen takes HOST:PORT, got %q: %v", addr, err)
	}
	loopback := isLoopbackHost(host)
	if !loopback {
		fmt.Fprintf(h.stderr, "pablo inspect: warning: listening on %s, not loopback: anyone who can reach it sees every stack's policy, rules and task records\n", addr)
	}
	var store ledger.Store
	if value := storeValue(h, p); value != "" {
		// The inspector only reads: the store is never created or migrated.
		store, err = openStore(ctx, h, nil, value, true)
		if errors.Is(err, fs.ErrNotExist) {
			return &exitError{code: 2, err: fmt.Errorf("no ledger store at %s", value)}
		}
		if err != nil {
			return &exitError{code: 2, err: fmt.Errorf("open the ledger store: %w", err)}
		}
		defer store.Close()
	}
	srv, err := newInspector(stacks, store, !loopback)
	if err != nil {
		return err
	}
	srv.token, srv.host = newProbeToken(), h
	// The names a request may be addressed by besides IP addresses and
	// localhost: the operator's, and the one it listens on.
	names := p.values["allow-host"]
	if _, err := netip.ParseAddr(strings.Trim(host, "[]")); err != nil && host != "" {
		names = append(names, host)
	}
	if err := srv.allowHosts(names); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("inspect: listen on %s: %w", addr, err)
	}
	fmt.Fprintf(h.stdout, "pablo inspect: serving http://%s/\n", ln.Addr())
	if f, ok := h.stdout.(interface{ flush() }); ok {
		f.flush()
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case <-ctx.Done():
		shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(shut)
		return nil
	case err := <-done:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	}
}

// loadStacks loads each --config as a stack, with the command line's
// bindings, profile and config root, and computes its graph offline.
func loadStacks(ctx context.Context, p *parsed, h *host) ([]*inspectStack, error) {
	configs := p.values["config"]
	if len(configs) == 0 {
		return nil, usagef("--config is required (repeat it for more stacks)")
	}
	var stacks []*inspectStack
	names := map[string]bool{}
	for _, cfg := range configs {
		one := &parsed{values: map[string][]string{"config": {cfg}, "bind": p.values["bind"], "config-root": p.values["config-root"], "profile": p.values["profile"]}, bools: map[string]bool{"loopback-http": p.bools["loopback-http"]}}
		d, err := loadDeployment(ctx, one, h, nil)
		if err != nil {
			return nil, err
		}
		name := d.Name()
		if name == "" {
			name = stackName(cfg)
		}
		if names[name] {
			return nil, usagef("two --config files make the stack %q: set deployment.name in one, or rename its file", name)
		}
		names[name] = true
		s, err := newInspectStack(ctx, name, d, graph.Options{LookupEnv: h.lookupEnv, Bubblewrap: h.bubblewrap})
		if err != nil {
			return nil, err
		}
		stacks = append(stacks, s)
	}
	return stacks, nil
}

// stackName is the name of a stack whose file sets no deployment.name:
// the file's base name without its extension.
func stackName(cfg string) string {
	base := filepath.Base(cfg)
	return strings.TrimSuffix(base, filepath.Ext(base))
}

// allowHosts adds names (host names without a port) to those a request
// may be addressed to. An IP address or a name with a port or a path is
// a usage error: an address needs no allowing.
func (in *inspector) allowHosts(names []string) error {
	for _, n := range names {
		if n == "" || strings.ContainsAny(n, ":/[]@% \t") {
			return usagef("--allow-host takes a host name without a port, got %q", n)
		}
		name := canonicalHost(n)
		if _, err := netip.ParseAddr(name); err == nil {
			return usagef("--allow-host takes a host name, got the address %q: every IP address is answered on a listener not on loopback", n)
		}
		if in.names == nil {
			in.names = map[string]bool{}
		}
		in.names[name] = true
	}
	return nil
}

// hostAllowed is the DNS rebinding defence, applied to every request: a
// page a rebound name served (attacker.example resolving to this
// listener) is of that name's origin and could read every page and post
// the Probe form, so a request is served only when its Host is one no
// one else's DNS answer can take over. On a loopback listener that is a
// loopback address, localhost or a name the operator allowed; on an
// exposed one, any IP address too (the inspector is read by address).
func (in *inspector) hostAllowed(hostport string) bool {
	host := canonicalHost(hostport)
	if isLoopbackHost(host) || in.names[host] {
		return true
	}
	if !in.exposed {
		return false
	}
	_, err := netip.ParseAddr(host)
	return err == nil
}

// hostRefusal is the body of the 421 a request hostAllowed refused gets:
// which Host was refused and what the inspector answers instead.
func (in *inspector) hostRefusal(hostport string) string {
	what := "a loopback address, localhost"
	if in.exposed {
		what = "an IP address, localhost"
	}
	return fmt.Sprintf("the inspector answers only requests addressed to %s or a name given with --allow-host or --listen, not %q (DNS rebinding defence): open it by its address, or restart it with --allow-host NAME",
		what, shorten(hostport, 128))
}

// canonicalHost is the host of a Host header (or --allow-host value):
// without its port or brackets, lower case, without a final dot.
func canonicalHost(hostport string) string {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	host = strings.ToLower(strings.Trim(host, "[]"))
	if strings.HasSuffix(host, ".") && !strings.HasSuffix(host, "..") {
		host = strings.TrimSuffix(host, ".")
	}
	return host
}

// isLoopbackHost reports whether host names only this machine.
func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// inspectStack is one deployment as the inspector shows it.
type inspectStack struct {
	Name  string
	d     *pablo.Deployment
	opts  graph.Options
	Graph *graph.Graph
	// Skills are the stack's admitted Skills, from every source, with an
	// instruction preview each.
	Skills []skillView
	// SkillErrors are discovery findings.
	SkillErrors []string
	// Descriptions are the admitted MCP tools' descriptions, as their
	// servers wrote them, from the last probe (nil before one).
	Descriptions map[authority.ID]string
}

// MCPHealth is the MCP servers' health of the last probe (nil before
// one).
func (s *inspectStack) MCPHealth() []mcp.Health { return s.opts.Health }

// AgentCards are the A2A remotes' cards of the last probe (nil before
// one).
func (s *inspectStack) AgentCards() []a2a.Probe { return s.opts.Cards }

// skillView is one Skill of a stack.
type skillView struct {
	skills.Skill
	Preview   string
	Truncated bool
}

// SkillNode is the current graph's node of the Skill named name (ROOT/NAME),
// nil when the graph has none.
func (s *inspectStack) SkillNode(name string) *graph.Node {
	if n, ok := s.Graph.Node("skill:" + name); ok {
		return &n
	}
	return nil
}

func newInspectStack(ctx context.Context, name string, d *pablo.Deployment, opts graph.Options) (*inspectStack, error) {
	g, err := d.Graph(ctx, opts)
	if err != nil {
		return nil, err
	}
	s := &inspectStack{Name: name, d: d, opts: opts, Graph: g}
	sopts, err := d.SkillOptions()
	if err != nil {
		return nil, err
	}
	if sopts.Empty() {
		return s, nil
	}
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	cat, err := skills.Discover(dctx, sopts)
	if err != nil {
		s.SkillErrors = append(s.SkillErrors, err.Error())
		return s, nil
	}
	for _, f := range cat.Findings() {
		s.SkillErrors = append(s.SkillErrors, f.String())
	}
	for _, sk := range cat.Skills() {
		v := skillView{Skill: sk}
		v.Preview, v.Truncated = skillPreview(cat, sk)
		s.Skills = append(s.Skills, v)
	}
	return s, nil
}

// skillPreview is the start of a Skill's instructions, whatever its
// source (a root's directory, a single file, an inline Skill, a package),
// read-only and bounded by skillPreviewLimit; the template escapes it.
func skillPreview(cat *skills.Catalog, s skills.Skill) (string, bool) {
	text, more, err := cat.Preview(s.QualifiedName, skillPreviewLimit)
	if err != nil {
		return "", false
	}
	return text, more
}

// authorityClaimCode is the graph's reason code for Skill instructions
// that claim to grant authority.
const authorityClaimCode = "authority_claim_flagged"

// ClaimsAuthority reports whether the graph flags the instructions of the
// Skill named name (ROOT/NAME) for claiming authority they cannot grant.
func (s *inspectStack) ClaimsAuthority(name string) bool {
	n := s.SkillNode(name)
	if n == nil {
		return false
	}
	return slices.ContainsFunc(n.Reasons, func(r graph.Reason) bool { return r.Code == authorityClaimCode })
}

// cards groups a stack's nodes by what the stack builder shows.
type cardGroup struct {
	Title string
	Nodes []graph.Node
}

func (s *inspectStack) Cards() []cardGroup {
	order := []struct {
		title string
		kinds []string
	}{
		{"Tools", []string{"tool_profile", "tool", "shell_rules", "sandbox"}},
		{"MCP servers", []string{"mcp_server", "mcp_tool"}},
		{"Skills", []string{"skill"}},
		{"Children and remotes", []string{"children", "remote"}},
		{"Model route", []string{"model_route", "model"}},
		{"Memory", []string{"memory"}},
		{"Credentials", []string{"credential"}},
	}
	seen := map[string]bool{}
	var out []cardGroup
	for _, o := range order {
		g := cardGroup{Title: o.title}
		for _, n := range s.Graph.Nodes {
			if slices.Contains(o.kinds, n.Kind) {
				g.Nodes = append(g.Nodes, n)
				seen[n.ID] = true
			}
		}
		out = append(out, g)
	}
	other := cardGroup{Title: "Other"}
	for _, n := range s.Graph.Nodes {
		if !seen[n.ID] {
			other.Nodes = append(other.Nodes, n)
		}
	}
	if len(other.Nodes) > 0 {
		out = append(out, other)
	}
	return out
}

// Kind is the stack's nodes of the given kinds.
func (s *inspectStack) Kind(kinds ...string) []graph.Node {
	var out []graph.Node
	for _, n := range s.Graph.Nodes {
		if slices.Contains(kinds, n.Kind) {
			out = append(out, n)
		}
	}
	return out
}

// NodeState is the readiness of node id, "" when the graph has none.
func (s *inspectStack) NodeState(id string) string {
	if n, ok := s.Graph.Node(id); ok {
		return string(n.State)
	}
	return ""
}

// Requires is what node id requires or offers.
func (s *inspectStack) Requires(id string) []graph.Edge {
	var out []graph.Edge
	for _, e := range s.Graph.Edges {
		if e.From == id {
			out = append(out, e)
		}
	}
	return out
}

// inspector serves the pages.
type inspector struct {
	stacks []*inspectStack
	pages  map[string]*template.Template
	// store is the ledger, opened read-only; nil without --store.
	store ledger.Store
	// pageSize is how many tasks the Tasks page lists at a time.
	pageSize int
	// exposed says the listener is not loopback: a request may be
	// addressed to any IP address, not only a loopback one (hostAllowed).
	exposed bool
	// names are the host names, besides localhost, a request may be
	// addressed to (--allow-host, the --listen host), lower case.
	names map[string]bool
	// token binds the Probe form to this process; host is what a probe
	// runs with. mu guards the stacks' graphs, which a probe replaces.
	token string
	host  *host
	mu    sync.RWMutex
	// clock stamps the page of a task in flight with when it was read.
	clock clock.Clock
	// refresh is how often, in seconds, the page of a task in flight
	// reloads itself.
	refresh int
}

func newInspector(stacks []*inspectStack, store ledger.Store, exposed bool) (*inspector, error) {
	funcs := template.FuncMap{
		"whyTarget": whyTarget,
		"state":     func(r graph.Readiness) string { return string(r) },
		"dict": func(kv ...any) map[string]any {
			m := map[string]any{}
			for i := 0; i+1 < len(kv); i += 2 {
				m[kv[i].(string)] = kv[i+1]
			}
			return m
		},
	}
	base, err := template.New("layout.tmpl").Funcs(funcs).ParseFS(inspectAssets, "inspect/layout.tmpl")
	if err != nil {
		return nil, err
	}
	in := &inspector{stacks: stacks, store: store, pageSize: taskPageSize, pages: map[string]*template.Template{}, exposed: exposed, clock: clock.System{}, refresh: taskRefreshSeconds}
	for _, page := range []string{"stacks", "why", "tools", "mcp", "skills", "tasks", "task"} {
		t, err := template.Must(base.Clone()).ParseFS(inspectAssets, "inspect/"+page+".tmpl")
		if err != nil {
			return nil, err
		}
		in.pages[page] = t
	}
	return in, nil
}

// whyTarget is what `pablo why` takes for a node: a tool's capability
// ID (so policy decides it), else the node's ID.
func whyTarget(n graph.Node) string {
	if n.Capability != "" && (n.Kind == graph.KindTool || n.Kind == graph.KindMCPTool) {
		return n.Capability
	}
	return n.ID
}

func (in *inspector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
	hdr.Set("X-Content-Type-Options", "nosniff")
	// same-origin, not no-referrer: under no-referrer a browser sends
	// "Origin: null" with the Probe form's POST, which the probe's origin
	// check refuses (TestInspectorProbeAndXSSInABrowser presses the
	// button in Chromium). Nothing leaves for another origin either way.
	hdr.Set("Referrer-Policy", "same-origin")
	hdr.Set("Cache-Control", "no-store")
	if !in.hostAllowed(r.Host) {
		http.Error(w, in.hostRefusal(r.Host), http.StatusMisdirectedRequest)
		return
	}
	if r.URL.Path == "/probe" && r.Method == http.MethodPost {
		in.probe(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hdr.Set("Allow", "GET, HEAD")
		http.Error(w, "the inspector is read-only", http.StatusMethodNotAllowed)
		return
	}
	switch r.URL.Path {
	case "/style.css":
		b, _ := inspectAssets.ReadFile("inspect/style.css")
		hdr.Set("Content-Type", "text/css; charset=utf-8")
		w.Write(b)
	case "/", "/stacks":
		in.render(w, "stacks", map[string]any{"Stacks": in.stacks})
	case "/tools":
		in.mu.RLock()
		uses := toolUses(in.stacks, graph.KindTool, graph.KindMCPTool)
		in.mu.RUnlock()
		in.render(w, "tools", map[string]any{"Stacks": in.stacks, "Uses": uses})
	case "/mcp":
		in.mu.RLock()
		uses := toolUses(in.stacks, graph.KindMCPServer, graph.KindMCPTool, graph.KindRemote)
		in.mu.RUnlock()
		in.render(w, "mcp", map[string]any{"Stacks": in.stacks, "Token": in.token, "Uses": uses})
	case "/skills":
		in.mu.RLock()
		uses := toolUses(in.stacks, graph.KindSkill)
		in.mu.RUnlock()
		in.render(w, "skills", map[string]any{"Stacks": in.stacks, "Uses": uses})
	case "/why":
		in.why(w, r)
	case "/tasks":
		in.tasks(w, r)
	case "/task":
		in.task(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (in *inspector) stack(name string) *inspectStack {
	for _, s := range in.stacks {
		if s.Name == name {
			return s
		}
	}
	return nil
}

func (in *inspector) why(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s := in.stack(q.Get("stack"))
	if s == nil {
		http.Error(w, "no such stack: give ?stack= one of the stacks on the Stacks page", http.StatusNotFound)
		return
	}
	capability := q.Get("capability")
	in.mu.RLock()
	opts := s.opts
	in.mu.RUnlock()
	e, err := s.d.Why(r.Context(), capability, opts)
	if errors.Is(err, graph.ErrUnknownCapability) {
		w.WriteHeader(http.StatusNotFound)
		in.render(w, "why", map[string]any{"Stack": s, "Capability": capability, "Error": err.Error()})
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	in.render(w, "why", map[string]any{"Stack": s, "Capability": capability, "Why": e})
}

func (in *inspector) render(w http.ResponseWriter, page string, data map[string]any) {
	in.mu.RLock()
	defer in.mu.RUnlock()
	data["Page"] = page
	data["HasStore"] = in.store != nil
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	var b strings.Builder
	if err := in.pages[page].ExecuteTemplate(&b, "layout.tmpl", data); err != nil {
		http.Error(w, "render: "+err.Error(), http.StatusInternalServerError)
		return
	}
	io.WriteString(w, b.String())
}
