package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"sync"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/acp"
	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/deployment"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/model"
	"github.com/pabloagent/pablo/skills"
)

// acpFlags are the flags of `pablo acp` after the deployment's: --stdio and
// the run flags that make sense for a process serving many prompts. The
// trace and trace-context flags are per task, so they are not here: a
// client sends trace context with each prompt.
func acpFlags() []flag {
	keep := map[string]bool{"store": true, "script": true, "timeout": true, "tool-timeout": true,
		"max-model-calls": true, "max-tool-calls": true, "max-total-tokens": true, "max-cost-microusd": true, "prompt-caching": true, "no-shell": true,
		"no-filesystem": true, "allow-write": true, "skill": true, "role": true, "kind": true, "fixture-endpoint": true}
	out := []flag{
		{name: "stdio", help: "serve ACP v1 on stdin and stdout (required; the only transport)"},
		{name: "ask", arg: "CAPABILITY", repeat: true, help: "ask the client (session/request_permission) before every call of this capability, such as shell.run; repeatable; adds a question, never authority"},
	}
	for _, f := range runFlags() {
		if keep[f.name] {
			if f.name == "role" {
				f.help = "a role every session's prompts hold (a session may ask for fewer in _meta[\"pablo/v2\"].roles, never another); repeatable; never adds authority (default: none)"
			}
			if f.name == "kind" {
				f.help = "the task kind of every session's prompts: only the Skills for it are activated and readable (a session may name this kind in _meta[\"pablo/v2\"].kind, never another); default: none, each session's own kind or every Skill"
			}
			if f.name == "store" {
				f.help = "keep every task's ledger in this bbolt database, created if absent, or the PostgreSQL database of a postgres:// URL without a password; enables session/list and session/load (default: $PABLO_STORE, else no store)"
			}
			out = append(out, f)
		}
	}
	return out
}

// acpCommand implements `pablo acp --stdio`: it serves the deployment to
// an ACP client (an editor) on stdin and stdout until the client closes
// stdin or the process is interrupted. Stdout carries JSON-RPC frames and
// nothing else; every diagnostic goes to stderr.
func acpCommand(ctx context.Context, args []string, h *host) error {
	p, err := parseArgs(args, "acp")
	if err != nil {
		return err
	}
	if len(p.args) != 0 {
		return usagef("pablo acp takes no arguments, got %q (the client sends the prompts)", p.args[0])
	}
	if !p.bools["stdio"] {
		return usagef("pablo acp needs --stdio: stdin and stdout carry the protocol")
	}
	overrides, err := runOverrides(p)
	if err != nil {
		return err
	}
	a := &acpHost{h: h, p: p, overrides: overrides, auth: &loopbackAuthorizer{out: h.stderr, viaClient: true}}
	defer a.auth.close()
	first, err := a.load(ctx)
	if err != nil {
		return err
	}
	if path := p.one("script"); path != "" {
		if first.Locked() {
			return &deployment.Error{Code: deployment.CodeInvalidValue, Option: "--script", Message: "a script never replaces a locked deployment's model"}
		}
		s, err := pablo.LoadScript(ctx, path)
		if err != nil {
			return usagef("--script: %v", err)
		}
		a.model = pablo.NewScriptModel(s)
	}
	workspace, err := first.Workspace()
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	if real, err := filepath.EvalSymlinks(workspace); err == nil {
		workspace = real
	}
	var store ledger.Store
	if value := storeValue(h, p); value != "" {
		opened, err := openStore(ctx, h, first, value, false)
		if err != nil {
			return &exitError{code: 2, err: fmt.Errorf("--store: %w", err)}
		}
		defer opened.Close()
		store = opened
	}
	a.store = store
	src := &acpRuntimes{load: a.load, build: a.build, warn: func(err error) {
		fmt.Fprintf(h.stderr, "pablo: warning: %s\n", message(err))
	}}
	defer func() {
		// The connection has joined every prompt by now; each runtime's
		// Shutdown still cancels and joins whatever runs on it before
		// its workspace closes, within the library's default bound.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pablo.DefaultShutdownTimeout)
		defer cancel()
		if err := src.Close(ctx); err != nil {
			fmt.Fprintf(h.stderr, "pablo: warning: %s\n", message(err))
		}
	}()
	// The first runtime is built before the first frame is read, so a
	// deployment that cannot run fails here, with exit 2, not at the
	// client's first prompt. This call starts no task: its lease is
	// returned at once.
	if _, err := src.Runtime(ctx); err != nil {
		return &exitError{code: 2, err: err}
	}
	src.release()
	roots, err := first.WorkspaceRoots()
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	others := &sessionRuntimes{load: a.loadSpec, build: a.build, max: maxSpecRuntimes, warn: src.warn}
	defer func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pablo.DefaultShutdownTimeout)
		defer cancel()
		if err := others.Close(ctx); err != nil {
			fmt.Fprintf(h.stderr, "pablo: warning: %s\n", message(err))
		}
	}()
	sessions, err := pablo.NewSessions(pablo.SessionOptions{
		Runtime:          src.Runtime,
		Workspace:        workspace,
		MCPServers:       sessionServers(first),
		ClientMCPServers: first.Options().Interfaces.ACP.ClientMCPServers,
		WorkspaceRoots:   roots,
		SessionRuntime:   others.Runtime,
		MaxSessions:      int(first.Options().Interfaces.ACP.MaxSessions),
		Roles:            p.values["role"],
		Kind:             p.one("kind"),
		Store:            store,
		Clock:            h.clock,
		NewID:            h.newID,
	})
	if err != nil {
		return err
	}
	stdin := h.stdin
	if stdin == nil {
		stdin = eofReader{}
	}
	commands, err := skillCommands(ctx, first)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	dep := first.Ref()
	return serveACP(ctx, sessions, stdin, rawOutput(h.stdout), h.stderr, store != nil, dep, commands)
}

// skillCommands are the slash commands an editor is offered: the
// deployment's activated Skills its authority admits, by short name (or
// ROOT/NAME where the short name is ambiguous) with their descriptions.
func skillCommands(ctx context.Context, d *pablo.Deployment) ([]acp.Command, error) {
	activate := d.Options().Skills.Activate
	if len(activate) == 0 {
		return nil, nil
	}
	set, err := d.Authority()
	if err != nil {
		return nil, err
	}
	opts, err := d.SkillOptions()
	if err != nil {
		return nil, err
	}
	cat, err := skills.Discover(ctx, opts)
	if err != nil {
		return nil, err
	}
	var out []acp.Command
	for _, name := range activate {
		s, err := cat.Lookup(name)
		if err != nil {
			continue // the runtime's activation reports it
		}
		if !set.Decide(authority.Request{Capability: authority.ID(s.QualifiedName)}).Allowed {
			continue
		}
		cmd := s.Name
		if s.QualifiedOnly {
			cmd = s.QualifiedName
		}
		out = append(out, acp.Command{Name: cmd, Description: s.Description, Hint: "what to do with the " + s.Name + " Skill", TaskKinds: s.Bundle().TaskKinds})
	}
	return out, nil
}

// acpHost is what one `pablo acp` process knows of its command line: how
// to re-read the deployment and how to make a runtime of it.
type acpHost struct {
	h         *host
	p         *parsed
	overrides []pablo.Override
	model     model.Model // --script, or nil for the configured model
	store     ledger.Store
	// auth is the process's authorization step for OAuth MCP servers: the
	// loopback redirect listener, handing the URL to a client that
	// negotiated pablo/authorization-v1.
	auth *loopbackAuthorizer
}

// load reads the deployment as the command line names it. The ACP command
// writes no native trace file yet: a deployment that asks for one is
// refused rather than run without the trace it asked for.
func (a *acpHost) load(ctx context.Context) (*pablo.Deployment, error) {
	d, err := loadDeployment(ctx, a.p, a.h, a.overrides)
	if err != nil {
		return nil, err
	}
	if d.Options().Trace.Path != nil {
		return nil, &deployment.Error{Code: deployment.CodeUnsupportedFeature, Option: "/options/trace/path",
			Message: "pablo acp does not write the native trace: unset options.trace.path for ACP (OTLP export through options.otel works)"}
	}
	return d, nil
}

// build makes the runtime of d, with the hooks that count its tasks, and
// returns what shuts it down (its tasks joined, then its workspace closed)
// and flushes its span pipeline.
func (a *acpHost) build(ctx context.Context, d *pablo.Deployment, hooks runtimeHooks) (*pablo.Runtime, func(context.Context) error, error) {
	if a.model != nil && d.Locked() {
		return nil, nil, &deployment.Error{Code: deployment.CodeInvalidValue, Option: "--script", Message: "a script never replaces a locked deployment's model"}
	}
	obs, _, err := openObservability(ctx, a.h, a.p, d)
	if err != nil {
		return nil, nil, err
	}
	counted := func(ev event.Event) error {
		if ev.Type == event.RunFinished && ev.Agent.Depth == 0 {
			hooks.finished()
		}
		return nil
	}
	// An editor shows no stderr to answer an authorization URL with: a
	// client that negotiated pablo/authorization-v1 opens it, the others
	// use the grants the CLI keeps (a server that needs a new one fails
	// with a reason).
	tokens, _, _ := a.h.mcpAuth()
	rt, err := d.NewRuntime(ctx, pablo.HostOptions{
		EgressForwarder: a.h.forwarder,
		MCPTokens:       tokens,
		MCPAuthorizer:   a.auth,
		Store:           a.store,
		Model:           a.model,
		LookupEnv:       a.h.lookupEnv,
		Sink:            obs.sink(counted),
		Tracer:          obs.otel.Tracer(),
		Clock:           a.h.clock,
		NewID:           a.h.newID,
		FixtureEndpoint: a.p.one("fixture-endpoint"),
		Ask:             a.ask(),
	})
	if err != nil {
		obs.Close(ctx)
		return nil, nil, err
	}
	return rt, func(ctx context.Context) error { return errors.Join(rt.Shutdown(ctx), obs.Close(ctx)) }, nil
}

// sessionRuntimes are the runtimes of the sessions that are not the
// deployment's own: one in another project directory (a workspace root's)
// or with its client's MCP servers. Each spec gets a runtime source of
// its own, built from the deployment loaded with the session's workspace
// bound as the workspace and the client's servers added, and re-read at
// every prompt as the deployment's own is. At most max sources are kept:
// past it, the least recently used whose tasks have all settled are
// closed (a later prompt of theirs builds a fresh one).
type sessionRuntimes struct {
	load  func(ctx context.Context, spec pablo.SessionSpec) (*pablo.Deployment, error)
	build func(ctx context.Context, d *pablo.Deployment, hooks runtimeHooks) (*pablo.Runtime, func(context.Context) error, error)
	max   int
	warn  func(error)

	// mu is held across a source's lease, so a source is never closed
	// between being chosen and being leased.
	mu     sync.Mutex
	bySpec map[string]*specSource
	clock  uint64 // counts leases, for least recently used
}

// specSource is one spec's runtime source and when it was last leased.
type specSource struct {
	src  *acpRuntimes
	used uint64
}

// maxSpecRuntimes bounds the runtime sources of sessions in other project
// directories or with their client's servers.
const maxSpecRuntimes = 16

// Runtime is the SessionOptions.SessionRuntime of the process.
func (s *sessionRuntimes) Runtime(ctx context.Context, spec pablo.SessionSpec) (*pablo.Runtime, error) {
	enc, _ := json.Marshal(spec) // a map marshals in key order
	sum := sha256.Sum256(enc)
	key := hex.EncodeToString(sum[:])
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bySpec == nil {
		s.bySpec = map[string]*specSource{}
	}
	e := s.bySpec[key]
	if e == nil {
		e = &specSource{src: &acpRuntimes{load: func(ctx context.Context) (*pablo.Deployment, error) { return s.load(ctx, spec) }, build: s.build, warn: s.warn}}
		s.bySpec[key] = e
	}
	rt, err := e.src.Runtime(ctx)
	s.clock++
	e.used = s.clock
	s.evict(ctx)
	return rt, err
}

// evict closes the least recently used idle sources past max. Called
// with mu held.
func (s *sessionRuntimes) evict(ctx context.Context) {
	for len(s.bySpec) > s.max {
		var oldest string
		for k, e := range s.bySpec {
			if e.src.idle() && (oldest == "" || e.used < s.bySpec[oldest].used) {
				oldest = k
			}
		}
		if oldest == "" {
			return // every source has a task running: none can go yet
		}
		if err := s.bySpec[oldest].src.Close(ctx); err != nil && s.warn != nil {
			s.warn(fmt.Errorf("closing a project's runtime: %w", err))
		}
		delete(s.bySpec, oldest)
	}
}

// Close closes every runtime built for a session's spec.
func (s *sessionRuntimes) Close(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, e := range s.bySpec {
		errs = append(errs, e.src.Close(ctx))
	}
	s.bySpec = nil
	return errors.Join(errs...)
}

// loadSpec loads the deployment for a session's spec: its workspace bound
// as the workspace, its client's MCP servers added.
func (a *acpHost) loadSpec(ctx context.Context, spec pablo.SessionSpec) (*pablo.Deployment, error) {
	d, err := loadDeploymentBound(ctx, a.p, a.h, a.overrides, map[string]string{"workspace": spec.Workspace})
	if err != nil {
		return nil, err
	}
	if d.Options().Trace.Path != nil {
		return nil, &deployment.Error{Code: deployment.CodeUnsupportedFeature, Option: "/options/trace/path",
			Message: "pablo acp does not write the native trace: unset options.trace.path for ACP (OTLP export through options.otel works)"}
	}
	ws, err := d.Workspace()
	if err != nil {
		return nil, err
	}
	if real, err := filepath.EvalSymlinks(ws); err == nil {
		ws = real
	}
	if ws != spec.Workspace {
		return nil, &deployment.Error{Code: deployment.CodeInvalidValue, Option: "/options/run/workspace",
			Message: "a session in another project directory needs options.run.workspace to be the workspace binding (its default)"}
	}
	return d.WithClientMCPServers(spec.ClientMCPServers)
}

// ask is --ask as capability IDs.
func (a *acpHost) ask() []authority.ID {
	var out []authority.ID
	for _, v := range a.p.values["ask"] {
		out = append(out, authority.ID(v))
	}
	return out
}

// sessionServers are the deployment's MCP servers as a session may select
// them: by name, with the same command and arguments or the same URL.
func sessionServers(d *pablo.Deployment) []pablo.SessionMCPServer {
	var out []pablo.SessionMCPServer
	for name, s := range d.Options().MCP.Servers {
		out = append(out, pablo.SessionMCPServer{Name: name, Command: s.Command, Args: append([]string(nil), s.Args...), URL: s.URL})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// eofReader is an empty stdin.
type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }
