package engine

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger/outcome"
	"github.com/pabloagent/pablo/model"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/children"
	"github.com/pabloagent/pablo/internal/eventlog"
	"github.com/pabloagent/pablo/internal/fstools"
	"github.com/pabloagent/pablo/internal/jsonx"
	"github.com/pabloagent/pablo/internal/output"
	"github.com/pabloagent/pablo/internal/textx"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/mcp"
)

// step is the state of one agent's run loop: who runs (the task, the
// agent, its configuration and contexts), and, each in a part of its own,
// the tools it was admitted, the children it supervises, the conversation
// it carries and the live output of the call that streams now.
type step struct {
	// mistake is the last call refused before it reached a tool, as the
	// model would be told about it; misses counts the mistakes returned
	// to the model in a row (Recovery).
	mistake *mistake
	misses  int
	// answer is the tool result of mistake, once computed (mistakeAnswer).
	answer []byte

	// lastProfile is the last model call's profile name (profileName).
	lastProfile string

	t      *Task
	conf   agentConf
	agent  string
	hdr    *eventlog.Header
	base   context.Context // the agent's own context, before its deadline and tool wiring
	ctx    context.Context
	caller context.Context
	// span is the agent's invoke_agent span, set once before any child
	// starts: the parent of its children's spans.
	span trace.Span
	// traceID is the W3C trace ID of the task's events and object.
	traceID string
	// payloads: the ledger records event payloads. A task's ledger
	// without a store (a private root) keeps no event record, so none
	// are built; a host's own ledger (RuntimeOptions.NewLedger) gets them.
	payloads bool

	agentTools
	supervision
	conversation
	liveOutput

	modelInfo model.Info
	usage     ledger.Usage
	route     *RouteSession
	check     *output.Check
	// comp is the agent's compaction state; nil when compaction is off.
	comp *compactor
	// repairing is set during an output repair call, which never compacts.
	repairing bool
	// readmit holds the calls a resume decides again, by Pablo's call ID,
	// with the decision recorded at their admission before the stop.
	readmit map[string]authority.Decision
	// res is the agent's records before a resume; nil when it is not
	// resumed.
	res *agentResume
}

// run is the task's loop: model proposes → authority and contract validate
// → the executor acts → the observation is recorded → the ledger retains.
func (t *Task) run(ctx, caller context.Context) {
	r := t.rt
	s := newStep(t, ctx, caller)
	s.base = ctx
	if d, ok := t.root.Deadline(s.agent); ok {
		var cancel context.CancelFunc
		s.ctx, cancel = context.WithDeadline(ctx, d)
		defer cancel()
	}
	ctx, span := r.tracer.Start(s.ctx, "invoke_agent", trace.WithAttributes(attribute.String("pablo.run_id", t.root.ID())))
	s.span = span
	s.ctx = WithSkillAuthority(WithTaskKind(WithToolEgress(WithToolOutput(s.withGroupRecorder(ctx), s.streamOutput), s.recordEgress), t.req.Kind), s.conf.auth)
	if span.IsRecording() {
		span.SetAttributes(agentAttributes(s.hdr)...)
	}
	s.traceID = traceIDOf(span, caller, t.root.ID())
	s.hdr.TraceID = s.traceID
	end := s.loop()
	if s.tree != nil {
		// Every child settles and is joined before the root's terminal
		// event: admission stops, the queue drains, the active are
		// cancelled.
		if !s.stopTreeClose() {
			<-s.treeClosed // closing since the root was cancelled
		}
		s.tree.Close(context.WithoutCancel(s.ctx))
	}
	span.SetAttributes(attribute.String("pablo.outcome", string(end.Status)))
	if end.Status != event.StatusCompleted {
		span.SetStatus(codes.Error, string(end.Status))
	}
	span.End()
	if err := closeAll(s.opened); err != nil && end.Status == event.StatusCompleted {
		end = &event.Outcome{Status: event.StatusFailed, Code: outcome.FailToolCleanup, Delivery: outcome.ResponseReceived}
	}
	if end.Status == event.StatusCancelled && end.Reason == "" {
		// However the cancel reached the loop (a tool's or a child's
		// cancelled result), the outcome says who cancelled.
		c := *end
		c.Reason = t.cancelReason()
		end = &c
	}
	t.finish(s, end)
}

// newStep is the loop state of task t before its first event: ctx is the
// task's own context, caller the one its host started it with.
func newStep(t *Task, ctx, caller context.Context) *step {
	r := t.rt
	conf := agentConf{model: r.opts.Model, route: r.opts.Route, auth: t.auth, input: t.req.Input, history: t.req.History, context: taskContext(r.opts.Context, skillsFor(r.opts.Skills, t.req.Kind, t.auth)),
		approver: t.req.Approver, output: r.opts.Output}
	if n, finite := r.opts.Limits.ContextBytes.Value(); finite {
		conf.contextBytes = n
	}
	s := &step{t: t, conf: conf, ctx: ctx, caller: caller, agent: t.root.RootAgentID(), modelInfo: r.opts.Model.Info(), payloads: r.opts.Store != nil || r.opts.NewLedger != nil}
	if t.resume != nil {
		s.res = t.resume.agents[s.agent]
	}
	s.hdr = &eventlog.Header{RunID: t.root.ID(), SessionID: t.req.SessionID, Agent: event.AgentRef{AgentID: s.agent, RootRunID: t.root.ID(), Kind: "root"}}
	if s.hdr.SessionID == "" {
		s.hdr.SessionID = s.hdr.RunID
	}
	s.hdr.Agent.RootSessionID = s.hdr.SessionID
	return s
}

// traceIDOf is the trace ID of the task whose span is span, started by a
// host with the caller context, under run ID runID.
func traceIDOf(span trace.Span, caller context.Context, runID string) string {
	if sc := span.SpanContext(); sc.HasTraceID() {
		return sc.TraceID().String()
	}
	if in := trace.SpanContextFromContext(caller); in.HasTraceID() {
		// No tracer, but the host passed the caller's context: the task
		// still belongs to the caller's trace.
		return in.TraceID().String()
	}
	// Without a tracer the trace ID is derived from the run ID, so events
	// and the task object still carry a stable W3C-shaped ID.
	sum := sha256Tag([]byte(runID))
	return sum[len("sha256:") : len("sha256:")+32]
}

// loop runs model turns until an outcome.
func (s *step) loop() *event.Outcome {
	if o := s.begin(); o != nil {
		return o
	}
	if s.res != nil {
		if o := s.resumeTurns(); o != nil {
			return o
		}
	}
	for {
		if o := s.turn(); o != nil {
			return o
		}
	}
}

// begin opens the task: run.started, the Skill activations, the catalogs,
// the output check and the history the first request carries.
func (s *step) begin() *event.Outcome {
	r := s.t.rt
	// The dispatch snapshot: the catalogs open (the selections expanded,
	// the permission review re-run under the agent's authority, only
	// admitted tools offered), and what they offer is recorded before the
	// agent's first event, which carries its digest. An agent whose
	// catalogs did not open still starts and settles with that failure.
	opened := s.openCatalogs()
	if opened == nil {
		opened = s.recordSnapshot()
	}
	dep := r.opts.Deployment
	if dep != nil && s.snapDigest != "" {
		ref := *dep
		ref.SnapshotDigest = s.snapDigest
		ref.Memory = memoryPinOf(s.catalogs)
		dep = &ref
	}
	start := event.EventData{Type: event.RunStarted, Deployment: dep}
	resumed := s.res != nil
	if resumed {
		start.Type, start.Resume = event.RunResumed, &s.res.info
		if !s.conf.child {
			start.Resume = &s.t.resume.info
		}
	}
	if o := s.emit(start); o != nil {
		return o
	}
	for _, sk := range skillsFor(r.opts.Skills, s.t.req.Kind, s.conf.auth) {
		if s.conf.child || resumed {
			break // a child's Skills are in its context; their activation is the root's event
		}
		if o := s.emit(event.EventData{Type: event.SkillActivated, Skill: &sk.Activation}); o != nil {
			return o
		}
	}
	if opened != nil {
		return opened
	}
	if o := s.classifyRoute(); o != nil {
		return o
	}
	s.check, _ = output.New(s.conf.output) // checked by NewRuntime and the child's admission
	s.addHistory(s.conf.history...)
	// The conversation a session carries holds earlier tasks' assistant
	// turns: this task's turns (its call IDs, the turn a script replays)
	// are counted from its own first.
	s.histTurns = 0
	s.addHistory(model.Message{Role: model.RoleUser, Content: s.conf.input})
	s.addHistory(s.conf.context...)
	if c := s.t.rt.opts.Compaction; c != nil {
		// The conversation before the task, the task and the Skills'
		// instructions are pinned: a compaction never summarizes them.
		s.comp = &compactor{opts: *c, pinned: len(s.history), profile: s.modelInfo.Provider + "/" + s.modelInfo.Model}
	}
	return nil
}

// turn runs one model turn and the tool calls it proposes. It returns the
// task's outcome, or nil when the loop goes on.
func (s *step) turn() *event.Outcome {
	if o := s.interrupted(); o != nil {
		return o
	}
	resp, o := s.modelTurn()
	if o != nil {
		return o
	}
	if len(resp.ToolCalls) == 0 {
		return s.final(resp.Text)
	}
	// No tool starts unless a model call remains to consume its result.
	if o := s.modelCallRemains(); o != nil {
		return o
	}
	turn := s.histTurns // the response is the history's last assistant turn
	// Room for each call's result at once, rather than doubling the
	// history as they come.
	s.history = slices.Grow(s.history, len(resp.ToolCalls))
	for i, call := range resp.ToolCalls {
		if o := s.interrupted(); o != nil {
			return o
		}
		if o := s.toolCall(call, callID(turn, i)); o != nil {
			return o
		}
	}
	return nil
}

// final settles a final answer: it validates it against the output schema
// when one is set, with at most one repair call, during which no tool may
// run.
func (s *step) final(text string) *event.Outcome {
	if s.check == nil {
		return s.completed(text)
	}
	if s.check.Validate(text) {
		s.addHistory(model.Message{Role: model.RoleUser, Content: s.check.Feedback()})
		defs := s.defs
		s.defs = nil
		s.repairing = true
		resp, o := s.modelTurn()
		s.repairing = false
		s.defs = defs
		if o != nil {
			s.check.Block()
			return o
		}
		if len(resp.ToolCalls) > 0 {
			s.check.Block()
			return &event.Outcome{Status: event.StatusFailed, Code: outcome.FailMalformedStream, Delivery: outcome.ResponseReceived}
		}
		text = resp.Text
		s.check.Validate(text)
	}
	if !s.check.Valid() {
		return &event.Outcome{Status: event.StatusFailed, Code: outcome.FailOutputValidationFailed, Delivery: outcome.ResponseReceived}
	}
	return s.completed(text)
}

// completed is the outcome of a final answer: validated as the model
// wrote it, recorded and returned with its secrets masked.
func (s *step) completed(text string) *event.Outcome {
	out, masked := s.t.rt.opts.Secrets.MaskString(text)
	return &event.Outcome{Status: event.StatusCompleted, Output: &out, Masked: masked, FinishReason: model.FinishStop, Usage: usageOf(s.usage)}
}

// openCatalogs gathers the shared and per-task catalogs and the view of
// their admitted tools and contracts.
func (s *step) openCatalogs() *event.Outcome {
	r := s.t.rt
	if s.conf.child {
		// A child calls through its parent's open catalogs, under its own
		// narrowed authority: it opens no session of its own.
		s.catalogs = s.conf.catalogs
		v := s.conf.view.narrow(s.conf.auth)
		s.view = v
		if v.err != nil {
			return &event.Outcome{Status: event.StatusFailed, Code: outcome.FailToolExecution, Delivery: outcome.NotSent}
		}
		s.narrowMemory(v, s.conf.memory)
		if err := s.pinHanded(v); err != nil {
			return &event.Outcome{Status: event.StatusFailed, Code: outcome.FailChildAdmission, Delivery: outcome.NotSent,
				Reason: textx.Shorten(err.Error(), ledger.MaxReasonBytes)}
		}
		s.owner, s.byWire, s.refused, s.defs, s.contracts = v.owner, v.byWire, v.refused, v.defs, v.contracts
		return nil
	}
	s.catalogs = append(s.catalogs, r.opts.Catalogs...)
	var more []Catalog
	if r.opts.OpenCatalogs != nil {
		var err error
		opened, err := r.opts.OpenCatalogs(s.ctx, TaskInfo{TaskID: s.t.root.ID(), AgentID: s.agent, Ledger: s.t.root, MCPServers: s.t.req.MCPServers, Roles: s.t.req.Roles, Kind: s.t.req.Kind,
			Elicit: elicitOf(s.conf.approver), Egress: s.recordEgress})
		more = append(more, opened...)
		s.catalogs = append(s.catalogs, opened...)
		s.opened = append(s.opened, opened...)
		if err != nil && (errors.Is(err, ledger.ErrStore) || errors.Is(err, ledger.ErrClosed)) {
			// The ledger refused a catalog's admission records.
			return s.ledgerOutcome(err)
		}
		if err != nil {
			// A required catalog did not start: no tool was offered and
			// nothing was sent. Say which and why, masked and bounded.
			reason := textx.Shorten(s.t.rt.opts.Secrets.String(err.Error()), ledger.MaxReasonBytes)
			return &event.Outcome{Status: event.StatusFailed, Code: outcome.FailToolStartup, Delivery: outcome.NotSent, Reason: reason}
		}
	}
	// The runtime's own catalogs are compiled once and shared; a task's
	// own are added on top, in a view of its own.
	// A task bound to roles decides its own: the shared view is the
	// runtime's authority's, which holds none.
	var v *toolView
	if !s.t.bound {
		v = r.sharedTools()
	}
	s.shared = v != nil && len(more) == 0
	switch {
	case v == nil:
		v = buildToolView(s.t.auth, r.opts.Secrets, &r.compiled, nil, s.catalogs)
	case len(more) > 0:
		v = buildToolView(s.t.auth, r.opts.Secrets, &r.compiled, v, more)
	}
	if v.err != nil {
		return &event.Outcome{Status: event.StatusFailed, Code: outcome.FailToolExecution, Delivery: outcome.NotSent}
	}
	if r.opts.Children != nil {
		s.t.procs = make(chan struct{}, children.MaxOwnedProcesses)
		for _, c := range s.catalogs {
			h, ok := c.(HealthReporter)
			if !ok {
				continue
			}
			for _, srv := range h.Health() {
				if srv.Transport == mcp.Stdio && (srv.State == mcp.Ready || srv.State == mcp.Degraded) {
					select {
					case s.t.procs <- struct{}{}: // held for the task's life
					default:
					}
				}
			}
		}
		// The supervisor is the task's own, made once the other tools are
		// known (they are what a child narrows); its subagent tool joins
		// the view like a per-task catalog.
		sup, err := s.startSupervisor(v)
		if err != nil {
			return &event.Outcome{Status: event.StatusFailed, Code: outcome.FailChildAdmission, Delivery: outcome.NotSent,
				Reason: textx.Shorten(err.Error(), ledger.MaxReasonBytes)}
		}
		s.catalogs = append(s.catalogs, sup)
		s.opened = append(s.opened, sup)
		if v = v.with(r.subagentView(sup), sup); v.err != nil {
			return &event.Outcome{Status: event.StatusFailed, Code: outcome.FailToolExecution, Delivery: outcome.NotSent}
		}
		s.tree = sup.tree
		// A root cancelled or out of time admits no more children at
		// once, not when its loop next looks: a slot a cancelled child
		// frees must not start a queued one.
		s.treeClosed = make(chan struct{})
		s.stopTreeClose = context.AfterFunc(s.base, func() {
			defer close(s.treeClosed)
			s.tree.Close(context.WithoutCancel(s.base))
		})
	}
	s.owner, s.byWire, s.refused, s.defs, s.contracts = v.owner, v.byWire, v.refused, v.defs, v.contracts
	s.view = v
	return nil
}

// interrupted reports cancellation or the deadline as an outcome.
func (s *step) interrupted() *event.Outcome {
	if s.ctx.Err() == nil {
		return nil
	}
	if errors.Is(context.Cause(s.ctx), context.DeadlineExceeded) || errors.Is(s.ctx.Err(), context.DeadlineExceeded) {
		if s.caller.Err() == nil || errors.Is(s.caller.Err(), context.DeadlineExceeded) {
			return &event.Outcome{Status: event.StatusTimedOut}
		}
	}
	return &event.Outcome{Status: event.StatusCancelled, Reason: s.t.cancelReason()}
}

// ledgerFailure is ledgerOutcome for a ledger failure after the call it
// concerns reached delivery d: a store or state failure is the task's
// failure with that delivery.
func (s *step) ledgerFailure(err error, d outcome.Delivery) *event.Outcome {
	o := s.ledgerOutcome(err)
	if o.Status == event.StatusFailed && o.Code == outcome.FailEventSinkIO {
		o.Delivery = d
	}
	return o
}

// ledgerOutcome maps a refused admission or a ledger failure to an outcome.
func (s *step) ledgerOutcome(err error) *event.Outcome {
	var le *ledger.LimitError
	switch {
	case errors.As(err, &le) && le.Kind == outcome.LimitDuration:
		return &event.Outcome{Status: event.StatusTimedOut}
	case errors.As(err, &le) && le.NoBound:
		return &event.Outcome{Status: event.StatusFailed, Code: outcome.FailAccountingBoundViolated, Delivery: outcome.NotSent}
	case errors.As(err, &le):
		return &event.Outcome{Status: event.StatusLimitExceeded, Limit: le.Kind}
	case errors.Is(err, ledger.ErrBoundViolated):
		return &event.Outcome{Status: event.StatusFailed, Code: outcome.FailAccountingBoundViolated, Delivery: outcome.ResponseReceived}
	case s.ctx.Err() != nil:
		return s.interrupted()
	}
	return &event.Outcome{Status: event.StatusFailed, Code: outcome.FailEventSinkIO, Delivery: outcome.NotSent,
		Reason: s.reason("the ledger refused a write: %v", err)}
}

// emit appends an event to the ledger, publishes it and hands it to the
// host sink.
func (s *step) emit(data event.EventData) *event.Outcome {
	if !s.payloads {
		return s.publish(nil, "", &data)
	}
	payload, err := json.Marshal(&data)
	if err != nil {
		return &event.Outcome{Status: event.StatusFailed, Code: outcome.FailEventSinkIO, Delivery: outcome.NotSent,
			Reason: s.reason("event %s could not be encoded: %v", data.Type, err)}
	}
	return s.publish(payload, "", &data)
}

// emitToolStarted and emitToolFinished build their payloads by hand: they
// are on the path of every tool call. Like emit, they build none for a
// ledger that records no payload.
//
// The arguments are recorded with their secrets masked; the tool runs with
// the arguments the model wrote.
//
// A call whose capability is at audit level none (unretained) is
// recorded in the ledger with the not-retained marker for its arguments
// and result; the event's readers and the host's sink get them.
func (s *step) emitToolStarted(id, name string, args json.RawMessage, sandbox string, unretained bool) *event.Outcome {
	args, masked := s.t.rt.opts.Secrets.MaskJSON(args)
	var buf []byte
	if s.payloads {
		kept := args
		if unretained {
			kept = json.RawMessage(notRetainedArguments)
		}
		n := 84 + len(id) + len(name) + len(kept)
		buf = make([]byte, 0, n)
		buf = append(buf, `{"type":"tool.started","call":{"id":`...)
		buf = jsonx.AppendString(buf, id)
		buf = append(buf, `,"name":`...)
		buf = jsonx.AppendString(buf, name)
		buf = append(buf, `,"arguments":`...)
		buf = append(buf, kept...)
		if sandbox != "" {
			buf = append(buf, `,"sandbox":`...)
			buf = jsonx.AppendString(buf, sandbox)
		}
		buf = append(buf, '}')
		buf = appendMasked(buf, masked)
		buf = append(buf, '}')
	}
	// The log keeps the call, not an event of its own.
	call := &event.Call{ID: id, Name: name, Arguments: args, Sandbox: sandbox}
	return s.publishTool(buf, &eventlog.Tool{Call: call, Masked: masked})
}

func (s *step) emitToolFinished(callID, name string, result []byte, masked int) *event.Outcome {
	return s.emitToolFinishedAs(callID, name, result, result, masked)
}

// emitToolFinishedAs is emitToolFinished with kept as the result the
// ledger's payload records (the not-retained marker, under audit level
// none).
func (s *step) emitToolFinishedAs(callID, name string, result, kept []byte, masked int) *event.Outcome {
	var buf []byte
	if s.payloads {
		n := 84 + len(callID) + len(name) + len(kept)
		buf = make([]byte, 0, n)
		buf = append(buf, `{"type":"tool.finished","call_id":`...)
		buf = jsonx.AppendString(buf, callID)
		buf = append(buf, `,"name":`...)
		buf = jsonx.AppendString(buf, name)
		buf = append(buf, `,"result":`...)
		buf = append(buf, kept...)
		buf = appendMasked(buf, masked)
		buf = append(buf, '}')
	}
	return s.publishTool(buf, &eventlog.Tool{CallID: callID, Name: name, Result: result, Masked: masked})
}

// appendMasked appends an event's masked member, present only when
// something was masked.
func appendMasked(buf []byte, masked int) []byte {
	if masked == 0 {
		return buf
	}
	buf = append(buf, `,"masked":`...)
	return strconv.AppendInt(buf, int64(masked), 10)
}

// emitDelta is emit for text deltas, with the payload built by hand: it is
// the hot path of every streamed response. A delta with masks is a full
// event, to carry its count.
func (s *step) emitDelta(text string, masked int) *event.Outcome {
	if masked > 0 {
		return s.emit(event.EventData{Type: event.TextDelta, Text: text, Masked: masked})
	}
	var buf []byte
	if s.payloads {
		n := len(text) + len(`{"type":"assistant.text.delta","text":""}`)
		buf = make([]byte, 0, n)
		buf = append(buf, `{"type":"assistant.text.delta","text":`...)
		buf = jsonx.AppendString(buf, text)
		buf = append(buf, '}')
	}
	return s.publish(buf, text, nil)
}

// publish appends one event to the ledger, then to the task's log, then
// hands it to the host sink. data is nil for a text delta, whose text is
// all it carries.
func (s *step) publish(payload []byte, text string, data *event.EventData) *event.Outcome {
	typ := event.TextDelta
	if data != nil {
		typ = data.Type
	}
	st, err := s.t.log.Add(func() (eventlog.Stamp, error) {
		ev, err := s.t.root.Append(s.ctx, s.agent, string(typ), payload)
		return stampOf(ev), err
	}, s.hdr, text, data)
	return s.deliver(st, err, text, data)
}

// publishTool and publishModel are publish for the four events every turn
// publishes, which the task's log keeps as a tool or a model (a fraction
// of an event's size) rather than as an event.
func (s *step) publishTool(payload []byte, tool *eventlog.Tool) *event.Outcome {
	data := tool.Data()
	st, err := s.t.log.AddTool(func() (eventlog.Stamp, error) {
		ev, err := s.t.root.Append(s.ctx, s.agent, string(data.Type), payload)
		return stampOf(ev), err
	}, s.hdr, tool)
	return s.deliver(st, err, "", &data)
}

func (s *step) publishModel(payload []byte, m *eventlog.Model) *event.Outcome {
	data := m.Data()
	st, err := s.t.log.AddModel(func() (eventlog.Stamp, error) {
		ev, err := s.t.root.Append(s.ctx, s.agent, string(data.Type), payload)
		return stampOf(ev), err
	}, s.hdr, m)
	return s.deliver(st, err, "", &data)
}

// deliver is the rest of publishing an event the log has (or the ledger
// refused with err): the readers are woken and the host's sink gets it.
// data is nil for a text delta, whose text is all it carries.
func (s *step) deliver(st eventlog.Stamp, err error, text string, data *event.EventData) *event.Outcome {
	if st.RootSeq != 0 {
		s.t.wake()
	}
	if err != nil {
		return s.ledgerOutcome(err)
	}
	if sink := s.t.rt.opts.Sink; sink != nil {
		// Built here rather than through eventlog.Entry.Event: on this path
		// every copy counts (BenchmarkEventLatency, about 15 ns).
		e := event.Event{SchemaVersion: event.SchemaVersion, Seq: st.Seq, RootSeq: st.RootSeq, TimestampUnixMicros: st.UnixMicros,
			RunID: s.hdr.RunID, SessionID: s.hdr.SessionID, TraceID: s.hdr.TraceID, Agent: s.hdr.Agent}
		if data != nil {
			e.EventData = *data
		} else {
			e.Type, e.Text = event.TextDelta, text
		}
		if err := sink(e); err != nil {
			return &event.Outcome{Status: event.StatusFailed, Code: outcome.FailEventSinkIO, Delivery: outcome.ResponseReceived,
				Reason: s.reason("the host's event sink failed on event %s (root_seq %d): %v", e.Type, st.RootSeq, err)}
		}
	}
	if s.t.log.Low() {
		// Between events, not inside one's delivery.
		s.t.log.Grow()
	}
	return nil
}

// emitModel is emit for model.started and model.finished.
func (s *step) emitModel(m eventlog.Model) *event.Outcome {
	var payload []byte
	if s.payloads {
		var err error
		if payload, err = marshalEvent(m.Data()); err != nil {
			return &event.Outcome{Status: event.StatusFailed, Code: outcome.FailEventSinkIO, Delivery: outcome.NotSent,
				Reason: s.reason("event %s could not be encoded: %v", m.Data().Type, err)}
		}
	}
	return s.publishModel(payload, &m)
}

// marshalEvent is the payload of an event: its own copy goes to the heap
// only when a payload is wanted.
func marshalEvent(data event.EventData) ([]byte, error) { return json.Marshal(&data) }

// finish settles the task: the terminal event, the ledger's outcome record
// and the task object. A terminal record the ledger refuses is not
// dropped: the task fails with the ledger's code, and the failure is
// recorded instead when the ledger still can.
func (t *Task) finish(s *step, o *event.Outcome) {
	o, acc := s.terminal(o)
	id := t.root.ID()
	trace := s.traceID
	session := s.hdr.SessionID
	obj := &Result{SchemaVersion: event.SchemaVersion, RunID: &id, SessionID: &session, TraceID: &trace, Outcome: o, Accounting: &acc}
	obj.SnapshotDigest = s.snapDigest
	if t.req.Settled != nil {
		obj.Transcript = s.transcript()
	}
	if t.resume != nil {
		obj.Resume = &t.resume.info
	}
	if s.check != nil {
		rec, rep := s.check.Records()
		obj.OutputValidation, _ = json.Marshal(rec)
		obj.OutputRepair = rep
	}
	t.settle(obj)
}

// terminal records the agent's terminal event and outcome on the ledger
// and hands the event to the sink. It returns the outcome as recorded
// (a refused record turns it into the ledger's failure) and the agent's
// accounting.
func (s *step) terminal(o *event.Outcome) (*event.Outcome, ledger.Accounting) {
	t := s.t
	acc, _ := t.root.Accounting(s.agent)
	var en eventlog.Entry
	record := func() error {
		data := &event.EventData{Type: event.RunFinished, Outcome: o, Accounting: &acc}
		var payload []byte
		if s.payloads {
			payload, _ = json.Marshal(data)
		}
		st, err := t.log.Add(func() (eventlog.Stamp, error) {
			ev, err := t.root.Finish(context.WithoutCancel(s.ctx), s.agent, ledger.Finish{Outcome: ledgerOutcome(o), Payload: payload, OutputBytes: outputBytes(o)})
			return stampOf(ev), err
		}, s.hdr, "", data)
		if st.RootSeq != 0 {
			en = eventlog.Entry{Stamp: st, Header: s.hdr, Data: data}
		}
		return err
	}
	err := record()
	var le *ledger.LimitError
	if errors.As(err, &le) && o.Status == event.StatusCompleted {
		// limit_exceeded carries no output to bound, so this is not
		// refused for the same reason.
		o = &event.Outcome{Status: event.StatusLimitExceeded, Limit: le.Kind}
		err = record()
	}
	if err != nil {
		stamped := en.Data != nil
		o = &event.Outcome{Status: event.StatusFailed, Code: outcome.FailEventSinkIO, Delivery: outcome.NotSent,
			Reason: s.reason("the ledger could not record the terminal outcome: %v", err)}
		if !stamped {
			// Record the failure instead. A store that failed keeps
			// failing, and then recovery reports the task as interrupted,
			// which is the truth; the task object says why.
			_ = record()
		}
		// Otherwise the terminal event was stamped but not made durable:
		// the sink gets it as stamped, the task object the failure.
	}
	if en.Data != nil {
		t.wake()
	}
	if sink := t.rt.opts.Sink; sink != nil && en.Data != nil {
		// The task is over: a failing sink has nothing left to stop.
		_ = sink(en.Event())
	}
	return o, acc
}

// stampOf is the stamp of an event the ledger appended: zero when it
// appended none.
func stampOf(ev ledger.Event) eventlog.Stamp {
	if ev.RootSeq == 0 {
		return eventlog.Stamp{}
	}
	return eventlog.Stamp{RootSeq: ev.RootSeq, Seq: ev.Seq, UnixMicros: ev.Time.UnixMicro()}
}

func outputBytes(o *event.Outcome) uint64 {
	if o.Output == nil {
		return 0
	}
	return uint64(len(*o.Output))
}

// agentConf is what one agent's run loop runs with: the root's comes from
// the runtime and its Request, a child's from its narrowed spawn
// request.
type agentConf struct {
	model model.Model
	// route is the route model serves, when it is one.
	route    *Route
	auth     authority.Authority
	input    string
	history  []model.Message // before the input
	context  []model.Message // after the input
	approver Approver
	output   *output.Spec
	// child: the agent is a supervised child, which runs on its parent's
	// catalogs and records no Skill activation of its own.
	child    bool
	catalogs []Catalog
	view     *toolView // the parent's view, which a child's narrows
	// pins are the files a child was handed (its artifact handoffs) at
	// the revisions verified when it started: its workspace reads of
	// them return those bytes or fail artifact_changed.
	pins []fstools.Pin
	// memory is a child's memory scope: its memory tools' grants are cut
	// down to it (nil: its parent has no memory tool).
	memory *children.MemoryScope
	// contextBytes is the agent's own context ceiling (a child's lies
	// within its parent's); zero means none.
	contextBytes uint64
}
