package pablo

import (
	"context"
	"fmt"
	"strconv"

	"github.com/pabloagent/pablo/internal/graphfill"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/internal/config"
	"github.com/pabloagent/pablo/internal/egress"
	"github.com/pabloagent/pablo/internal/engine"
	"github.com/pabloagent/pablo/model"

	"go.opentelemetry.io/otel/trace"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/children"
	"github.com/pabloagent/pablo/internal/fstools"
	"github.com/pabloagent/pablo/internal/redact"
	"github.com/pabloagent/pablo/internal/script"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/mcp"
	"github.com/pabloagent/pablo/skills"
)

// HostOptions are what a host adds to a deployment to run it.
type HostOptions struct {
	// Store receives ledger records; nil keeps none (see RuntimeOptions.Store).
	Store ledger.Store
	// Model, when set, replaces the configured model (a host's own model,
	// or a test double).
	Model model.Model
	// LookupEnv and Host resolve credential sources; nil means none.
	LookupEnv func(string) (string, bool)
	Host      func(ctx context.Context, name string) (string, bool, error)
	// Sink, Tracer, Clock, NewID and OnStart are passed to the Runtime
	// (Clock to the MCP catalogs too).
	Sink    func(event.Event) error
	Tracer  trace.Tracer
	Clock   ledger.Clock
	NewID   func() string
	OnStart func(TaskInfo)
	// FixtureEndpoint, when set and Model is nil, points the configured
	// provider (or every route entry) at a literal-loopback HTTP test
	// server with the fixed fake key "pablo-fixture-key". Refused under lock.
	FixtureEndpoint string
	// Ask names capabilities whose every allowed call waits for the task's
	// approver (TaskRequest.Approver) before it runs; without an approver
	// such a call is denied. It adds a question, never authority, so it
	// is honoured under lock too. Asking disables the tools compiled once
	// per runtime: each task decides its own.
	Ask []authority.ID
	// MCPTokens keeps the OAuth grants of the deployment's OAuth MCP
	// servers between tasks (the reference CLI keeps them in a 0600 file
	// under the user's configuration directory); nil keeps them for one
	// task's catalog only.
	MCPTokens mcp.TokenStore
	// MCPAuthorizer is the host's authorization step for an OAuth MCP
	// server that needs a user's consent (the reference CLI prints the URL
	// and runs a loopback redirect listener); nil fails such a server with
	// mcp.ErrAuthorization.
	MCPAuthorizer mcp.Authorizer
	// EgressForwarder is the absolute path of the host's own executable,
	// which calls EgressForwarderMain first thing in main; shell.run and
	// each stdio MCP server under network = "allowlist" need it: shell.run
	// fails to build without it, and such a server fails to start.
	EgressForwarder string

	// secrets learns every credential value resolved for this runtime, so
	// the engine masks it in recorded output.
	secrets *redact.Set
}

// ErrUnavailable marks a configured capability this build cannot provide.
var ErrUnavailable = engine.ErrUnavailable

// NewRuntime builds the runtime a deployment describes: its authority, its
// workspace tools, its activated Skills, its model and its ceilings.
func (d *Deployment) NewRuntime(ctx context.Context, opts HostOptions) (*Runtime, error) {
	ro, err := d.runtimeOptions(ctx, opts)
	if err != nil {
		return nil, err
	}
	return NewRuntime(ro)
}

// runtimeOptions are the options of the runtime NewRuntime builds.
func (d *Deployment) runtimeOptions(ctx context.Context, opts HostOptions) (RuntimeOptions, error) {
	set, err := d.Authority()
	if err != nil {
		return RuntimeOptions{}, err
	}
	auth, err := engine.AskGate(set, opts.Ask, d.c.Options.Approvals)
	if err != nil {
		return RuntimeOptions{}, err
	}
	o := &d.c.Options
	ro := RuntimeOptions{
		Authority:       auth,
		Limits:          d.ledgerLimits(),
		MaxOutputTokens: o.Limits.MaxOutputTokens,
		Store:           opts.Store,
		Deployment:      d.Ref(),
		Sink:            opts.Sink,
		Tracer:          opts.Tracer,
		Clock:           opts.Clock,
		NewID:           opts.NewID,
		OnStart:         opts.OnStart,
		secrets:         &redact.Set{},
		Output:          d.outputSpec(),
	}
	if o.Audit.Level != "" || len(o.Audit.Capabilities) > 0 {
		ro.auditLevel = o.ToolLevel
	}
	opts.secrets = ro.secrets
	for i, expr := range o.Redaction.Patterns {
		p, err := redact.NewPattern("options.redaction.patterns/"+strconv.Itoa(i), expr)
		if err != nil {
			return RuntimeOptions{}, err // checked when the deployment loaded
		}
		ro.secrets.AddPatterns(p)
	}
	if o.Children.Enabled {
		ro.Children = &children.Capacity{}
		// Remote children: options.a2a.remotes, through the same
		// supervisor and capacity.
		runner, err := d.A2ARunner(ctx, opts)
		if err != nil {
			return RuntimeOptions{}, err
		}
		if runner != nil {
			ro.Remote = runner
			ro.cleanup = append(ro.cleanup, func() error { runner.Client().CloseIdleConnections(); return nil })
		}
	}
	if o.Run.Instructions != nil {
		ro.Instructions = *o.Run.Instructions
	}
	fail := func(err error) (RuntimeOptions, error) {
		for _, c := range ro.cleanup {
			c()
		}
		return RuntimeOptions{}, err
	}
	natives, closers, err := d.nativeCatalogs(set, ro.secrets, opts.EgressForwarder, true)
	ro.cleanup = append(ro.cleanup, closers...)
	if err != nil {
		return fail(err)
	}
	ro.Catalogs = append(ro.Catalogs, natives...)
	if len(o.Skills.Activate) > 0 {
		cat, err := d.activateSkills(ctx, set)
		if err != nil {
			return fail(err)
		}
		if cat != nil {
			ro.Catalogs = append(ro.Catalogs, cat)
			ro.skills = cat.Skills()
		}
	}
	if len(o.MCP.Servers) > 0 {
		open, err := d.mcpCatalogs(opts, set)
		if err != nil {
			return fail(err)
		}
		ro.OpenCatalogs = open
	}
	if o.Memory.Configured() {
		open, err := d.memoryCatalogs(opts.Clock, ro.OpenCatalogs)
		if err != nil {
			return fail(err)
		}
		ro.OpenCatalogs = open
	}
	if d.remotesPinnedPerTask() {
		open, err := d.taskShellCatalogs(opts.EgressForwarder, ro.secrets, ro.OpenCatalogs)
		if err != nil {
			return fail(err)
		}
		ro.OpenCatalogs = open
	}
	switch {
	case opts.Model != nil:
		ro.Model = opts.Model
	case opts.FixtureEndpoint != "":
		m, err := d.FixtureModel(opts.FixtureEndpoint)
		if err != nil {
			return fail(err)
		}
		ro.Model = m
	default:
		m, err := d.configuredModel(ctx, opts)
		if err != nil {
			return fail(err)
		}
		ro.Model = m
	}
	ro.Compaction = d.compactionOptions(ro.Model)
	maxErrors, report := d.c.Options.Tools.Recoverable()
	ro.Recovery = &Recovery{MaxRecoverableErrors: maxErrors, ReportDenials: report}
	ro.ResumeUnknown = d.c.Options.Resume.Unknown
	return ro, nil
}

// compactionOptions are options.context as the runtime takes them, with
// the window of the model m serves: model.context_window_tokens, or for a
// route the smallest window its entries declare (any of them may serve a
// request). Nil when compaction is off.
func (d *Deployment) compactionOptions(m model.Model) *CompactionOptions {
	c := d.c.Options.Context
	if !c.Enabled {
		return nil
	}
	out := &CompactionOptions{SafetyMarginPercent: int(c.SafetyMarginPercent), MaxSummaryTokens: c.MaxSummaryTokens,
		MaxSummaryBytes: c.MaxSummaryBytes, KeepRecentTurns: int(c.KeepRecentTurns)}
	window := func(w *int64) {
		if w != nil && *w > 0 && (out.ContextWindowTokens == 0 || uint64(*w) < out.ContextWindowTokens) {
			out.ContextWindowTokens = uint64(*w)
		}
	}
	if rm, ok := routeOf(m); ok {
		for _, name := range rm.EntryNames() {
			if p, ok := d.c.Options.Models[name]; ok {
				window(p.ContextWindowTokens)
			}
		}
		return out
	}
	window(d.c.Options.Model.ContextWindowTokens)
	return out
}

// limitInt is l as the workspace tools take it: 0 for no bound.
func limitInt(l ledger.Limit) int64 {
	n, finite := l.Value()
	if !finite || n > 1<<62 {
		return 0
	}
	return int64(n)
}

func (d *Deployment) ledgerLimits() ledger.Limits {
	l := d.c.Options.Limits
	return ledger.Limits{
		ModelCalls:      l.MaxModelCalls,
		ToolCalls:       l.MaxToolCalls,
		TotalTokens:     l.MaxTotalTokens,
		CostMicroUSD:    l.MaxCostMicroUSD,
		Events:          l.MaxEvents,
		DurationMillis:  ledger.Max(uint64(l.MaxRunDurationMS)),
		ContextBytes:    ledger.Max(uint64(l.MaxContextBytes)),
		InputBytes:      ledger.Max(uint64(l.MaxInputBytes)),
		OutputBytes:     ledger.Max(uint64(l.MaxOutputBytes)),
		ToolInputBytes:  ledger.Max(uint64(l.MaxToolInputBytes)),
		ToolOutputBytes: ledger.Max(uint64(l.MaxToolOutputBytes)),
	}
}

// configuredModel builds the model the deployment selects.
func (d *Deployment) configuredModel(ctx context.Context, opts HostOptions) (model.Model, error) {
	m := d.c.Options.Model
	if d.c.Options.ModelRoute != "" {
		return d.httpModel(opts)
	}
	switch m.Provider {
	case "script":
		p, err := d.resolvePath(*m.Script)
		if err != nil {
			return nil, err
		}
		s, err := script.Load(ctx, p)
		if err != nil {
			return nil, (&config.Error{Code: config.CodeInvalidValue, Option: "/options/model/script", Message: err.Error()}).WithCause(err)
		}
		return script.NewModel(s), nil
	}
	return d.httpModel(opts)
}

// SkillOptions returns the discovery options of this deployment: its
// roots, inline, single-file and package Skills, bounded by every
// authority layer's skill_roots.
func (d *Deployment) SkillOptions() (skills.Options, error) {
	roots, err := d.c.SkillRoots()
	if err != nil {
		return skills.Options{}, err
	}
	files, err := d.c.SkillFiles()
	if err != nil {
		return skills.Options{}, err
	}
	pkgPaths, err := d.c.SkillPackagePaths()
	if err != nil {
		return skills.Options{}, err
	}
	opts := skills.Options{Roots: roots}
	if len(files) > 0 {
		opts.Files = files
	}
	for name, p := range d.c.Options.Skills.Packages {
		if opts.Packages == nil {
			opts.Packages = map[string]skills.Package{}
		}
		sp := skills.Package{Version: p.Version, Digest: p.Digest}
		if p.Git != nil {
			sp.Git = &skills.GitSource{Repo: pkgPaths[name], Ref: p.Git.Ref, Subdir: p.Git.Subdir}
		} else {
			sp.Archive = pkgPaths[name]
		}
		opts.Packages[name] = sp
	}
	for name, in := range d.c.Options.Skills.Inline {
		if opts.Inline == nil {
			opts.Inline = map[string]skills.Inline{}
		}
		opts.Inline[name] = skills.Inline(in)
	}
	if bounds := d.c.SkillRootBounds(); len(bounds) > 0 {
		opts.Contained = func(rootID, dir string) bool {
			for _, b := range bounds {
				if !skills.WithinDirs(b)(rootID, dir) {
					return false
				}
			}
			return true
		}
	}
	return opts, nil
}

func (d *Deployment) activateSkills(ctx context.Context, set *authority.Set) (*engine.SkillCatalog, error) {
	selection := graphfill.SkillSelection(d.c.Options.Skills.Activate, set)
	if len(selection) == 0 {
		return nil, nil
	}
	opts, err := d.SkillOptions()
	if err != nil {
		return nil, err
	}
	cat, err := skills.Discover(ctx, opts)
	if err != nil {
		return nil, err
	}
	if err := skills.VerifyPins(opts, d.c.Options.Skills.Pins); err != nil {
		return nil, err
	}
	active, err := cat.Activate(ctx, selection)
	if err != nil {
		return nil, err
	}
	return &engine.SkillCatalog{Active: active, MaxBytes: int(d.c.Options.Limits.MaxToolOutputBytes) - 1024}, nil
}

// nativeCatalogs opens the workspace tools and shell.run the deployment
// enables, deciding paths with set. The caller runs cleanup, also after an
// error.
//
// perTask leaves out a shell.run that is built for each task instead
// (remotesPinnedPerTask).
func (d *Deployment) nativeCatalogs(set *authority.Set, secrets *redact.Set, forwarder string, perTask bool) (cats []ToolCatalog, cleanup []func() error, err error) {
	o := &d.c.Options
	if o.Filesystem.Enabled {
		dir, err := d.Workspace()
		if err != nil {
			return cats, cleanup, err
		}
		ws, err := fstools.Open(dir)
		if err != nil {
			return cats, cleanup, fmt.Errorf("pablo: open the workspace: %w", err)
		}
		cleanup = append(cleanup, ws.Close)
		fs := o.Limits.Filesystem
		tools, err := fstools.New(fstools.Options{
			Workspace: ws,
			Write:     o.Filesystem.Write,
			Decide: func(kind authority.ResourceKind, rel string) authority.Decision {
				id := authority.FSRead
				if kind == authority.ResourceWrite {
					id = authority.FSWrite
				}
				return set.Decide(authority.Request{Capability: id, Resources: []authority.Resource{{Kind: kind, Value: rel}}})
			},
			Limits: fstools.Limits{MaxFileBytes: limitInt(fs.MaxFileBytes), MaxEntries: limitInt(fs.MaxEntries), MaxDepth: limitInt(fs.MaxDepth),
				MaxScanBytes: limitInt(fs.MaxScanBytes), MaxToolOutputBytes: o.Limits.MaxToolOutputBytes},
			// The traces this deployment writes (options.trace.path lies in
			// the workspace in the base preset) are never readable,
			// writable or listed through the tools.
			Reserved:  d.reserved,
			MaskPage:  secrets.MaskWindow,
			RepoWrite: o.Filesystem.Scope == "repo-write",
			// Under repository-host-only anywhere, the remotes (a
			// .git's config) are the next task's allowlist.
			KeepGitDir: d.c.UsesRepositoryHostOnly(),
		})
		if err != nil {
			return cats, cleanup, err
		}
		cats = append(cats, engine.NewWorkspaceCatalog(tools))
	}
	if o.Shell.Enabled && !(perTask && d.remotesPinnedPerTask()) {
		dir, err := d.Workspace()
		if err != nil {
			return cats, cleanup, err
		}
		runner, err := d.shellRunner(dir, egress.RepositoryRoot(dir), forwarder)
		if err != nil {
			return cats, cleanup, err
		}
		pol, err := d.c.ShellPolicy()
		if err != nil {
			return cats, cleanup, err
		}
		cats = append(cats, engine.NewShellCatalog(runner, secrets, pol != nil))
	}
	return cats, cleanup, nil
}
