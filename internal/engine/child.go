package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/pabloagent/pablo/approval"
	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/children"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/graph"
	"github.com/pabloagent/pablo/internal/eventlog"
	"github.com/pabloagent/pablo/internal/fstools"
	"github.com/pabloagent/pablo/internal/output"
	"github.com/pabloagent/pablo/internal/providers"
	"github.com/pabloagent/pablo/internal/textx"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/ledger/outcome"
	"github.com/pabloagent/pablo/model"
)

// childRunner runs a task's local children: each is its own agent on the
// root's ledger, running the same loop as the root under an authority
// narrowed from its parent's. It is the children.Runner of the task's
// supervisor.
type childRunner struct {
	parent *step
}

// childHeader is what every event of p's child id, of kind, shares: the
// root's run, session and trace, and its place in the tree (depth one).
func (p *step) childHeader(id string, kind children.Kind) *eventlog.Header {
	return &eventlog.Header{RunID: p.hdr.RunID, SessionID: p.hdr.SessionID, TraceID: p.hdr.TraceID,
		Agent: event.AgentRef{AgentID: id, RootRunID: p.hdr.RunID, RootSessionID: p.hdr.SessionID, ParentAgentID: p.agent, Kind: string(kind), Depth: 1}}
}

// childHandle is a started child: the children.Handle of its run.
type childHandle struct {
	done   chan struct{}
	cancel context.CancelFunc
	result children.Result
}

func (h *childHandle) Done() <-chan struct{}   { return h.done }
func (h *childHandle) Result() children.Result { return h.result }
func (h *childHandle) Cancel()                 { h.cancel() }

// Start admits the child on the root's ledger and runs it in the
// background. The child sees the trusted prefix, its input, overlay,
// context strings and handoffs, never its parent's transcript, and calls
// through its parent's catalogs under its own narrowed authority; it
// cannot spawn (depth one).
func (c *childRunner) Start(ctx context.Context, spec children.Spec) (children.Handle, error) {
	p := c.parent
	t := p.t
	if err := p.base.Err(); err != nil {
		// The root is over: a slot a cancelled sibling freed starts
		// nothing (the supervisor settles the child cancelled).
		return nil, err
	}
	auth, err := p.conf.auth.Narrow(childNarrowing(spec))
	if err != nil {
		return nil, fmt.Errorf("pablo: child %s: %w", spec.AgentID, err)
	}
	var out *output.Spec
	if len(spec.OutputSchema) > 0 {
		out = &output.Spec{Schema: string(spec.OutputSchema)}
		if _, err := output.New(out); err != nil {
			return nil, fmt.Errorf("pablo: child %s: output schema: %w", spec.AgentID, err)
		}
	}
	// A child a resume readmitted continues its own agent from its
	// records; any other is a new agent of the root's ledger.
	id, res := spec.AgentID, t.resumedChild(spec.AgentID)
	if res == nil {
		var err error
		id, err = p.t.root.StartAgent(ctx, ledger.AgentSpec{ID: spec.AgentID, ParentID: p.agent, Kind: string(children.KindLocal),
			Limits: spec.Ceilings.Limits(), InputDigest: sha256Tag([]byte(spec.Input)), InputBytes: uint64(spec.InputBytes())})
		if err != nil {
			return nil, err
		}
	}
	m, route := p.conf.model, narrowRoute(p.conf.route, spec.Capabilities.ModelRoute)
	if route != p.conf.route {
		m = route
	}
	s := &step{t: t, agent: id, modelInfo: m.Info(), payloads: p.payloads, conf: agentConf{
		model: m, route: route, auth: auth, input: spec.Input, context: childContext(spec), approver: p.conf.approver, output: out,
		child: true, catalogs: childCatalogs(p.catalogs), view: p.view, pins: handedPins(spec), memory: spec.Capabilities.Memory,
	}, res: res}
	// The child compacts inside its own context ceiling, which lies
	// within its parent's.
	s.conf.contextBytes = p.conf.contextBytes
	if n, finite := spec.Ceilings.Limits().ContextBytes.Value(); finite && (s.conf.contextBytes == 0 || n < s.conf.contextBytes) {
		s.conf.contextBytes = n
	}
	s.hdr = p.childHeader(id, children.KindLocal)
	// The child runs under the task's own context: a root cancel reaches
	// it, the supervisor's Cancel ends it alone. Its span is a child of
	// its parent agent's, in the task's one trace, as its events are in
	// the native trace (p.base holds at most the caller's span).
	runCtx, cancel := context.WithCancel(trace.ContextWithSpan(p.base, p.span))
	h := &childHandle{done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(h.done)
		defer cancel()
		h.result = s.runChild(runCtx)
	}()
	return h, nil
}

// childNarrowing is the authority narrowing of a child's effective
// capabilities.
func childNarrowing(spec children.Spec) authority.Narrowing {
	n := authority.Narrowing{ID: "child:" + spec.AgentID, MCPServers: spec.Capabilities.MCPServers}
	n.Tools = make([]authority.ID, 0, len(spec.Capabilities.Tools))
	for _, tool := range spec.Capabilities.Tools {
		if tool != string(authority.Subagent) {
			n.Tools = append(n.Tools, authority.ID(tool))
		}
	}
	n.Skills = make([]authority.ID, 0, len(spec.Capabilities.Skills))
	for _, sk := range spec.Capabilities.Skills {
		n.Skills = append(n.Skills, authority.ID(sk))
	}
	return n
}

// handedPins are the files spec's artifact handoffs hand the child, at
// the revisions the supervisor verified right before starting it.
func handedPins(spec children.Spec) []fstools.Pin {
	var pins []fstools.Pin
	for _, h := range spec.Handoffs {
		if h.Artifact != nil {
			pins = append(pins, fstools.Pin{Path: h.Artifact.Path, Revision: h.Artifact.Revision})
		}
	}
	return pins
}

// pinHanded binds the child's workspace tools in v, and in its catalogs,
// to the files it was handed: the verification at its start is then not
// the last one, each read of a handed file is checked against the handed
// revision on the bytes it returns (fstools.Pin). The parent's catalogs
// are unchanged; the child gets its own pinned copy of the workspace
// catalog.
func (s *step) pinHanded(v *toolView) error {
	if len(s.conf.pins) == 0 {
		return nil
	}
	cats := slices.Clone(s.catalogs)
	for i, c := range cats {
		wc, ok := c.(*WorkspaceCatalog)
		if !ok {
			continue
		}
		tools, err := wc.tools.WithPins(s.conf.pins)
		if err != nil {
			return fmt.Errorf("pablo: child %s: %w", s.agent, err)
		}
		mine := &WorkspaceCatalog{tools: tools, specs: wc.specs}
		cats[i] = mine
		for id, owner := range v.owner {
			if owner == c {
				v.owner[id] = mine
			}
		}
	}
	s.catalogs = cats
	return nil
}

// childCatalogs are the parent's catalogs without the supervisor's: a
// child cannot spawn.
func childCatalogs(cats []Catalog) []Catalog {
	out := make([]Catalog, 0, len(cats))
	for _, c := range cats {
		if _, sup := c.(*subagentCatalog); !sup {
			out = append(out, c)
		}
	}
	return out
}

// childContext is what a child is given after its input: its overlay, its
// context strings and its handoffs, each one user-role message. It is data
// the parent chose to pass; it grants nothing.
func childContext(spec children.Spec) []model.Message {
	var msgs []model.Message
	if spec.Overlay != "" {
		msgs = append(msgs, model.Message{Role: model.RoleUser, Content: spec.Overlay})
	}
	for _, c := range spec.Context {
		msgs = append(msgs, model.Message{Role: model.RoleUser, Content: c})
	}
	for _, h := range spec.Handoffs {
		var b strings.Builder
		fmt.Fprintf(&b, "Handoff from agent %s (result %s, %s):\n", h.SourceAgentID, h.ResultID, h.Kind)
		switch {
		case h.Inline != nil:
			b.Write(h.Inline.Output)
		case h.Artifact != nil:
			fmt.Fprintf(&b, "workspace file %s at revision %s", h.Artifact.Path, h.Artifact.Revision)
		}
		msgs = append(msgs, model.Message{Role: model.RoleUser, Content: b.String()})
	}
	return msgs
}

// runChild runs a child's loop to its terminal record and returns its
// result. The child's catalogs belong to its parent: none is closed here.
func (s *step) runChild(ctx context.Context) children.Result {
	t := s.t
	s.base = ctx
	if d, ok := t.root.Deadline(s.agent); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d)
		defer cancel()
	}
	s.caller = ctx
	ctx, span := t.rt.startSpan(ctx, "invoke_agent")
	if span.IsRecording() {
		span.SetAttributes(agentAttributes(s.hdr)...)
	}
	s.ctx = WithSkillAuthority(WithTaskKind(WithToolEgress(WithToolOutput(s.withGroupRecorder(ctx), s.streamOutput), s.recordEgress), t.req.Kind), s.conf.auth)
	s.traceID = s.hdr.TraceID
	o := s.loop()
	span.SetAttributes(attribute.String("pablo.outcome", string(o.Status)))
	span.End()
	o, acc := s.terminal(o)
	res := children.Result{Outcome: *o, Accounting: acc, TraceID: s.traceID, SessionID: s.hdr.SessionID}
	if o.Output != nil {
		res.Output = *o.Output
	}
	if s.check != nil {
		rec, rep := s.check.Records()
		res.Validation, _ = json.Marshal(rec)
		if rep != nil {
			res.Repair, _ = json.Marshal(rep)
		}
		if o.Status == event.StatusCompleted && s.check.Valid() && json.Valid([]byte(res.Output)) {
			res.StructuredOutput = json.RawMessage(res.Output)
			res.Artifact = artifactOf(res.StructuredOutput)
		}
	}
	return res
}

// artifactOf is the workspace file a child's validated structured answer
// names as {"artifact": {"path": ..., "revision": ...}}, which an artifact
// handoff of its result passes (re-verified before the receiving child
// starts); nil when it names none.
func artifactOf(out json.RawMessage) *children.Artifact {
	var v struct {
		Artifact *children.Artifact `json:"artifact"`
	}
	if json.Unmarshal(out, &v) != nil || v.Artifact == nil || v.Artifact.Path == "" || v.Artifact.Revision == "" {
		return nil
	}
	return v.Artifact
}

// agentAttributes are the reference's pablo.agent.* span attributes.
func agentAttributes(h *eventlog.Header) []attribute.KeyValue {
	return []attribute.KeyValue{
		attribute.String("pablo.agent.id", h.Agent.AgentID),
		attribute.String("pablo.root.run.id", h.RunID),
		attribute.String("pablo.root.session.id", h.SessionID),
		attribute.String("pablo.agent.session.id", h.SessionID),
		attribute.String("pablo.agent.kind", h.Agent.Kind),
		attribute.Int("pablo.agent.depth", h.Agent.Depth),
		attribute.String("pablo.parent.agent.id", h.Agent.ParentAgentID),
	}
}

// NewSubagentCatalog is the subagent tool's catalog over tool, with no
// supervisor behind it: what Deployment.Decide decides a subagent call
// against.
func NewSubagentCatalog(tool *children.Tool) Catalog { return &subagentCatalog{Tool: tool} }

// subagentCatalog is the root's subagent tool: the children package's
// catalog over the task's supervisor.
type subagentCatalog struct {
	*children.Tool
	tree *children.Tree
}

// Call runs one subagent call. Its payload is the result's subagent
// member, as REFERENCE §4.1 names each tool's: {"status", "subagent":
// {action, ...}, "policy_rule", "shell"}.
func (c *subagentCatalog) Call(ctx context.Context, call authority.Call) ledger.ToolResult {
	res := c.Tool.Call(ctx, call)
	if res.Output != nil {
		res.Output = map[string]any{"subagent": res.Output}
	}
	return res
}

// delegates implements delegatingCatalog: a call asks for the approval
// its capability needs only when it hands work to another agent.
func (c *subagentCatalog) delegates(call authority.Call) bool {
	return delegates(call.Arguments, c.Tool.Remotes())
}

// delegation is what the subagent call args delegates, for its approval
// request: nil when it delegates nothing or its arguments are refused.
func (c *subagentCatalog) delegation(args json.RawMessage) *approval.Delegation {
	a, err := children.ParseArguments(args, c.Tool.Remotes())
	if err != nil || !a.Action.Delegates() {
		return nil
	}
	return delegationOf(a, c.tree)
}

// delegationOf is what the parsed delegating arguments a hand on, the
// capabilities narrowed against tree's parent (nil tree: as asked).
func delegationOf(a children.Arguments, tree *children.Tree) *approval.Delegation {
	d := &approval.Delegation{Action: a.Action}
	if a.Action == children.ActionSpawnRemote {
		parts, _ := json.Marshal(a.Remote.Parts)
		d.Remote, d.InputDigest, d.InputBytes = a.Remote.Remote, sha256Tag(parts), len(parts)
		return d
	}
	d.Capabilities, d.Handoffs = a.Request.Capabilities, a.Request.Handoffs
	if tree != nil {
		if s, err := children.Narrow(tree.Parent(), children.Scope{Capabilities: a.Request.Capabilities, Ceilings: a.Request.Ceilings}); err == nil {
			d.Capabilities = s.Capabilities
		}
	}
	d.InputDigest, d.InputBytes = sha256Tag([]byte(a.Request.Input)), len(a.Request.Input)
	return d
}

// delegates reports whether subagent arguments args hand work to another
// agent (spawn, spawn_remote), parsed exactly as the tool parses them.
// Arguments the tool will refuse are judged as delegating: the question
// is kept wherever the parse cannot show that nothing is delegated.
func delegates(args json.RawMessage, remotes []string) bool {
	a, err := children.ParseArguments(args, remotes)
	return err != nil || a.Action.Delegates()
}

// startSupervisor makes the root's supervisor and its subagent tool once
// the root's other tools are known (v): the parent scope is each of them,
// the MCP servers they belong to, the activated Skills the authority
// admits, the root's model route and the root's ceilings.
func (s *step) startSupervisor(v *toolView) (*subagentCatalog, error) {
	r := s.t.rt
	var parent children.Scope
	for id := range v.owner {
		if id != authority.Subagent {
			parent.Capabilities.Tools = append(parent.Capabilities.Tools, string(id))
		}
	}
	slices.Sort(parent.Capabilities.Tools)
	if rm, ok := s.conf.route, s.conf.route != nil; ok {
		for _, e := range rm.r.Options().Entries {
			parent.Capabilities.ModelRoute = append(parent.Capabilities.ModelRoute, e.Name)
		}
	}
	// The MCP servers and Skills a child may inherit are what the runtime
	// admitted for this agent, whatever the authority's type: the servers
	// of the tools in its view, the activated Skills its authority allows.
	for id := range v.owner {
		if srv, _, ok := id.MCP(); ok && !slices.Contains(parent.Capabilities.MCPServers, srv) {
			parent.Capabilities.MCPServers = append(parent.Capabilities.MCPServers, srv)
		}
	}
	slices.Sort(parent.Capabilities.MCPServers)
	parent.Capabilities.Memory = memoryScopeOf(v)
	for _, sk := range skillsFor(r.opts.Skills, s.t.req.Kind, s.conf.auth) {
		parent.Capabilities.Skills = append(parent.Capabilities.Skills, sk.Activation.QualifiedName)
	}
	l := r.opts.Limits
	parent.Ceilings = children.Ceilings{MaxModelCalls: l.ModelCalls, MaxToolCalls: l.ToolCalls, MaxDurationMillis: l.DurationMillis,
		MaxContextBytes: l.ContextBytes, MaxOutputBytes: l.OutputBytes, MaxTotalTokens: l.TotalTokens, MaxCostMicroUSD: l.CostMicroUSD}
	opts := children.Options{RootRunID: s.t.root.ID(), ParentID: s.agent, Parent: parent, Runner: &childRunner{parent: s},
		Remote: remoteAgents(r.opts.Remote, s), Capacity: *r.opts.Children, IDs: idFunc(r.opts.NewID), Verifier: s.artifactVerifier()}
	if d, ok := s.t.root.Deadline(s.agent); ok {
		opts.Deadline = d
	}
	tree, err := children.New(opts)
	if err != nil {
		return nil, err
	}
	return &subagentCatalog{Tool: children.NewTool(tree, tree.Remotes()), tree: tree}, nil
}

// narrowRoute is the model a child runs on: its parent's, or, when the
// child names route entries (an ordered exact subsequence of its parent's,
// checked by children.Narrow), a route of those entries alone with the
// parent route's other options.
func narrowRoute(rm *Route, entries []string) *Route {
	if rm == nil || entries == nil {
		return rm
	}
	opts := rm.r.Options()
	kept := opts.Entries[:0:0]
	for _, e := range opts.Entries {
		if slices.Contains(entries, e.Name) {
			kept = append(kept, e)
		}
	}
	if len(kept) == 0 || len(kept) == len(opts.Entries) {
		return rm
	}
	opts.Entries, opts.MaxAttempts = kept, min(opts.MaxAttempts, len(kept))
	r, err := providers.NewRoute(opts)
	if err != nil {
		return rm
	}
	return &Route{name: rm.name, r: r}
}

// artifactVerifier re-checks artifact handoffs in the workspace the
// workspace tools serve, under the receiving child's narrowed read
// policy; nil (every artifact handoff refused) without workspace tools.
func (s *step) artifactVerifier() children.ArtifactVerifier {
	for _, c := range s.catalogs {
		wc, ok := c.(*WorkspaceCatalog)
		if !ok {
			continue
		}
		return &children.RootVerifier{Root: wc.tools.Workspace().Root(), Read: func(spec children.Spec, path string) error {
			auth, err := s.conf.auth.Narrow(childNarrowing(spec))
			if err != nil {
				return err
			}
			return auth.Decide(authority.Request{Capability: authority.FSRead, Resources: []authority.Resource{{Kind: authority.ResourceRead, Value: path}}}).Err()
		}}
	}
	return nil
}

// remoteAgent is a remote child's proxy agent on the root's ledger: the
// remote runner's children.RemoteRunner, wrapped so that each remote child
// is admitted as a remote_a2a agent of the tree, with its run.started and
// its run.finished (the remote task's terminal outcome) in the task's one
// stream and its terminal record in the ledger.
type remoteAgent struct {
	inner  children.RemoteRunner
	parent *step
}

// remoteAgents wraps inner for the root step p; nil stays nil (no remotes).
func remoteAgents(inner children.RemoteRunner, p *step) children.RemoteRunner {
	if inner == nil {
		return nil
	}
	return &remoteAgent{inner: inner, parent: p}
}

func (r *remoteAgent) Remotes() []string { return r.inner.Remotes() }

// StartRemote admits the proxy agent, then starts the remote task.
func (r *remoteAgent) StartRemote(ctx context.Context, spec children.RemoteSpec) (children.Handle, error) {
	p := r.parent
	if err := p.base.Err(); err != nil {
		return nil, err
	}
	parts, _ := json.Marshal(spec.Parts)
	// A remote child a resume follows continues its proxy agent; any
	// other is a new agent of the root's ledger.
	id, res := spec.AgentID, p.t.resumedChild(spec.AgentID)
	if res == nil {
		var err error
		id, err = p.t.root.StartAgent(ctx, ledger.AgentSpec{ID: spec.AgentID, ParentID: p.agent, Kind: string(children.KindRemote),
			InputDigest: sha256Tag(parts), InputBytes: uint64(len(parts))})
		if err != nil {
			return nil, err
		}
	}
	s := &step{t: p.t, agent: id, payloads: p.payloads, ctx: p.base, base: p.base, caller: p.base, traceID: p.hdr.TraceID, res: res}
	s.hdr = p.childHeader(id, children.KindRemote)
	var o *event.Outcome
	if res != nil {
		o = s.emit(event.EventData{Type: event.RunResumed, Deployment: s.t.rt.opts.Deployment, Resume: &res.info})
	} else {
		var dep *event.DeploymentRef
		dep, o = s.recordRemoteSnapshot(spec)
		if o == nil {
			o = s.emit(event.EventData{Type: event.RunStarted, Deployment: dep})
		}
	}
	if o == nil {
		// The proxy agent is durable before its request can leave: a
		// resume that finds no record of it knows nothing was sent.
		if err := p.t.root.Flush(ctx); err != nil {
			o = s.ledgerOutcome(err)
		}
	}
	if o != nil {
		s.terminal(o)
		return nil, fmt.Errorf("pablo: remote child %s: its first event was refused (%s)", id, o.Status)
	}
	// The proxy's span is the remote task's local parent: with trace
	// context negotiated, the peer's span becomes its child.
	_, span := p.t.rt.startSpan(trace.ContextWithSpan(context.WithoutCancel(p.base), p.span), "invoke_agent")
	if span.IsRecording() {
		span.SetAttributes(agentAttributes(s.hdr)...)
	}
	h, err := r.inner.StartRemote(trace.ContextWithSpan(ctx, span), spec)
	if err != nil {
		span.End()
		s.terminal(&event.Outcome{Status: event.StatusFailed, Code: outcome.FailRemoteTask, Delivery: outcome.NotSent})
		return nil, err
	}
	ph := &proxyHandle{inner: h, done: make(chan struct{})}
	go func() {
		defer close(ph.done)
		if b, ok := h.(remoteBinder); ok && spec.TaskID == "" {
			select {
			case <-b.Bound():
			case <-h.Done():
			}
			select {
			case <-b.Bound():
				// Bound, or bound and settled at once: recorded before
				// the terminal record either way.
				s.recordBound(spec.Remote, b)
			default:
			}
		}
		<-h.Done()
		ph.result = h.Result()
		o := ph.result.Outcome
		span.SetAttributes(attribute.String("pablo.outcome", string(o.Status)))
		span.End()
		s.terminal(&o)
	}()
	return ph, nil
}

// remoteBinder is a remote child's handle that tells when the remote
// bound its task, and under which IDs (the a2a runner's).
type remoteBinder interface {
	Bound() <-chan struct{}
	RemoteTask() (taskID, contextID string)
}

// recordBound records, durably, the task the remote bound for the proxy
// agent s: what a resume follows it by (remote.bound). A record that
// fails leaves the child running; a resume then finds no task ID and
// reports the child's outcome as unknown.
func (s *step) recordBound(remote string, b remoteBinder) {
	taskID, contextID := b.RemoteTask()
	if taskID == "" {
		return
	}
	sec := s.t.rt.opts.Secrets
	if s.emit(event.EventData{Type: event.RemoteBound, RemoteTask: &event.RemoteTask{Remote: remote, TaskID: sec.String(taskID), ContextID: sec.String(contextID)}}) == nil {
		_ = s.t.root.Flush(s.ctx)
	}
}

// recordRemoteSnapshot records a remote child's dispatch snapshot: what
// its proxy was admitted to delegate (the remote, the output modes it
// accepts), under the deployment's fingerprint; the remote's card digest
// is the runner's record. It returns the deployment reference run.started
// carries, with the snapshot's digest.
func (s *step) recordRemoteSnapshot(spec children.RemoteSpec) (*event.DeploymentRef, *event.Outcome) {
	attrs := map[string]string{}
	setAttr(attrs, "accepted_output_modes", strings.Join(spec.AcceptedOutputModes, ","))
	if spec.Stream != nil {
		attrs["stream"] = strconv.FormatBool(*spec.Stream)
	}
	snap := &ledger.Snapshot{Version: ledger.SnapshotVersion, Admitted: []ledger.SnapshotEntry{{ID: "remote:" + spec.Remote, Kind: graph.KindRemote, Attributes: attrs}}}
	dep := s.t.rt.opts.Deployment
	if dep != nil {
		snap.Fingerprint = dep.Fingerprint
	}
	canonical, digest, err := ledger.EncodeSnapshot(snap)
	if err != nil {
		return nil, &event.Outcome{Status: event.StatusFailed, Code: outcome.FailRemoteTask, Delivery: outcome.NotSent, Reason: textx.Shorten(err.Error(), ledger.MaxReasonBytes)}
	}
	if err := s.t.root.RecordSnapshot(s.ctx, s.agent, canonical, digest); err != nil {
		return nil, s.ledgerOutcome(err)
	}
	s.snapDigest = string(digest)
	if dep == nil {
		return nil, nil
	}
	ref := *dep
	ref.SnapshotDigest = s.snapDigest
	return &ref, nil
}

// proxyHandle is a remote child's handle whose Done closes once its proxy
// agent's terminal record is in the ledger.
type proxyHandle struct {
	inner  children.Handle
	done   chan struct{}
	result children.Result
}

func (h *proxyHandle) Done() <-chan struct{}   { return h.done }
func (h *proxyHandle) Result() children.Result { return h.result }
func (h *proxyHandle) Cancel()                 { h.inner.Cancel() }

// supervision is the root's supervisor of children, when they are
// enabled.
type supervision struct {
	tree *children.Tree
	// stopTreeClose stops the closing of tree that the root's
	// cancellation starts; treeClosed is closed once that closing ended.
	stopTreeClose func() bool
	treeClosed    chan struct{}
}
