package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/pabloagent/pablo/internal/sandbox"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/clock"
	"github.com/pabloagent/pablo/internal/egress"
	"github.com/pabloagent/pablo/internal/redact"
	"github.com/pabloagent/pablo/internal/schema"
	"github.com/pabloagent/pablo/internal/textx"
)

// Catalog is the admitted MCP tools of one task and the sessions that serve
// them. It implements the engine's ToolCatalog (Tools and Call) and
// io.Closer. It is frozen once open and safe for concurrent use.
type Catalog struct {
	opts     Options
	launcher *sandbox.Launcher // bubblewrap, for the stdio servers' sandboxes
	servers  []*server
	specs    []authority.ToolSpec
	tools    map[authority.ID]*tool
	secrets  redact.Set

	mu     sync.Mutex
	health []Health
	closed bool
	err    error
	// stale holds the admitted tools that changed or vanished after a
	// list_changed: each fails closed with its reason.
	stale map[authority.ID]error

	// recordErr is the first admission decision the ledger refused. Open
	// records in name order on its own goroutine, so it needs no lock.
	recordErr error
}

type server struct {
	// seen are the tool names the server has listed, so a tool listed
	// mid-task is recorded once.
	seen   map[string]bool
	cfg    Server
	sess   *session
	stdio  *stdioConn
	http   *httpConn
	health int // index into Catalog.health
}

type tool struct {
	id     authority.ID
	srv    *server
	def    *definition
	input  *schema.Schema
	output *schema.Schema
	// server and name are id's server and tool names as every result's
	// payload holds them, boxed once rather than on every call.
	server, name any
}

// Open starts the servers opts names that its authority admits, initializes
// them, discovers and admits their tools, and returns the catalog. Servers
// start concurrently, so opening costs the slowest server rather than the
// sum; admission decisions, ledger records, tools and health still come in
// server name order. A required server that fails fails Open with its own
// error: the other startups are cancelled and everything started is closed
// (process groups included). An optional one is left out and its Health
// says why. The catalog must be closed.
func Open(ctx context.Context, opts Options) (*Catalog, error) {
	if opts.Clock == nil {
		opts.Clock = clock.System{}
	}
	if opts.MaxOutputBytes <= 0 || opts.MaxOutputBytes > MaxResultBytes {
		opts.MaxOutputBytes = MaxResultBytes
	}
	if opts.ClientName == "" {
		opts.ClientName, opts.ClientVersion = "pablo", "0.1.0"
	}
	c := &Catalog{opts: opts, tools: map[authority.ID]*tool{}, stale: map[authority.ID]error{}, launcher: sandbox.NewLauncher(opts.BubblewrapPath)}
	if len(opts.Servers) > MaxServers {
		return nil, &ServerError{Code: CodeConfigurationBound, Kind: ErrConfig, Reason: fmt.Sprintf("%d servers configured; at most %d are allowed", len(opts.Servers), MaxServers)}
	}
	for _, r := range opts.Roots {
		if !filepath.IsAbs(r) || filepath.Clean(r) != r {
			return nil, &ServerError{Code: CodeCWD, Kind: ErrConfig, Reason: fmt.Sprintf("root %q must be a clean absolute path", textx.Shorten(r, 200))}
		}
	}
	servers := slices.Clone(opts.Servers)
	sort.SliceStable(servers, func(i, j int) bool { return servers[i].Name < servers[j].Name })
	for i := range servers {
		if i > 0 && servers[i].Name == servers[i-1].Name {
			return nil, &ServerError{Server: servers[i].Name, Code: CodeDuplicateServer, Kind: ErrConfig, Reason: "the server is configured twice; give each server a unique name"}
		}
	}
	// Admission is decided and recorded in name order, the servers then
	// start and list their tools concurrently, and their tools are admitted
	// in name order again: startup costs the slowest server, not the sum,
	// and the catalog and the ledger read the same whatever finishes first.
	slots := make([]startSlot, len(servers))
	for i := range servers {
		slots[i].idx, slots[i].start = c.admitServer(ctx, &servers[i])
		slots[i].err = slots[i].start
		if slots[i].start != nil && slots[i].start != errNotStarted {
			// A required server is refused: nothing starts.
			c.Close()
			return nil, slots[i].start
		}
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var causeOnce sync.Once
	var cause error // the first required server to fail, in time
	var wg sync.WaitGroup
	for i := range servers {
		if slots[i].start != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots[i].srv, slots[i].raws, slots[i].err = c.startServer(sctx, &servers[i], slots[i].idx)
			if slots[i].err != nil && servers[i].Required {
				// Open fails: the others need not finish starting, and the
				// error to report is this one, not their cancellation.
				causeOnce.Do(func() { cause = slots[i].err })
				cancel()
			}
		}()
	}
	wg.Wait()
	failed := cause
	for i := range servers {
		sl := &slots[i]
		if failed == nil && sl.err != nil && servers[i].Required {
			failed = sl.err
		}
		if failed != nil || sl.srv == nil {
			if sl.srv != nil {
				sl.srv.close()
			}
			continue
		}
		if err := c.admitServerTools(ctx, sl.srv, sl.raws); err != nil {
			failed = err
		}
	}
	if failed == nil && c.recordErr != nil {
		// An admission the ledger did not keep is not an admission.
		failed = fmt.Errorf("mcp: record an admission decision: %w", c.recordErr)
	}
	if failed != nil {
		c.Close()
		return nil, failed
	}
	return c, nil
}

// exitAllowance bounds the wait for a server that closed its stdout
// during startup to exit, so its exit can be reported.
const exitAllowance = 2 * time.Second

// startSlot is one server's way through Open. start is errNotStarted for a
// server that was refused before starting (its health says why).
type startSlot struct {
	idx   int
	start error
	srv   *server
	raws  []json.RawMessage
	err   error
}

// errNotStarted marks a server refused before it started.
var errNotStarted = errors.New("mcp: the server was not started")

// admitServer records the server's health slot and decides whether it may
// start: its configuration must be usable and the server, launcher and
// executable policies must admit it. A refused server's health says why;
// the error is the server's failure when it is required, else
// errNotStarted.
func (c *Catalog) admitServer(ctx context.Context, cfg *Server) (int, error) {
	h := Health{Server: cfg.Name, Transport: cfg.Transport, Required: cfg.Required, State: Unknown, CheckedAt: c.opts.Clock.Now()}
	for _, v := range sortedKeys(cfg.Env) {
		h.Credentials = append(h.Credentials, CredentialRef{Kind: "env", Name: v, Credential: cfg.Env[v], Destination: "mcp:" + cfg.Name + ":env:" + v})
	}
	for _, k := range sortedKeys(cfg.Headers) {
		h.Credentials = append(h.Credentials, CredentialRef{Kind: "header", Name: k, Credential: cfg.Headers[k], Destination: "mcp:" + cfg.Name + ":header:" + k})
	}
	if o := cfg.OAuth; o != nil {
		if o.ClientSecret != "" {
			h.Credentials = append(h.Credentials, CredentialRef{Kind: "oauth", Name: "client_secret", Credential: o.ClientSecret, Destination: "mcp:" + cfg.Name + ":oauth:client_secret"})
		}
		if o.PrivateKey != "" {
			h.Credentials = append(h.Credentials, CredentialRef{Kind: "oauth", Name: "private_key", Credential: o.PrivateKey, Destination: "mcp:" + cfg.Name + ":oauth:private_key"})
		}
		if o.IDToken != "" {
			h.Credentials = append(h.Credentials, CredentialRef{Kind: "oauth", Name: "id_token", Credential: o.IDToken, Destination: "mcp:" + cfg.Name + ":oauth:id_token"})
		}
	}
	c.mu.Lock()
	c.health = append(c.health, h)
	idx := len(c.health) - 1
	c.mu.Unlock()
	if err := checkServer(cfg, c.opts.AllowLoopbackHTTP); err != nil {
		return idx, c.fail(idx, cfg, Failed, err, errNotStarted)
	}
	// Server-level admission: server policy, launcher policy and executable
	// policy decide before anything starts or any credential resolves.
	if d, denied := c.serverDecision(cfg.Name); denied {
		c.setHealth(idx, func(h *Health) { h.Decision = &d })
		c.record(ctx, "mcp/"+cfg.Name, d, "")
		return idx, c.fail(idx, cfg, Denied, &ServerError{Server: cfg.Name, Code: CodePolicyDenied, Kind: ErrDenied, Reason: fmt.Sprintf("denied by rule %s of layer %s", d.RuleID, d.Layer), Err: d.Err()}, errNotStarted)
	}
	return idx, nil
}

// fail records a server's failure in its health and returns e when the
// server is required, otherwise optional.
func (c *Catalog) fail(idx int, cfg *Server, state State, e *ServerError, optional error) error {
	c.setHealth(idx, func(h *Health) { h.State, h.Code, h.Reason = state, e.Code, e.Error() })
	if cfg.Required {
		return e
	}
	return optional
}

// startServer starts and initializes one admitted server and lists its
// tools. It runs concurrently with the other servers' starts. On failure
// the server is closed, its health says why, and the error is non-nil (a
// *ServerError when the server is required).
func (c *Catalog) startServer(ctx context.Context, cfg *Server, idx int) (*server, []json.RawMessage, error) {
	srv := &server{cfg: *cfg, health: idx, seen: map[string]bool{}}
	startup := cfg.StartupTimeout
	if startup <= 0 {
		startup = DefaultStartupTimeout
	}
	sctx, cancel := context.WithTimeoutCause(ctx, startup, fmt.Errorf("%w: startup_timeout_ms passed", context.DeadlineExceeded))
	defer cancel()
	failed := func(e *ServerError) (*server, []json.RawMessage, error) {
		srv.close()
		return nil, nil, c.fail(idx, cfg, Failed, e, errNotStarted)
	}
	if err := c.start(sctx, srv); err != nil {
		code := CodeStartup
		var ve *VersionError
		var se *ServerError
		switch {
		case errors.As(err, &se):
			return failed(se)
		case errors.As(err, &ve):
			code = CodeVersion
		case errors.Is(err, ErrProtocol):
			code = CodeProtocol
		case errors.Is(err, ErrBound):
			code = CodeCatalogBound
		case errors.Is(err, ErrAuthorization):
			code = CodeOAuth
		case sctx.Err() != nil && ctx.Err() == nil:
			code = CodeTimeout
		}
		return failed(&ServerError{Server: cfg.Name, Code: code, Kind: ErrStartup, Reason: "startup failed", Err: c.scrub(err)})
	}
	raws, err := srv.sess.listTools(sctx)
	if err != nil {
		code := CodeStartup
		if errors.Is(err, ErrBound) {
			code = CodeCatalogBound
		}
		return failed(&ServerError{Server: cfg.Name, Code: code, Kind: ErrStartup, Reason: "tools/list failed", Err: c.scrub(err)})
	}
	return srv, raws, nil
}

// admitServerTools admits a started server's tools into the catalog. The
// error is returned only for a required server.
func (c *Catalog) admitServerTools(ctx context.Context, srv *server, raws []json.RawMessage) error {
	cfg, idx := &srv.cfg, srv.health
	statuses, admitted, degraded := c.admitTools(ctx, srv, raws)
	if len(c.tools)+len(admitted) > MaxTools {
		srv.close()
		return c.fail(idx, cfg, Failed, &ServerError{Server: cfg.Name, Code: CodeCatalogBound, Kind: ErrBound, Reason: fmt.Sprintf("the catalog would hold more than %d tools", MaxTools)}, nil)
	}
	for _, t := range admitted {
		c.tools[t.id] = t
		c.specs = append(c.specs, authority.ToolSpec{ID: t.id, Description: t.def.Description, InputSchema: t.input.Raw(), OutputSchema: t.def.OutputSchema})
	}
	c.servers = append(c.servers, srv)
	c.setHealth(idx, func(h *Health) {
		h.Version, h.Tools = srv.sess.version, statuses
		switch {
		case degraded:
			h.State, h.Reason = Degraded, "some tools are unavailable; see tools"
		case len(admitted) == 0 && len(statuses) > 0:
			h.State, h.Code, h.Reason = Denied, CodePolicyDenied, "policy admits none of the server's tools"
		default:
			h.State = Ready
		}
	})
	return nil
}

// serverDecision decides the server, launcher and executable dimensions by
// asking about a placeholder tool of the server: a denial on one of those
// dimensions (or an unconfigured server) denies the whole server. A denial
// on a tool dimension says nothing about the server, which then starts and
// has each real tool decided on its own.
func (c *Catalog) serverDecision(name string) (authority.Decision, bool) {
	if c.opts.Authority == nil {
		return authority.Decision{Layer: authority.LayerConfiguration, RuleID: authority.RuleUnconfiguredServer, Reason: "no authority was given"}, true
	}
	d := c.opts.Authority.Decide(authority.Request{Capability: authority.MCPTool(name, "pablo.server-admission")})
	if d.Allowed {
		return d, false
	}
	if d.RuleID == authority.RuleUnconfiguredServer {
		return d, true
	}
	if n := len(d.Trail); n > 0 {
		switch d.Trail[n-1].Dimension {
		case authority.DimMCPServers, authority.DimMCPLaunchers, authority.DimExecutables:
			return d, true
		}
	}
	return d, false
}

// start resolves credentials, starts the transport and initializes.
func (c *Catalog) start(ctx context.Context, srv *server) error {
	cfg := &srv.cfg
	switch cfg.Transport {
	case Stdio:
		env := []string{}
		for _, v := range sortedKeys(cfg.Env) {
			sec, err := c.resolve(ctx, cfg.Env[v], authority.ConsumerMCPEnv, "mcp:"+cfg.Name+":env:"+v)
			if err != nil {
				return &ServerError{Server: cfg.Name, Code: CodeCredential, Kind: ErrStartup, Reason: fmt.Sprintf("environment variable %s", v), Err: err}
			}
			env = append(env, v+"="+sec.Reveal())
		}
		srv.sess = c.newSession(cfg)
		srv.sess.tracer, srv.sess.transport, srv.sess.mask = c.opts.Tracer, "pipe", c.secrets.String
		conn, err := startStdio(ctx, c.launcher, cfg, env, srv.sess.notify, srv.sess.serve, c.opts.EgressForwarder, c.egressRecorder(ctx, cfg.Name))
		if err != nil {
			return &ServerError{Server: cfg.Name, Code: CodeLauncher, Kind: ErrStartup, Reason: "the server could not be launched", Err: err}
		}
		srv.stdio = conn
		srv.sess.conn = conn
		// A server that dies during startup is detected, not waited on.
		ictx, cancel := context.WithCancelCause(ctx)
		watched := make(chan struct{})
		go func() {
			defer close(watched)
			select {
			case <-conn.p.Done():
				cancel(errors.New("the server exited during startup"))
			case <-ictx.Done():
			}
		}()
		err = srv.sess.initialize(ictx, c.opts.ClientName, c.opts.ClientVersion)
		cancel(nil)
		<-watched
		if err != nil && errors.Is(err, errStreamEnded) {
			// The server closed its stdout: it is most likely exiting. Its
			// exit, when it comes soon, is the better report.
			t := time.NewTimer(exitAllowance)
			select {
			case <-conn.p.Done():
			case <-t.C:
			case <-ctx.Done():
			}
			t.Stop()
		}
		if err != nil && ctx.Err() == nil && conn.exited() {
			if serr := conn.sandboxFailure(); serr != nil {
				return fmt.Errorf("%w: the server's sandbox could not be set up: %w", ErrStartup, serr)
			}
			return fmt.Errorf("%w: the server exited during startup (%s)", ErrStartup, conn.exitReport(c.secrets.String))
		}
		return err
	case HTTP:
		headers := map[string]string{}
		for _, k := range sortedKeys(cfg.Headers) {
			sec, err := c.resolve(ctx, cfg.Headers[k], authority.ConsumerMCPHeaders, "mcp:"+cfg.Name+":header:"+k)
			if err != nil {
				return &ServerError{Server: cfg.Name, Code: CodeCredential, Kind: ErrStartup, Reason: fmt.Sprintf("header %s", k), Err: err}
			}
			headers[k] = sec.Reveal()
		}
		srv.sess = c.newSession(cfg)
		srv.sess.tracer, srv.sess.transport, srv.sess.mask = c.opts.Tracer, "tcp", c.secrets.String
		var auth *oauthClient
		if cfg.OAuth != nil {
			auth = newOAuthClient(cfg, &c.opts, c.oauthCredential, c.secrets.Add)
		}
		conn, err := dialHTTP(cfg, headers, c.opts.AllowLoopbackHTTP, srv.sess.notify, srv.sess.serve, auth, c.secrets.String)
		if err != nil {
			return &ServerError{Server: cfg.Name, Code: CodeEndpoint, Kind: ErrConfig, Reason: "the endpoint cannot be used", Err: err}
		}
		srv.http = conn
		srv.sess.conn = conn
		return srv.sess.initialize(ctx, c.opts.ClientName, c.opts.ClientVersion)
	}
	return &ServerError{Server: cfg.Name, Code: CodeEndpoint, Kind: ErrConfig, Reason: fmt.Sprintf("transport %q is neither stdio nor http", cfg.Transport)}
}

// newSession is a session for cfg with the catalog's roots and
// elicitation channel.
func (c *Catalog) newSession(cfg *Server) *session {
	s := newSession(cfg.Name)
	s.roots, s.elicit = c.opts.Roots, c.opts.Elicit
	s.elicitTimeout = cfg.OperationTimeout
	if s.elicitTimeout <= 0 {
		s.elicitTimeout = DefaultOperationTimeout
	}
	return s
}

func (c *Catalog) resolve(ctx context.Context, name string, consumer authority.Consumer, dest string) (authority.Secret, error) {
	if c.opts.Resolve == nil {
		return authority.Secret{}, &authority.CredentialError{Name: name, Consumer: consumer, Destination: dest, Reason: "no credential resolver was given"}
	}
	sec, err := c.opts.Resolve(ctx, name, consumer, dest)
	if err != nil {
		return sec, err
	}
	c.secrets.Add(sec.Reveal())
	return sec, nil
}

// admitTools parses, bounds, compiles, pins and decides each discovered
// tool, recording every decision in the ledger.
func (c *Catalog) admitTools(ctx context.Context, srv *server, raws []json.RawMessage) (statuses []ToolStatus, admitted []*tool, degraded bool) {
	seen := map[string]bool{}
	for i, raw := range raws {
		def, err := parseDefinition(raw)
		if err != nil {
			statuses = append(statuses, ToolStatus{Name: fmt.Sprintf("#%d", i), Code: CodeProtocol, Reason: err.Error()})
			degraded = true
			continue
		}
		srv.seen[def.Name] = true
		st := ToolStatus{Name: def.Name, Digest: def.digest}
		unavailable := func(code Code, reason string) {
			st.Code, st.Reason = code, reason
			degraded = true
			statuses = append(statuses, st)
			// A tool whose name is no tool name has no capability ID to
			// record a decision under: its refusal is in the health alone,
			// and must not fail the opening for the server's other tools.
			if st.ID != "" {
				c.record(ctx, string(st.ID), authority.Decision{Layer: "mcp/" + srv.cfg.Name, RuleID: "builtin.mcp." + string(code), Reason: reason}, def.digest)
			}
		}
		if !authority.ValidMCPToolName(def.Name) {
			st.Name = textx.Shorten(def.Name, 64)
			unavailable(CodeToolIdentity, "the tool name must be 1..128 bytes of [A-Za-z0-9_.-]")
			continue
		}
		st.ID = authority.MCPTool(srv.cfg.Name, def.Name)
		st.Alias = Alias(st.ID)
		if seen[def.Name] {
			unavailable(CodeIdentityCollision, "the server lists this tool name twice")
			continue
		}
		seen[def.Name] = true
		if len(def.Description) > MaxDescriptionBytes {
			unavailable(CodeCatalogBound, fmt.Sprintf("the description is longer than %d bytes", MaxDescriptionBytes))
			continue
		}
		if def.Execution != nil && def.Execution.TaskSupport == "required" {
			unavailable(CodeTaskRequired, "the tool requires task-based execution, which this client does not support")
			continue
		}
		input, ierr := func() (*schema.Schema, error) { _, s, err := prepareSchema(def.InputSchema, true); return s, err }()
		if ierr != nil {
			unavailable(CodeSchema, schemaReason("input", ierr))
			continue
		}
		var output *schema.Schema
		if len(def.OutputSchema) > 0 && string(def.OutputSchema) != "null" {
			_, output, err = prepareSchema(def.OutputSchema, false)
			if err != nil {
				unavailable(CodeSchema, schemaReason("output", err))
				continue
			}
		}
		if want, ok := srv.cfg.Pins[def.Name]; ok && want != def.digest {
			e := &DefinitionChangedError{Tool: string(st.ID), Want: want, Got: def.digest}
			unavailable(CodeDefinitionChanged, e.Error())
			continue
		}
		d := c.opts.Authority.Decide(authority.Request{Capability: st.ID})
		st.Admitted, st.RuleID, st.Layer = d.Allowed, d.RuleID, d.Layer
		if !d.Allowed {
			st.Code, st.Reason = CodePolicyDenied, d.Reason
		}
		statuses = append(statuses, st)
		c.record(ctx, string(st.ID), d, def.digest+" protocol "+srv.sess.version)
		if d.Allowed {
			server, name, _ := st.ID.MCP()
			admitted = append(admitted, &tool{id: st.ID, srv: srv, def: def, input: input, output: output, server: server, name: name})
		}
	}
	return statuses, admitted, degraded
}

// egressRecorder is what receives the egress proxy's decisions for the
// stdio server name: Options.OnEgress, or else a decision record of
// capability "mcp/NAME" in Options.Ledger. Secrets the catalog knows are
// masked in the host and the reason. A decision it fails to record
// refuses the request.
func (c *Catalog) egressRecorder(ctx context.Context, name string) func(egress.Decision) error {
	ctx = context.WithoutCancel(ctx)
	return func(d egress.Decision) error {
		e := authority.EgressDecision{Method: d.Method, Host: c.secrets.String(d.Host), Port: d.Port, Allowed: d.Allowed, Rule: d.Rule, Reason: c.secrets.String(d.Reason)}
		switch {
		case c.opts.OnEgress != nil:
			return c.opts.OnEgress(name, e)
		case c.opts.Ledger != nil:
			return c.opts.Ledger.RecordDecision(ctx, c.opts.AgentID, "mcp/"+name, e.Decision())
		}
		return nil
	}
}

// record adds a decision to the ledger, with the definition digest and the
// negotiated version as evidence.
func (c *Catalog) record(ctx context.Context, capability string, d authority.Decision, evidence string) {
	if c.opts.Ledger == nil {
		return
	}
	reason := d.Reason
	if evidence != "" {
		reason = textx.Shorten(reason, 400) + "; definition " + evidence
	}
	err := c.opts.Ledger.RecordDecision(ctx, c.opts.AgentID, capability, authority.Decision{Allowed: d.Allowed, Layer: d.Layer, RuleID: d.RuleID, Reason: reason})
	if err != nil && c.recordErr == nil {
		c.recordErr = err
	}
}

func (c *Catalog) setHealth(i int, f func(*Health)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setHealthLocked(i, f)
}

// setHealthLocked is setHealth for a caller holding c.mu.
func (c *Catalog) setHealthLocked(i int, f func(*Health)) {
	f(&c.health[i])
	c.health[i].CheckedAt = c.opts.Clock.Now()
}

// scrub masks secrets in an error's text: known values and suspected
// secrets, which need no known value to be masked.
func (c *Catalog) scrub(err error) error {
	if err == nil {
		return err
	}
	// A server's JSON-RPC message is cut when formatted: mask it whole
	// first, so no secret straddles the cut.
	var rpc *RPCError
	if errors.As(err, &rpc) {
		rpc.Message = c.secrets.String(rpc.Message)
	}
	if s := c.secrets.String(err.Error()); s != err.Error() {
		return errors.New(s)
	}
	return err
}

// Tools implements the engine's ToolCatalog: the admitted tools, in server
// name order then discovery order.
func (c *Catalog) Tools() []authority.ToolSpec { return slices.Clone(c.specs) }

// Sandbox is the sandbox the tool id runs in: its stdio server's, "off"
// included; ok is false for an HTTP server's tool or one not admitted.
func (c *Catalog) Sandbox(id authority.ID) (Sandbox, bool) {
	t, ok := c.tools[id]
	if !ok || t.srv.cfg.Transport != Stdio {
		return Sandbox{}, false
	}
	return t.srv.cfg.Sandbox.Normalized(), true
}

// Health returns the health of every configured server, in name order.
func (c *Catalog) Health() []Health {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := slices.Clone(c.health)
	for i := range out {
		out[i].Tools = slices.Clone(out[i].Tools)
	}
	return out
}

// Close ends every session and joins every process the catalog started.
// It is idempotent; a process group that cannot be proven gone is an error.
func (c *Catalog) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return c.err
	}
	c.closed = true
	c.mu.Unlock()
	var errs []error
	for _, s := range c.servers {
		errs = append(errs, s.close())
		c.setHealth(s.health, func(h *Health) {
			if h.State == Ready || h.State == Degraded || h.State == Denied {
				h.State, h.Reason = Disabled, "the catalog was closed"
			}
		})
	}
	c.mu.Lock()
	c.err = errors.Join(errs...)
	c.mu.Unlock()
	return c.err
}

func (s *server) close() error {
	var err error
	if s.stdio != nil {
		err = s.stdio.close()
	}
	if s.http != nil {
		err = s.http.close()
	}
	return err
}

func sortedKeys(m map[string]string) []string {
	return slices.Sorted(maps.Keys(m))
}
