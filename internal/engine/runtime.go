package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sync"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/children"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/internal/eventlog"
	"github.com/pabloagent/pablo/internal/ids"
	"github.com/pabloagent/pablo/internal/output"
	"github.com/pabloagent/pablo/internal/redact"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/model"
	"github.com/pabloagent/pablo/skills"
)

// Options are what a Runtime runs with: the root's RuntimeOptions,
// checked and converted by the root, which writes out the default
// Instructions. Model and Authority are set.
type Options struct {
	// Recovery says which of the model's mistakes go back to it as tool
	// results; the zero value returns none (the reference's contract).
	Recovery     Recovery
	Model        model.Model
	Authority    authority.Authority
	Catalogs     []Catalog
	OpenCatalogs func(ctx context.Context, task TaskInfo) ([]Catalog, error)
	Instructions string
	Context      []model.Message
	Limits       ledger.Limits
	// MaxOutputTokens is the per-request output allowance.
	MaxOutputTokens int64
	Store           ledger.Store
	NewLedger       func(ctx context.Context, opts ledger.Options) (ledger.Ledger, error)
	Deployment      *event.DeploymentRef
	Sink            func(event.Event) error
	Tracer          trace.Tracer
	Clock           ledger.Clock
	NewID           func() string
	OnStart         func(TaskInfo)
	Children        *children.Capacity
	Remote          children.RemoteRunner
	Output          *output.Spec
	// Compaction is resolved: its defaults written out.
	Compaction *CompactionOptions
	// Route is the route Model serves, when it is one (the root's sealed
	// Router); nil otherwise.
	Route *Route
	// Reap, when set, is called once before the runtime's first task: it
	// ends the process groups a crashed host left behind in Store.
	Reap func(ctx context.Context)
	// ResumeUnknown is what a resumed task does with a call whose outcome
	// is unknown (options.resume.unknown); empty means UnknownReport.
	ResumeUnknown UnknownPolicy
	// AuditLevel, when set, is each tool's audit level (seed 002), which
	// its snapshot entry records; the ledger retains no content of the
	// calls of a tool at AuditNone.
	AuditLevel func(capability string) string

	Secrets *redact.Set
	Cleanup []func() error
	// Skills are the activated Skills; each task keeps those for its
	// kind (Request.Kind, skills.Bundle.ForTaskKind).
	Skills []Skill
}

// Skill is one activated Skill as the engine runs it: its activation
// record, the message that carries its instructions after the task's
// context, and the task kinds it is for (none: every kind).
type Skill struct {
	Activation skills.Activation
	Message    model.Message
	TaskKinds  []string
}

// skillsFor are the Skills a task of kind activates whose agent's
// authority auth admits them: those whose task kinds include kind or are
// empty (all of them when kind is empty), less those auth denies (a role
// the task does not hold, a child's narrowed Skills).
func skillsFor(all []Skill, kind string, auth authority.Authority) []Skill {
	var out []Skill
	for _, s := range all {
		if (skills.Bundle{TaskKinds: s.TaskKinds}).ForTaskKind(kind) && admitsSkill(auth, s.Activation.QualifiedName) {
			out = append(out, s)
		}
	}
	return out
}

// Runtime runs tasks. It is safe for concurrent use: each Start is an
// independent root task with its own ledger. [Runtime.Shutdown] (or Close)
// stops it: it cancels and joins its tasks, then releases what it opened.
type Runtime struct {
	opts   Options
	tracer trace.Tracer

	toolsOnce sync.Once
	tools     *toolView // the catalogs' view every task shares; see sharedTools

	subagentOnce sync.Once
	subagent     *toolView // the subagent tool's view, compiled once; see subagentView

	// compiled keeps the tools' argument schemas a task's view compiled,
	// for the next task's view of the same tools (an MCP catalog's view is
	// built per task; see sharedTools).
	compiled authority.CompiledSchemas

	reapOnce sync.Once // survivors of the store's earlier hosts, killed before the first task

	// The dispatch snapshot of a root task on the shared view, encoded
	// once (see recordSnapshot).
	snapOnce   sync.Once
	snapJSON   []byte
	snapDigest ledger.ResultRef
	snapErr    error

	life lifecycle // admission, running tasks and shutdown
}

// New returns a Runtime. The root checked opts (NewRuntime); New writes
// out the output allowance's default and resolves the compaction options.
func New(opts Options) (*Runtime, error) {
	if opts.Model == nil || opts.Authority == nil {
		return nil, errors.New("pablo: a runtime needs a model and an authority")
	}
	if opts.MaxOutputTokens <= 0 {
		opts.MaxOutputTokens = 65536
	}
	if _, err := output.New(opts.Output); err != nil {
		return nil, err
	}
	if opts.Compaction != nil {
		c, err := opts.Compaction.resolved()
		if err != nil {
			return nil, err
		}
		opts.Compaction = &c
	}
	r := &Runtime{opts: opts, tracer: opts.Tracer}
	if r.tracer == nil {
		r.tracer = noop.NewTracerProvider().Tracer("pablo")
	}
	return r, nil
}

// startSpan starts a span on the host's tracer. Without one it returns the
// context's (no-op) span and allocates nothing: spans are off the hot path
// unless a host asked for them.
func (r *Runtime) startSpan(ctx context.Context, name string) (context.Context, trace.Span) {
	if r.opts.Tracer == nil {
		return ctx, trace.SpanFromContext(ctx)
	}
	return r.tracer.Start(ctx, name)
}

// startSpanFor is startSpan of the span named op and target ("chat
// gpt-5", "execute_tool fs.read"): the name is built only when a tracer is
// set, since a model call and a tool call each start one.
func (r *Runtime) startSpanFor(ctx context.Context, op, target string) (context.Context, trace.Span) {
	if r.opts.Tracer == nil {
		return ctx, trace.SpanFromContext(ctx)
	}
	return r.tracer.Start(ctx, op+" "+target)
}

// Start admits the root task req describes and runs it in the
// background. Only admission can fail here (the input over its ceiling, a
// store failure, a runtime whose Shutdown began: [ErrShutdown]);
// everything after admission settles into the task's result.
func (r *Runtime) Start(ctx context.Context, req Request) (*Task, error) {
	if err := checkConversation(req.History); err != nil {
		return nil, err
	}
	auth, err := r.taskAuthority(req.Roles)
	if err != nil {
		return nil, err
	}
	if err := r.admit(); err != nil {
		return nil, err
	}
	if r.opts.Store != nil {
		// A store may hold process groups of a host that crashed: they are
		// ended before this runtime starts anything of its own. Failing to
		// read them is not a reason to refuse work; `pablo ledger recover`
		// reports them too.
		if r.opts.Reap != nil {
			r.reapOnce.Do(func() { r.opts.Reap(ctx) })
		}
	}
	t, err := r.newTask(ctx, req)
	if err != nil {
		r.untrack(nil)
		return nil, err
	}
	t.auth, t.bound = auth, req.Roles != nil
	return r.launch(ctx, t), nil
}

// taskAuthority is the authority of a root task holding roles: the
// runtime's, bound to them when there are any. An authority that cannot
// hold roles refuses a task that has some, rather than ignore them.
func (r *Runtime) taskAuthority(roles []string) (authority.Authority, error) {
	if roles == nil {
		return r.opts.Authority, nil
	}
	b, ok := r.opts.Authority.(authority.RoleBinder)
	if !ok {
		return nil, fmt.Errorf("pablo: task roles %q: the runtime's authority (%T) is not an authority.RoleBinder, so it cannot decide what a role admits", roles, r.opts.Authority)
	}
	auth, err := b.WithRoles(roles)
	if err != nil {
		return nil, fmt.Errorf("pablo: task roles: %w", err)
	}
	return auth, nil
}

// launch runs the admitted task t in the background.
func (r *Runtime) launch(ctx context.Context, t *Task) *Task {
	req := t.req
	if r.opts.OnStart != nil {
		r.opts.OnStart(TaskInfo{TaskID: t.root.ID(), AgentID: t.root.RootAgentID(), Ledger: t.root, Roles: t.req.Roles, Kind: t.req.Kind})
	}
	// The caller's cancellation reaches the task, but the task owns its own
	// context so that it can settle and record its outcome after a cancel.
	// The cancel carries the caller's cause, so a caller's deadline is
	// still a deadline to the task (it ends timed_out).
	runCtx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	t.own, t.stop = runCtx, cancel
	stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	closing := r.track(t)
	go func() {
		defer r.untrack(t)
		defer close(t.finished)
		defer stop()
		t.run(runCtx, ctx)
		if req.Settled != nil {
			req.Settled(t.result)
		}
	}()
	if closing {
		// Shutdown began while this task was admitted: it starts, is
		// cancelled, and settles saying so.
		t.stop(errShutdownCause)
	}
	return t
}

// newTask admits a root task on its own ledger, not yet running.
func (r *Runtime) newTask(ctx context.Context, req Request) (*Task, error) {
	input := req.Input
	sum := sha256.Sum256([]byte(input))
	lopts := ledger.Options{
		Store:       r.opts.Store,
		Limits:      r.opts.Limits,
		InputDigest: "sha256:" + hex.EncodeToString(sum[:]),
		InputBytes:  uint64(len(input)),
		Clock:       r.opts.Clock,
		IDs:         idFunc(r.opts.NewID),
		// Every payload is built here, by json.Marshal or by hand around
		// validated arguments and canonical results.
		TrustedPayloads: true,
	}
	if r.opts.Deployment != nil {
		lopts.Fingerprint = r.opts.Deployment.Fingerprint
	}
	if req.SessionID != "" {
		// The prompt is kept so the session can be continued from the
		// store; masked like everything else the ledger holds.
		lopts.Session = &ledger.SessionLink{SessionID: req.SessionID, Workspace: req.Workspace, Turn: req.Turn, Prompt: r.opts.Secrets.String(input)}
	}
	if r.opts.Store != nil {
		// Kept, masked, so that the task can be resumed from the store.
		masked := r.opts.Secrets.String(input)
		lopts.Input = &masked
	}
	root, err := r.newLedger(ctx, lopts)
	if err != nil {
		return nil, fmt.Errorf("pablo: admit task: %w", err)
	}
	t := &Task{rt: r, root: root, req: req, finished: make(chan struct{}), auth: r.opts.Authority}
	t.cond = sync.NewCond(&t.mu)
	t.log = eventlog.New(&t.mu)
	return t, nil
}

// newLedger makes a task's ledger: the host's NewLedger, or a Root.
func (r *Runtime) newLedger(ctx context.Context, opts ledger.Options) (ledger.Ledger, error) {
	if r.opts.NewLedger != nil {
		l, err := r.opts.NewLedger(ctx, opts)
		if err == nil && l == nil {
			err = errors.New("RuntimeOptions.NewLedger returned no ledger")
		}
		return l, err
	}
	root, err := ledger.NewRoot(ctx, opts)
	if err != nil {
		return nil, err
	}
	return root, nil
}

// closeAll closes the catalogs of cats that hold resources: the ones a
// task opened itself, never the host's (Options.Catalogs).
func closeAll(cats []Catalog) error {
	var errs []error
	for _, c := range cats {
		if cl, ok := c.(io.Closer); ok {
			errs = append(errs, cl.Close())
		}
	}
	return errors.Join(errs...)
}

// idFunc adapts Options.NewID to the ledger's ID source; nil stays
// nil (the ledger's random default).
func idFunc(f func() string) ids.Source {
	if f == nil {
		return nil
	}
	return idSource(f)
}

type idSource func() string

func (f idSource) NewID() string { return f() }
