package pablo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/internal/jsonx"
	"github.com/pabloagent/pablo/internal/redact"
	"github.com/pabloagent/pablo/internal/textx"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/mcp"
)

// step is the state of one task's run loop.
type step struct {
	t        *Task
	ctx      context.Context
	caller   context.Context
	agent    string
	hdr      *eventHeader
	catalogs []ToolCatalog
	owner    map[authority.ID]ToolCatalog
	byWire   map[string]authority.ID
	// refused holds, by wire name and by capability ID, the decision that
	// kept a listed tool out of the admitted catalog, so a call to it is
	// recorded with the layer and rule that denied it.
	refused   map[string]authority.Decision
	contracts *authority.Contracts
	defs      []ToolDef
	history   []Message // append-only: grown by addHistory alone
	histBytes uint64    // messageBytes of every message of history
	histTurns int       // the assistant messages of history
	defsBytes uint64    // the tool descriptors' measure, while defs is toolDefs
	toolDefs  []ToolDef // the defs defsBytes measures
	usage     ledger.Usage
	modelInfo ModelInfo
	traceID   string
	route     *RouteSession
	check     *outputCheck
	live      liveCall
	// outMasks mask the live output of the call that streams now, one
	// per stream (live.streams names them).
	outMasks [maxLiveStreams]redact.Stream
	slab     []byte // room for delta payloads, see carve
	scratch  []byte // resultJSON's working buffer, reused
	// payloads: the ledger records event payloads. A task's ledger
	// without a store (a private root) keeps no event record, so none
	// are built.
	payloads bool
}

// run is the task's loop: model proposes → authority and contract validate
// → the executor acts → the observation is recorded → the ledger retains.
func (t *Task) run(ctx, caller context.Context) {
	r := t.rt
	s := &step{t: t, ctx: ctx, caller: caller, agent: t.root.RootAgentID(), modelInfo: r.opts.Model.Info(), payloads: r.opts.Store != nil}
	s.hdr = &eventHeader{runID: t.root.ID(), agent: AgentRef{AgentID: s.agent, RootRunID: t.root.ID(), Kind: "root"}}
	if d, ok := t.root.Deadline(s.agent); ok {
		var cancel context.CancelFunc
		s.ctx, cancel = context.WithDeadline(ctx, d)
		defer cancel()
	}
	ctx, span := r.tracer.Start(s.ctx, "invoke_agent", trace.WithAttributes(attribute.String("pablo.run_id", t.root.ID())))
	s.ctx = WithToolOutput(s.withGroupRecorder(ctx), s.streamOutput)
	if sc := span.SpanContext(); sc.HasTraceID() {
		s.traceID = sc.TraceID().String()
	} else if in := trace.SpanContextFromContext(caller); in.HasTraceID() {
		// No tracer, but the host passed the caller's context: the task
		// still belongs to the caller's trace.
		s.traceID = in.TraceID().String()
	} else {
		// Without a tracer the trace ID is derived from the run ID, so
		// events and the task object still carry a stable W3C-shaped ID.
		sum := sha256Tag([]byte(t.root.ID()))
		s.traceID = sum[len("sha256:") : len("sha256:")+32]
	}
	s.hdr.traceID = s.traceID
	outcome := s.loop()
	span.SetAttributes(attribute.String("pablo.outcome", outcome.Status))
	if outcome.Status != StatusCompleted {
		span.SetStatus(codes.Error, outcome.Status)
	}
	span.End()
	if err := closeAll(s.catalogs); err != nil && outcome.Status == StatusCompleted {
		outcome = &Outcome{Status: StatusFailed, Code: string(ledger.FailToolCleanup), Delivery: string(ledger.ResponseReceived)}
	}
	t.finish(s, outcome)
}

// loop runs model turns until an outcome.
func (s *step) loop() *Outcome {
	t, r := s.t, s.t.rt
	if o := s.emit(EventData{Type: EventRunStarted, Deployment: r.opts.Deployment}); o != nil {
		return o
	}
	for i := range r.opts.activations {
		if o := s.emit(EventData{Type: EventSkillActivated, Skill: &r.opts.activations[i]}); o != nil {
			return o
		}
	}
	if o := s.openCatalogs(); o != nil {
		return o
	}
	s.check, _ = newOutputCheck(r.opts.Output) // checked by NewRuntime
	s.addHistory(Message{Role: RoleUser, Content: t.input})
	s.addHistory(r.opts.Context...)
	for {
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
		for _, call := range resp.ToolCalls {
			if o := s.interrupted(); o != nil {
				return o
			}
			if o := s.toolCall(call); o != nil {
				return o
			}
		}
	}
}

// final settles a final answer: it validates it against the output schema
// when one is set, with at most one repair call, during which no tool may
// run.
func (s *step) final(text string) *Outcome {
	if s.check == nil {
		return s.completed(text)
	}
	if s.check.validate(text) {
		s.addHistory(Message{Role: RoleUser, Content: s.check.feedback()})
		defs := s.defs
		s.defs = nil
		resp, o := s.modelTurn()
		s.defs = defs
		if o != nil {
			s.check.block()
			return o
		}
		if len(resp.ToolCalls) > 0 {
			s.check.block()
			return &Outcome{Status: StatusFailed, Code: string(ledger.FailMalformedStream), Delivery: string(ledger.ResponseReceived)}
		}
		text = resp.Text
		s.check.validate(text)
	}
	if !s.check.valid() {
		return &Outcome{Status: StatusFailed, Code: string(ledger.FailOutputValidationFailed), Delivery: string(ledger.ResponseReceived)}
	}
	return s.completed(text)
}

// completed is the outcome of a final answer: validated as the model
// wrote it, recorded and returned with its secrets masked.
func (s *step) completed(text string) *Outcome {
	out, masked := s.t.rt.opts.secrets.MaskString(text)
	return &Outcome{Status: StatusCompleted, Output: &out, Masked: masked, FinishReason: FinishStop, Usage: usageOf(s.usage)}
}

// openCatalogs gathers the shared and per-task catalogs and the view of
// their admitted tools and contracts.
func (s *step) openCatalogs() *Outcome {
	r := s.t.rt
	s.catalogs = append(s.catalogs, r.opts.Catalogs...)
	var more []ToolCatalog
	if r.opts.OpenCatalogs != nil {
		var err error
		more, err = r.opts.OpenCatalogs(s.ctx, TaskInfo{TaskID: s.t.root.ID(), AgentID: s.agent, Ledger: s.t.root})
		s.catalogs = append(s.catalogs, more...)
		if err != nil && (errors.Is(err, ledger.ErrStore) || errors.Is(err, ledger.ErrClosed)) {
			// The ledger refused a catalog's admission records.
			return s.ledgerOutcome(err)
		}
		if err != nil {
			// A required catalog did not start: no tool was offered and
			// nothing was sent. Say which and why, masked and bounded.
			reason := textx.Shorten(s.t.rt.opts.secrets.String(err.Error()), ledger.MaxReasonBytes)
			return &Outcome{Status: StatusFailed, Code: string(ledger.FailToolStartup), Delivery: string(ledger.NotSent), Reason: reason}
		}
	}
	// The runtime's own catalogs are compiled once and shared; a task's
	// own are added on top, in a view of its own.
	v := r.sharedTools()
	switch {
	case v == nil:
		v = buildToolView(r.opts.Authority, r.opts.secrets, nil, s.catalogs)
	case len(more) > 0:
		v = buildToolView(r.opts.Authority, r.opts.secrets, v, more)
	}
	if v.err != nil {
		return &Outcome{Status: StatusFailed, Code: string(ledger.FailToolExecution), Delivery: string(ledger.NotSent)}
	}
	s.owner, s.byWire, s.refused, s.defs, s.contracts = v.owner, v.byWire, v.refused, v.defs, v.contracts
	return nil
}

// interrupted reports cancellation or the deadline as an outcome.
func (s *step) interrupted() *Outcome {
	if s.ctx.Err() == nil {
		return nil
	}
	if errors.Is(context.Cause(s.ctx), context.DeadlineExceeded) || errors.Is(s.ctx.Err(), context.DeadlineExceeded) {
		if s.caller.Err() == nil || errors.Is(s.caller.Err(), context.DeadlineExceeded) {
			return &Outcome{Status: StatusTimedOut}
		}
	}
	return &Outcome{Status: StatusCancelled}
}

func (s *step) modelCallRemains() *Outcome {
	lim := s.t.rt.opts.Limits.ModelCalls
	n, finite := lim.Value()
	if !finite {
		return nil
	}
	acc, err := s.t.root.Accounting(s.agent)
	if err == nil && acc.ModelCalls.N >= n {
		return &Outcome{Status: StatusLimitExceeded, Limit: string(ledger.LimitModelCalls)}
	}
	return nil
}

// modelCall is one model call on the ledger: reserved, started, dispatched,
// settled. A routed model makes one per attempt.
type modelCall struct {
	id       string
	started  bool
	outBytes uint64
	span     trace.Span
	// text masks the call's text deltas as one stream: a secret split
	// across deltas is masked whole.
	text redact.Stream
}

// beginCall reserves and dispatches one model call and emits model.started.
func (s *step) beginCall(ctx context.Context, provider, model string, route *RouteAttempt, req *ModelRequest) (*modelCall, *Outcome) {
	t, r := s.t, s.t.rt
	mc := ledger.ModelCall{Route: provider + "/" + model, ContextBytes: s.requestBytes(req)}
	if route != nil {
		mc.Route = route.Route + "/" + route.Entry
	}
	if s.modelInfo.TokenBound > 0 {
		mc.TokenBound = ledger.Max(s.modelInfo.TokenBound)
	}
	if s.modelInfo.CostBound > 0 {
		mc.CostBound = ledger.Max(s.modelInfo.CostBound)
	}
	id, err := t.root.ReserveModelCall(s.ctx, s.agent, mc)
	if err != nil {
		return nil, s.ledgerOutcome(err)
	}
	call := &modelCall{id: id}
	call.text.Reset(r.opts.secrets)
	if o := s.emit(EventData{Type: EventModelStarted, Provider: provider, Model: model, ModelRoute: route}); o != nil {
		if err := t.root.SettleModelCall(s.ctx, s.agent, id, ledger.ModelSettlement{Status: ledger.OutcomeStatus(StatusFailed), Delivery: ledger.NotSent, Error: ledger.FailEventSinkIO}); err != nil {
			return nil, s.ledgerFailure(err, ledger.NotSent)
		}
		return nil, o
	}
	_, call.span = r.startSpan(ctx, "chat")
	if call.span.IsRecording() {
		call.span.SetAttributes(attribute.String("gen_ai.request.model", model))
	}
	if err := t.root.Dispatch(s.ctx, s.agent, id); err != nil {
		call.span.End()
		if serr := t.root.SettleModelCall(s.ctx, s.agent, id, ledger.ModelSettlement{Status: ledger.OutcomeStatus(StatusFailed), Delivery: ledger.NotSent}); serr != nil {
			return nil, s.ledgerFailure(serr, ledger.NotSent)
		}
		return nil, s.ledgerOutcome(err)
	}
	call.started = true
	return call, nil
}

// endCall settles a model call with its response or error, emits
// model.finished and returns the outcome the failure implies (nil when the
// call succeeded).
func (s *step) endCall(call *modelCall, resp *ModelResponse, err error, sinkErr *Outcome, route *RouteAttempt) *Outcome {
	t := s.t
	defer call.span.End()
	if text, masked := call.text.Flush(); text != "" && sinkErr == nil {
		// What the masker held back, as the stream ended.
		if o := s.emitDelta(text, masked); o != nil {
			sinkErr = o
			if err == nil {
				err = errSink
			}
		}
	}
	settle := ledger.ModelSettlement{Status: ledger.OutcomeStatus(StatusCompleted), Delivery: ledger.ResponseReceived}
	var outcome *Outcome
	if err != nil {
		call.span.SetStatus(codes.Error, "model call failed")
		var me *ModelError
		switch {
		case sinkErr != nil:
			outcome = sinkErr
			settle.Status, settle.Error = ledger.OutcomeStatus(StatusFailed), ledger.FailEventSinkIO
		case s.ctx.Err() != nil:
			outcome = s.interrupted()
			settle.Status, settle.Delivery = ledger.OutcomeStatus(outcome.Status), ledger.MayHaveBeenSent
		case errors.As(err, &me):
			outcome = &Outcome{Status: StatusFailed, Code: string(me.Code), Delivery: string(me.Delivery)}
			settle.Status, settle.Delivery, settle.Error = ledger.OutcomeStatus(StatusFailed), me.Delivery, me.Code
		default:
			outcome = &Outcome{Status: StatusFailed, Code: string(ledger.FailProviderTransport), Delivery: string(ledger.MayHaveBeenSent)}
			settle.Status, settle.Delivery, settle.Error = ledger.OutcomeStatus(StatusFailed), ledger.MayHaveBeenSent, ledger.FailProviderTransport
		}
		if route != nil && route.Delivery != nil && sinkErr == nil && s.ctx.Err() == nil {
			settle.Delivery = ledger.Delivery(*route.Delivery)
		}
	} else if resp.UsageReported {
		settle.Reported = true
		settle.Usage = ledger.Usage{InputTokens: countOf(resp.Usage.InputTokens), OutputTokens: countOf(resp.Usage.OutputTokens),
			CacheReadTokens: countOf(resp.Usage.CacheReadTokens), CacheWriteTokens: countOf(resp.Usage.CacheWriteTokens)}
		if resp.Usage.CostMicroUSD != nil {
			settle.CostReported, settle.CostMicroUSD = true, *resp.Usage.CostMicroUSD
		}
	}
	if serr := t.root.SettleModelCall(s.ctx, s.agent, call.id, settle); serr != nil && outcome == nil {
		outcome = s.ledgerOutcome(serr)
	}
	if acc, aerr := t.root.Accounting(s.agent); aerr == nil {
		s.usage = acc.Usage
	}
	out := call.outBytes
	fin := EventData{Type: EventModelFinished, Status: string(settle.Status), OutputBytes: &out, ModelRoute: route}
	if resp != nil {
		fin.FinishReason = resp.FinishReason
		if resp.UsageReported {
			fin.Usage = usageOf(settle.Usage)
		}
	}
	if o := s.emit(fin); o != nil && outcome == nil {
		outcome = o
	}
	return outcome
}

// modelTurn runs one logical model operation: one ledger call, or one per
// attempt when the model is a route that falls back.
func (s *step) modelTurn() (*ModelResponse, *Outcome) {
	r := s.t.rt
	req := &ModelRequest{Instructions: r.opts.Instructions, Messages: s.history, Tools: s.defs, MaxOutputTokens: r.opts.MaxOutputTokens,
		turn: s.histTurns + 1}
	var current *modelCall
	var sinkErr, failed *Outcome
	emit := func(delta string) error {
		if delta == "" {
			return nil
		}
		var masked int
		if current != nil {
			current.outBytes += uint64(len(delta))
			if delta, masked = current.text.WriteString(delta); delta == "" {
				return nil
			}
		} else {
			delta, masked = r.opts.secrets.MaskString(delta)
		}
		if o := s.emitDelta(delta, masked); o != nil {
			sinkErr = o
			return errSink
		}
		return nil
	}
	var resp *ModelResponse
	var err error
	if rm, ok := r.opts.Model.(RoutedModel); ok {
		if s.route == nil {
			s.route = &RouteSession{}
		}
		s.route.BeginAttempt = func(ctx context.Context, a RouteAttempt) error {
			call, o := s.beginCall(ctx, a.Provider, a.Model, &a, req)
			if o != nil {
				failed = o
				return errRouteStopped
			}
			current = call
			return nil
		}
		s.route.EndAttempt = func(_ context.Context, a RouteAttempt, resp *ModelResponse, err error) {
			if current == nil {
				return
			}
			o := s.endCall(current, resp, err, sinkErr, &a)
			current = nil
			if err == nil && o != nil {
				failed = o
			}
		}
		resp, err = rm.GenerateRouted(s.ctx, s.route, req, emit)
		if failed != nil {
			return nil, failed
		}
		if err != nil {
			return nil, s.failureOutcome(err, sinkErr)
		}
	} else {
		call, o := s.beginCall(s.ctx, s.modelInfo.Provider, s.modelInfo.Model, nil, req)
		if o != nil {
			return nil, o
		}
		current = call
		resp, err = r.opts.Model.Generate(s.ctx, req, emit)
		if o := s.endCall(call, resp, err, sinkErr, nil); o != nil {
			return nil, o
		}
	}
	s.addHistory(Message{Role: RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls})
	return resp, nil
}

// failureOutcome is the task outcome of a failed model operation.
func (s *step) failureOutcome(err error, sinkErr *Outcome) *Outcome {
	var me *ModelError
	switch {
	case sinkErr != nil:
		return sinkErr
	case s.ctx.Err() != nil:
		return s.interrupted()
	case errors.As(err, &me):
		return &Outcome{Status: StatusFailed, Code: string(me.Code), Delivery: string(me.Delivery)}
	}
	return &Outcome{Status: StatusFailed, Code: string(ledger.FailProviderTransport), Delivery: string(ledger.MayHaveBeenSent)}
}

var errRouteStopped = errors.New("pablo: route stopped by the ledger")

var errSink = errors.New("pablo: event sink failed")

// maxStreamedOutput bounds the live output one tool call streams as
// tool.output events.
const maxStreamedOutput = 64 << 10

// liveCall is the tool call whose live output streams now. Tools run one at
// a time, so one per task suffices; the task context carries streamOutput
// once, instead of a closure per call.
type liveCall struct {
	id, name string
	streamed int
	// streams names the streams seen so far; outMasks[i] masks streams[i].
	streams  [maxLiveStreams]string
	nstreams int
	// cut is set once the bound dropped output: what the maskers hold
	// back then may be the start of a secret whose rest was dropped.
	cut bool
	// failed is the outcome of the first tool.output event the ledger or
	// the sink refused: the call ends the task once it returns.
	failed *Outcome
}

// streamOutput emits a tool's live output as tool.output events, bounded per
// call; the final result still carries everything the tool captured.
func (s *step) streamOutput(stream string, chunk []byte) {
	l := &s.live
	if l.id == "" || len(chunk) == 0 {
		return
	}
	if l.streamed >= maxStreamedOutput {
		l.cut = true
		return
	}
	if len(chunk) > maxStreamedOutput-l.streamed {
		chunk = chunk[:maxStreamedOutput-l.streamed]
		l.cut = true
	}
	l.streamed += len(chunk)
	if l.failed != nil {
		return
	}
	var text string
	var masked int
	if m := s.outMask(stream); m != nil {
		text, masked = m.Write(chunk)
	} else {
		text, masked = s.t.rt.opts.secrets.MaskString(string(chunk))
	}
	if text != "" {
		l.failed = s.emit(EventData{Type: EventToolOutput, CallID: l.id, Name: l.name, Stream: stream, Text: text, Masked: masked})
	}
}

// maxLiveStreams is how many streams of one call are masked across their
// chunks (stdout, stderr, progress); the chunks of any further stream are
// masked one by one.
const maxLiveStreams = 4

// outMask returns the masker of a stream of the live call.
func (s *step) outMask(stream string) *redact.Stream {
	l := &s.live
	for i := range l.nstreams {
		if l.streams[i] == stream {
			return &s.outMasks[i]
		}
	}
	if l.nstreams == maxLiveStreams {
		return nil
	}
	m := &s.outMasks[l.nstreams]
	m.Reset(s.t.rt.opts.secrets)
	l.streams[l.nstreams] = stream
	l.nstreams++
	return m
}

// flushOutput emits what the live call's maskers held back, as its streams
// end with the call.
func (s *step) flushOutput() {
	l := &s.live
	for i := range l.nstreams {
		var text string
		var masked int
		if l.cut {
			text, masked = s.outMasks[i].Cut()
		} else {
			text, masked = s.outMasks[i].Flush()
		}
		if text != "" && l.failed == nil {
			l.failed = s.emit(EventData{Type: EventToolOutput, CallID: l.id, Name: l.name, Stream: l.streams[i], Text: text, Masked: masked})
		}
	}
}

func countOf(p *uint64) ledger.Count {
	if p == nil {
		return ledger.UnknownCount()
	}
	return ledger.Known(*p)
}

// requestBytes measures a request: instructions, messages and tool
// descriptors. It walks every message.
func requestBytes(req *ModelRequest) uint64 {
	n := uint64(len(req.Instructions))
	for i := range req.Messages {
		n += messageBytes(&req.Messages[i])
	}
	return n + toolDefsBytes(req.Tools)
}

// messageBytes is one message's part of requestBytes.
func messageBytes(m *Message) uint64 {
	n := len(m.Content) + len(m.ToolCallID) + 16
	for _, c := range m.ToolCalls {
		n += len(c.ID) + len(c.Name) + len(c.Arguments)
	}
	return uint64(n)
}

func toolDefsBytes(defs []ToolDef) uint64 {
	n := 0
	for _, d := range defs {
		n += len(d.Name) + len(d.Description) + len(d.Parameters)
	}
	return uint64(n)
}

// addHistory appends to the task's history, which only ever grows, and
// keeps its running measure, so that measuring a request costs the same at
// the last turn as at the first.
func (s *step) addHistory(ms ...Message) {
	for i := range ms {
		s.histBytes += messageBytes(&ms[i])
		if ms[i].Role == RoleAssistant {
			s.histTurns++
		}
	}
	s.history = append(s.history, ms...)
}

// requestBytes is requestBytes(req) from the running measure when req holds
// the task's history, as every request the loop makes does; any other
// request is walked (and counted in Task.historyWalks).
func (s *step) requestBytes(req *ModelRequest) uint64 {
	h := s.history
	if len(req.Messages) != len(h) || (len(h) > 0 && &req.Messages[0] != &h[0]) {
		s.t.historyWalks++
		return requestBytes(req)
	}
	if len(req.Tools) != len(s.toolDefs) || (len(req.Tools) > 0 && &req.Tools[0] != &s.toolDefs[0]) {
		s.toolDefs, s.defsBytes = req.Tools, toolDefsBytes(req.Tools)
	}
	return uint64(len(req.Instructions)) + s.histBytes + s.defsBytes
}

// toolCall decides, admits, executes, records and retains one proposed call.
func (s *step) toolCall(call ToolCall) *Outcome {
	t, r := s.t, s.t.rt
	id, known := s.byWire[call.Name]
	if !known {
		if cand := authority.ID(call.Name); s.owner[cand] != nil {
			id, known = cand, true
		}
	}
	args := call.Arguments
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	digest := sha256Tag(args)
	lc := ledger.ToolCall{ID: call.ID, Name: string(id), ArgumentsDigest: digest, InputBytes: uint64(len(args))}
	if _, n := r.opts.secrets.MaskString(lc.ID); n > 0 {
		// The model wrote the ID: one holding a secret is recorded under
		// an ID of the loop's own (the model still sees its own).
		lc.ID = ""
	}
	if lc.ID == "" {
		lc.ID = "call_" + strconv.FormatUint(uint64(len(s.history)), 10)
	}
	if !known {
		// A name outside the admitted catalog: a model misselection. A tool
		// some layer kept out is recorded with the decision that did; any
		// other name is the mandatory tool_unavailable denial.
		if d, listed := s.refused[call.Name]; listed {
			lc.Name = call.Name
			if w, isWire := s.wireID(call.Name); isWire {
				lc.Name = w
			}
			return s.deny(lc, d, unavailableRule(d))
		}
		// The model wrote the name: it is recorded masked, then bounded.
		lc.Name = textx.Shorten(r.opts.secrets.String(call.Name), 256)
		if !utf8.ValidString(lc.Name) {
			lc.Name = "invalid"
		}
		d := authority.Decision{Layer: authority.LayerConfiguration, RuleID: authority.RuleToolUnavailable, Reason: "the tool is not in the admitted catalog"}
		return s.deny(lc, d, d.RuleID)
	}
	admitted, err := decideCall(s.ctx, s.contracts, s.owner[id], authority.Call{ID: lc.ID, Tool: id, Arguments: args})
	if err == nil && !admitted.Allowed {
		// The tool's own checks (a path, a command) deny the call before
		// it is admitted.
		return s.deny(lc, admitted, admitted.RuleID)
	}
	if err != nil {
		ce := contractError(err)
		switch ce.Kind {
		case authority.ContractUnknownTool, authority.ContractUnauthorizedResource:
			d := authority.Decision{Layer: authority.LayerConfiguration, RuleID: authority.RuleToolUnavailable}
			if ce.Decision != nil {
				d = *ce.Decision
			}
			return s.deny(lc, d, d.RuleID)
		default:
			// The authority admits the tool; its contract refused the
			// arguments, as the settlement says.
			lc.Decision = ledgerDecision(r.opts.Authority.Decide(authority.Request{Capability: id}))
			if err := t.root.AdmitToolCall(s.ctx, s.agent, lc); err != nil {
				return s.ledgerOutcome(err)
			}
			fail := &Outcome{Status: StatusFailed, Code: string(ledger.FailInvalidToolArguments), Delivery: string(ledger.NotSent)}
			return s.settleUnsent(lc.ID, ledger.ToolInvalidArguments, string(ce.Kind), fail)
		}
	}
	lc.Decision = ledgerDecision(admitted)
	if err := t.root.AdmitToolCall(s.ctx, s.agent, lc); err != nil {
		return s.ledgerOutcome(err)
	}
	if o := s.emitToolStarted(lc.ID, string(id), args); o != nil {
		return s.settleUnsent(lc.ID, ledger.ToolEventSinkFailed, "", o)
	}
	ctx, span := r.startSpan(s.ctx, "execute_tool")
	if span.IsRecording() {
		span.SetAttributes(attribute.String("gen_ai.tool.name", string(id)))
	}
	if err := t.root.Dispatch(ctx, s.agent, lc.ID); err != nil {
		span.End()
		return s.settleUnsent(lc.ID, ledger.ToolAdmissionFailed, "", s.ledgerOutcome(err))
	}
	s.live = liveCall{id: lc.ID, name: string(id)}
	res := s.owner[id].Call(ctx, authority.Call{ID: lc.ID, Tool: id, Arguments: args})
	// A capture bound that stopped the tool cut its streams too.
	s.live.cut = s.live.cut || res.Status == ledger.ToolOutputLimit
	s.flushOutput()
	streamFailed := s.live.failed
	s.live = liveCall{}
	if res.Terminal() {
		span.SetStatus(codes.Error, string(res.Status))
	}
	span.End()
	result, masked := s.resultJSON(res)
	settle := ledger.ToolSettlement{Status: res.Status, Delivery: res.Delivery, OutputBytes: uint64(len(result)), Error: string(res.Code)}
	if settle.Delivery == "" {
		settle.Delivery = ledger.ResponseReceived
	}
	if res.Status == ledger.ToolPolicyDenied {
		// The tool denied the call when it ran: record what decided.
		settle.Decision = res.Decision
		if settle.Decision.Layer == "" {
			settle.Decision = ledger.Decision{Layer: string(id), RuleID: res.Rule, Reason: "denied by the tool"}
		}
		settle.Decision.Allowed = false
	}
	ref, putErr := t.root.PutResult(s.ctx, json.RawMessage(result))
	if putErr == nil {
		settle.Result = ref
	}
	if err := t.root.SettleToolCall(s.ctx, s.agent, lc.ID, settle); err != nil {
		var le *ledger.LimitError
		if errors.As(err, &le) {
			if o := s.emit(EventData{Type: EventToolFinished, CallID: lc.ID, Name: string(id), Result: json.RawMessage(`{"status":"output_limit","policy_rule":null,"shell":null}`)}); o != nil {
				return o
			}
		}
		return s.ledgerFailure(err, settle.Delivery)
	}
	if putErr != nil {
		return s.ledgerFailure(putErr, settle.Delivery)
	}
	if streamFailed != nil {
		return streamFailed
	}
	if o := s.emitToolFinished(lc.ID, string(id), result, masked); o != nil {
		return o
	}
	if res.Terminal() {
		return s.toolOutcome(res)
	}
	s.addHistory(Message{Role: RoleTool, ToolCallID: call.ID, Content: string(result)})
	return nil
}

// contractError is the contract's rejection; anything else the contract
// could return is a failed check too.
func contractError(err error) *authority.ContractError {
	var ce *authority.ContractError
	if errors.As(err, &ce) {
		return ce
	}
	return &authority.ContractError{Kind: authority.ContractInvalidArguments}
}

// deny records a denied call with the decision that denied it and returns
// the policy_denied outcome naming rule: a denial is terminal.
func (s *step) deny(lc ledger.ToolCall, d authority.Decision, rule string) *Outcome {
	lc.Decision = ledger.Decision{Allowed: false, Layer: d.Layer, RuleID: d.RuleID, Reason: d.Reason}
	if err := s.t.root.AdmitToolCall(s.ctx, s.agent, lc); err != nil {
		return s.ledgerOutcome(err)
	}
	return s.settleUnsent(lc.ID, ledger.ToolPolicyDenied, d.RuleID, &Outcome{Status: StatusPolicyDenied, Rule: ruleOf(rule)})
}

// settleUnsent settles a tool call that never left the process and returns
// o, the outcome that ended it, or the ledger's failure when the
// settlement is refused: a call the ledger still holds open would keep the
// task from its terminal record.
func (s *step) settleUnsent(callID string, status ledger.ToolStatus, code string, o *Outcome) *Outcome {
	err := s.t.root.SettleToolCall(s.ctx, s.agent, callID, ledger.ToolSettlement{Status: status, Delivery: ledger.NotSent, Error: code})
	if err != nil {
		return s.ledgerFailure(err, ledger.NotSent)
	}
	return o
}

// wireID is the capability ID a refused tool's wire name stands for.
func (s *step) wireID(name string) (string, bool) {
	for _, c := range s.catalogs {
		for _, spec := range c.Tools() {
			if wireName(spec.ID) == name {
				return string(spec.ID), true
			}
		}
		if h, ok := c.(interface{ Health() []mcp.Health }); ok {
			for _, srv := range h.Health() {
				for _, ts := range srv.Tools {
					if ts.Alias == name && ts.ID != "" {
						return string(ts.ID), true
					}
				}
			}
		}
	}
	return "", false
}

// unavailableRule is the outcome rule of a call to a tool some layer kept
// out of the catalog: the deciding rule, except that an MCP catalog's own
// refusal (a drifted pin, task-required execution, a bound) is the
// mandatory tool_unavailable.
func unavailableRule(d authority.Decision) string {
	if strings.HasPrefix(d.RuleID, "builtin.mcp.mcp_") {
		return authority.RuleToolUnavailable
	}
	return d.RuleID
}

// resultJSON is the ToolResult object the model and the event stream see:
// status, policy_rule and shell, plus the catalog's payload keys (a payload
// key of the same name replaces the default). Keys are written sorted, so the
// result is canonical JSON as the ledger stores it. Secrets are masked in
// the decoded text of every string before anything is recorded or shown to
// the model, however the JSON escaped them; masked counts them, with those
// the catalog masked itself.
func (s *step) resultJSON(res ledger.ToolResult) ([]byte, int) {
	out, isMap := res.Output.(map[string]any)
	if !isMap && res.Output != nil {
		out = map[string]any{"output": res.Output}
	}
	var room [16]string
	keys := room[:0]
	for k := range out {
		if k != "status" {
			keys = append(keys, k)
		}
	}
	for _, k := range [...]string{"policy_rule", "shell", "status"} {
		if _, ok := out[k]; !ok || k == "status" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	buf := append(s.scratch[:0], '{')
	for i, k := range keys {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = jsonx.AppendString(buf, k)
		buf = append(buf, ':')
		v, inPayload := out[k]
		switch {
		case k == "status":
			buf = jsonx.AppendString(buf, string(res.Status))
		case inPayload:
			buf = appendJSONValue(buf, v)
		case k == "policy_rule" && res.Rule != "":
			buf = appendJSONValue(buf, ruleOf(res.Rule))
		default:
			buf = append(buf, "null"...)
		}
	}
	buf = append(buf, '}')
	if cap(buf) <= maxResultScratch {
		s.scratch = buf[:0]
	}
	masked, maskedN := s.t.rt.opts.secrets.MaskJSON(buf)
	if &masked[0] == &buf[0] {
		// The result is kept (history, events, ledger) at its own size,
		// not in a buffer sized for the largest result so far.
		masked = bytes.Clone(masked)
	}
	return masked, maskedN + res.Masked
}

// maxResultScratch bounds the working buffer a step keeps between tool
// results.
const maxResultScratch = 16 << 10

// appendJSONValue appends v encoded as JSON without HTML escaping, or null
// when it cannot be encoded.
func appendJSONValue(buf []byte, v any) []byte {
	w := bytes.NewBuffer(buf)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return append(buf, "null"...)
	}
	out := w.Bytes()
	return out[:len(out)-1] // Encode adds a newline
}

// toolOutcome maps a terminal tool status to the task outcome.
func (s *step) toolOutcome(res ledger.ToolResult) *Outcome {
	switch res.Status {
	case ledger.ToolPolicyDenied:
		return &Outcome{Status: StatusPolicyDenied, Rule: ruleOf(res.Rule)}
	case ledger.ToolWorkLimit, ledger.ToolOutputLimit:
		limit := res.Limit
		if limit == "" {
			limit = ledger.LimitToolOutputBytes
		}
		return &Outcome{Status: StatusLimitExceeded, Limit: string(limit)}
	case ledger.ToolTimedOut:
		return &Outcome{Status: StatusTimedOut}
	case ledger.ToolCancelled:
		if o := s.interrupted(); o != nil {
			return o
		}
		return &Outcome{Status: StatusCancelled}
	case ledger.ToolCleanupFailed:
		return &Outcome{Status: StatusFailed, Code: string(ledger.FailToolCleanup), Delivery: string(ledger.ResponseReceived)}
	case ledger.ToolInvalidArguments:
		return &Outcome{Status: StatusFailed, Code: string(ledger.FailInvalidToolArguments), Delivery: string(ledger.NotSent)}
	}
	code := res.Code
	if code == "" {
		code = ledger.FailToolExecution
	}
	d := res.Delivery
	if d == "" {
		d = ledger.ResponseReceived
	}
	return &Outcome{Status: StatusFailed, Code: string(code), Delivery: string(d)}
}

// ledgerFailure is ledgerOutcome for a ledger failure after the call it
// concerns reached delivery d: a store or state failure is the task's
// failure with that delivery.
func (s *step) ledgerFailure(err error, d ledger.Delivery) *Outcome {
	o := s.ledgerOutcome(err)
	if o.Status == StatusFailed && o.Code == string(ledger.FailEventSinkIO) {
		o.Delivery = string(d)
	}
	return o
}

// ledgerOutcome maps a refused admission or a ledger failure to an outcome.
func (s *step) ledgerOutcome(err error) *Outcome {
	var le *ledger.LimitError
	switch {
	case errors.As(err, &le) && le.Kind == ledger.LimitDuration:
		return &Outcome{Status: StatusTimedOut}
	case errors.As(err, &le) && le.NoBound:
		return &Outcome{Status: StatusFailed, Code: string(ledger.FailAccountingBoundViolated), Delivery: string(ledger.NotSent)}
	case errors.As(err, &le):
		return &Outcome{Status: StatusLimitExceeded, Limit: string(le.Kind)}
	case errors.Is(err, ledger.ErrBoundViolated):
		return &Outcome{Status: StatusFailed, Code: string(ledger.FailAccountingBoundViolated), Delivery: string(ledger.ResponseReceived)}
	case s.ctx.Err() != nil:
		return s.interrupted()
	}
	return &Outcome{Status: StatusFailed, Code: string(ledger.FailEventSinkIO), Delivery: string(ledger.NotSent)}
}

// emit appends an event to the ledger, publishes it and hands it to the
// host sink.
func (s *step) emit(data EventData) *Outcome {
	if !s.payloads {
		return s.publish(nil, "", &data)
	}
	payload, err := json.Marshal(&data)
	if err != nil {
		return &Outcome{Status: StatusFailed, Code: string(ledger.FailEventSinkIO), Delivery: string(ledger.NotSent)}
	}
	return s.publish(payload, "", &data)
}

// emitToolStarted and emitToolFinished build their payloads by hand: they
// are on the path of every tool call. Like emit, they build none for a
// ledger that records no payload.
//
// The arguments are recorded with their secrets masked; the tool runs with
// the arguments the model wrote.
func (s *step) emitToolStarted(id, name string, args json.RawMessage) *Outcome {
	args, masked := s.t.rt.opts.secrets.MaskJSON(args)
	var buf []byte
	if s.payloads {
		n := 84 + len(id) + len(name) + len(args)
		buf = s.carve(n)
		buf = append(buf, `{"type":"tool.started","call":{"id":`...)
		buf = jsonx.AppendString(buf, id)
		buf = append(buf, `,"name":`...)
		buf = jsonx.AppendString(buf, name)
		buf = append(buf, `,"arguments":`...)
		buf = append(buf, args...)
		buf = append(buf, '}')
		buf = appendMasked(buf, masked)
		buf = append(buf, '}')
		s.used(buf, n)
	}
	// One allocation holds the event and its call.
	ev := &struct {
		data EventData
		call EventCall
	}{data: EventData{Type: EventToolStarted, Masked: masked}, call: EventCall{ID: id, Name: name, Arguments: args}}
	ev.data.Call = &ev.call
	return s.publish(buf, "", &ev.data)
}

func (s *step) emitToolFinished(callID, name string, result []byte, masked int) *Outcome {
	var buf []byte
	if s.payloads {
		n := 84 + len(callID) + len(name) + len(result)
		buf = s.carve(n)
		buf = append(buf, `{"type":"tool.finished","call_id":`...)
		buf = jsonx.AppendString(buf, callID)
		buf = append(buf, `,"name":`...)
		buf = jsonx.AppendString(buf, name)
		buf = append(buf, `,"result":`...)
		buf = append(buf, result...)
		buf = appendMasked(buf, masked)
		buf = append(buf, '}')
		s.used(buf, n)
	}
	return s.publish(buf, "", &EventData{Type: EventToolFinished, CallID: callID, Name: name, Result: result, Masked: masked})
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
func (s *step) emitDelta(text string, masked int) *Outcome {
	if masked > 0 {
		return s.emit(EventData{Type: EventTextDelta, Text: text, Masked: masked})
	}
	var buf []byte
	if s.payloads {
		n := len(text) + len(`{"type":"assistant.text.delta","text":""}`)
		buf = s.carve(n)
		buf = append(buf, `{"type":"assistant.text.delta","text":`...)
		buf = jsonx.AppendString(buf, text)
		buf = append(buf, '}')
		s.used(buf, n)
	}
	return s.publish(buf, text, nil)
}

// carve returns an empty buffer with room for n bytes from the task's
// payload slab: the ledger keeps payloads as they are and nothing writes to
// them again, so one allocation serves many deltas.
func (s *step) carve(n int) []byte {
	if cap(s.slab)-len(s.slab) < n {
		s.slab = make([]byte, 0, max(n, min(2*cap(s.slab), maxSlab), minSlab))
	}
	start := len(s.slab)
	return s.slab[start : start : start+n]
}

// used takes buf, carved with room for n bytes, out of the slab, unless
// it outgrew its room and was moved.
func (s *step) used(buf []byte, n int) {
	if len(buf) <= n {
		s.slab = s.slab[:len(s.slab)+len(buf)]
	}
}

// The payload slab grows from minSlab to maxSlab bytes.
const (
	minSlab = 1 << 10
	maxSlab = 64 << 10
)

// publish appends one event to the ledger, then to the task's log, then
// hands it to the host sink. data is nil for a text delta, whose text is
// all it carries.
func (s *step) publish(payload []byte, text string, data *EventData) *Outcome {
	typ := EventTextDelta
	if data != nil {
		typ = data.Type
	}
	st, err := s.t.log.add(func() (ledger.Stamp, error) {
		ev, err := s.t.root.Append(s.ctx, s.agent, string(typ), payload)
		return stampOf(ev), err
	}, s.hdr, text, data)
	if st.RootSeq != 0 {
		s.t.wake()
	}
	if err != nil {
		return s.ledgerOutcome(err)
	}
	if sink := s.t.rt.opts.Sink; sink != nil {
		// Built here rather than through eventEntry.event: on this path
		// every copy counts (BenchmarkEventLatency, about 15 ns).
		e := Event{SchemaVersion: EventSchemaVersion, Seq: st.Seq, RootSeq: st.RootSeq, TimestampUnixMicros: st.UnixMicros,
			RunID: s.hdr.runID, SessionID: s.hdr.runID, TraceID: s.hdr.traceID, Agent: s.hdr.agent}
		if data != nil {
			e.EventData = *data
		} else {
			e.Type, e.Text = EventTextDelta, text
		}
		if err := sink(e); err != nil {
			return &Outcome{Status: StatusFailed, Code: string(ledger.FailEventSinkIO), Delivery: string(ledger.ResponseReceived)}
		}
	}
	if s.t.log.low.Load() {
		// Between events, not inside one's delivery.
		s.t.log.grow()
	}
	return nil
}

// finish settles the task: the terminal event, the ledger's outcome record
// and the task object. A terminal record the ledger refuses is not
// dropped: the task fails with the ledger's code, and the failure is
// recorded instead when the ledger still can.
func (t *Task) finish(s *step, o *Outcome) {
	acc, _ := t.root.Accounting(s.agent)
	var en eventEntry
	record := func() error {
		data := &EventData{Type: EventRunFinished, Outcome: o, Accounting: &acc}
		var payload []byte
		if s.payloads {
			payload, _ = json.Marshal(data)
		}
		st, err := t.log.add(func() (ledger.Stamp, error) {
			ev, err := t.root.Finish(context.WithoutCancel(s.ctx), s.agent, ledger.Finish{Outcome: o.ledgerOutcome(), Payload: payload, OutputBytes: outputBytes(o)})
			return stampOf(ev), err
		}, s.hdr, "", data)
		if st.RootSeq != 0 {
			en = eventEntry{rootSeq: st.RootSeq, seq: st.Seq, micros: st.UnixMicros, hdr: s.hdr, data: data}
		}
		return err
	}
	err := record()
	var le *ledger.LimitError
	if errors.As(err, &le) && o.Status == StatusCompleted {
		// limit_exceeded carries no output to bound, so this is not
		// refused for the same reason.
		o = &Outcome{Status: StatusLimitExceeded, Limit: string(le.Kind)}
		err = record()
	}
	if err != nil {
		stamped := en.data != nil
		o = &Outcome{Status: StatusFailed, Code: string(ledger.FailEventSinkIO), Delivery: string(ledger.NotSent)}
		if !stamped {
			// Record the failure instead. A store that failed keeps
			// failing, and then recovery reports the task as interrupted,
			// which is the truth; the task object says why.
			_ = record()
		}
		// Otherwise the terminal event was stamped but not made durable:
		// the sink gets it as stamped, the task object the failure.
	}
	if en.data != nil {
		t.wake()
	}
	if sink := t.rt.opts.Sink; sink != nil && en.data != nil {
		// The task is over: a failing sink has nothing left to stop.
		_ = sink(en.event())
	}
	id := t.root.ID()
	trace := s.traceID
	obj := &TaskObject{SchemaVersion: EventSchemaVersion, RunID: &id, SessionID: &id, TraceID: &trace, Outcome: o, Accounting: &acc}
	if s.check != nil {
		rec, rep := s.check.records()
		obj.OutputValidation, _ = json.Marshal(rec)
		obj.OutputRepair = rep
	}
	t.settle(obj)
}

// stampOf is the stamp of an event the ledger appended: zero when it
// appended none.
func stampOf(ev ledger.Event) ledger.Stamp {
	if ev.RootSeq == 0 {
		return ledger.Stamp{}
	}
	return ledger.Stamp{RootSeq: ev.RootSeq, Seq: ev.Seq, UnixMicros: ev.Time.UnixMicro()}
}

func outputBytes(o *Outcome) uint64 {
	if o.Output == nil {
		return 0
	}
	return uint64(len(*o.Output))
}
