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
	"github.com/pabloagent/pablo/internal/eventlog"
	"github.com/pabloagent/pablo/internal/jsonx"
	"github.com/pabloagent/pablo/internal/model"
	"github.com/pabloagent/pablo/internal/output"
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
	hdr      *eventlog.Header
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
	route     *routeSession
	check     *output.Check
	live      liveCall
	// outMasks mask the live output of the call that streams now, one
	// per stream (live.streams names them).
	outMasks [maxLiveStreams]redact.Stream
	slab     []byte // room for delta payloads, see carve
	scratch  []byte // resultJSON's working buffer, reused
	// payloads: the ledger records event payloads. A task's ledger
	// without a store (a private root) keeps no event record, so none
	// are built; a host's own ledger (RuntimeOptions.NewLedger) gets them.
	payloads bool
}

// run is the task's loop: model proposes → authority and contract validate
// → the executor acts → the observation is recorded → the ledger retains.
func (t *Task) run(ctx, caller context.Context) {
	r := t.rt
	s := newStep(t, ctx, caller)
	if d, ok := t.root.Deadline(s.agent); ok {
		var cancel context.CancelFunc
		s.ctx, cancel = context.WithDeadline(ctx, d)
		defer cancel()
	}
	ctx, span := r.tracer.Start(s.ctx, "invoke_agent", trace.WithAttributes(attribute.String("pablo.run_id", t.root.ID())))
	s.ctx = WithToolOutput(s.withGroupRecorder(ctx), s.streamOutput)
	s.traceID = traceIDOf(span, caller, t.root.ID())
	s.hdr.TraceID = s.traceID
	outcome := s.loop()
	span.SetAttributes(attribute.String("pablo.outcome", string(outcome.Status)))
	if outcome.Status != StatusCompleted {
		span.SetStatus(codes.Error, string(outcome.Status))
	}
	span.End()
	if err := closeAll(s.catalogs); err != nil && outcome.Status == StatusCompleted {
		outcome = &Outcome{Status: StatusFailed, Code: ledger.FailToolCleanup, Delivery: ledger.ResponseReceived}
	}
	t.finish(s, outcome)
}

// newStep is the loop state of task t before its first event: ctx is the
// task's own context, caller the one its host started it with.
func newStep(t *Task, ctx, caller context.Context) *step {
	s := &step{t: t, ctx: ctx, caller: caller, agent: t.root.RootAgentID(), modelInfo: t.rt.opts.Model.Info(), payloads: t.rt.opts.Store != nil || t.rt.opts.NewLedger != nil}
	s.hdr = &eventlog.Header{RunID: t.root.ID(), Agent: AgentRef{AgentID: s.agent, RootRunID: t.root.ID(), Kind: "root"}}
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
func (s *step) loop() *Outcome {
	if o := s.begin(); o != nil {
		return o
	}
	for {
		if o := s.turn(); o != nil {
			return o
		}
	}
}

// begin opens the task: run.started, the Skill activations, the catalogs,
// the output check and the history the first request carries.
func (s *step) begin() *Outcome {
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
	return nil
}

// turn runs one model turn and the tool calls it proposes. It returns the
// task's outcome, or nil when the loop goes on.
func (s *step) turn() *Outcome {
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
	return nil
}

// final settles a final answer: it validates it against the output schema
// when one is set, with at most one repair call, during which no tool may
// run.
func (s *step) final(text string) *Outcome {
	if s.check == nil {
		return s.completed(text)
	}
	if s.check.Validate(text) {
		s.addHistory(Message{Role: RoleUser, Content: s.check.Feedback()})
		defs := s.defs
		s.defs = nil
		resp, o := s.modelTurn()
		s.defs = defs
		if o != nil {
			s.check.Block()
			return o
		}
		if len(resp.ToolCalls) > 0 {
			s.check.Block()
			return &Outcome{Status: StatusFailed, Code: ledger.FailMalformedStream, Delivery: ledger.ResponseReceived}
		}
		text = resp.Text
		s.check.Validate(text)
	}
	if !s.check.Valid() {
		return &Outcome{Status: StatusFailed, Code: ledger.FailOutputValidationFailed, Delivery: ledger.ResponseReceived}
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
			return &Outcome{Status: StatusFailed, Code: ledger.FailToolStartup, Delivery: ledger.NotSent, Reason: reason}
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
		return &Outcome{Status: StatusFailed, Code: ledger.FailToolExecution, Delivery: ledger.NotSent}
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
		return &Outcome{Status: StatusLimitExceeded, Limit: ledger.LimitModelCalls}
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
	id, err := t.root.ReserveModelCall(s.ctx, s.agent, s.modelCallRecord(provider, model, route, req))
	if err != nil {
		return nil, s.ledgerOutcome(err)
	}
	call := &modelCall{id: id}
	call.text.Reset(r.opts.secrets)
	if o := s.emit(EventData{Type: EventModelStarted, Provider: provider, Model: model, ModelRoute: route}); o != nil {
		return nil, s.abandonCall(id, ledger.FailEventSinkIO, o)
	}
	_, call.span = r.startSpan(ctx, "chat")
	if call.span.IsRecording() {
		call.span.SetAttributes(attribute.String("gen_ai.request.model", model))
	}
	if err := t.root.Dispatch(s.ctx, s.agent, id); err != nil {
		call.span.End()
		return nil, s.abandonCall(id, "", s.ledgerOutcome(err))
	}
	call.started = true
	return call, nil
}

// modelCallRecord is the ledger's record of a model call about to be
// reserved: its route, the request's context bytes and the model's bounds.
func (s *step) modelCallRecord(provider, model string, route *RouteAttempt, req *ModelRequest) ledger.ModelCall {
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
	return mc
}

// abandonCall settles a reserved model call that was never sent, with the
// failure code code, and returns o, the outcome that stopped it, or the
// ledger's failure when the settlement is refused.
func (s *step) abandonCall(id string, code ledger.FailureCode, o *Outcome) *Outcome {
	settle := ledger.ModelSettlement{Status: StatusFailed, Delivery: ledger.NotSent, Error: code}
	if err := s.t.root.SettleModelCall(s.ctx, s.agent, id, settle); err != nil {
		return s.ledgerFailure(err, ledger.NotSent)
	}
	return o
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
	settle, outcome := s.modelResult(resp, err, sinkErr, route)
	if outcome != nil {
		call.span.SetStatus(codes.Error, "model call failed")
	}
	if serr := t.root.SettleModelCall(s.ctx, s.agent, call.id, settle); serr != nil && outcome == nil {
		outcome = s.ledgerOutcome(serr)
	}
	if acc, aerr := t.root.Accounting(s.agent); aerr == nil {
		s.usage = acc.Usage
	}
	if o := s.emit(modelFinished(call, resp, settle, route)); o != nil && outcome == nil {
		outcome = o
	}
	return outcome
}

// modelResult is how the ledger settles a model call that answered resp
// or failed with err, and the task outcome a failure implies (nil when the
// call succeeded); sinkErr is set when the ledger or the host's sink
// refused one of its deltas.
func (s *step) modelResult(resp *ModelResponse, err error, sinkErr *Outcome, route *RouteAttempt) (ledger.ModelSettlement, *Outcome) {
	settle := ledger.ModelSettlement{Status: StatusCompleted, Delivery: ledger.ResponseReceived}
	if err == nil {
		if resp.UsageReported {
			settle.Reported = true
			settle.Usage = ledger.Usage{InputTokens: countOf(resp.Usage.InputTokens), OutputTokens: countOf(resp.Usage.OutputTokens),
				CacheReadTokens: countOf(resp.Usage.CacheReadTokens), CacheWriteTokens: countOf(resp.Usage.CacheWriteTokens)}
			if resp.Usage.CostMicroUSD != nil {
				settle.CostReported, settle.CostMicroUSD = true, *resp.Usage.CostMicroUSD
			}
		}
		return settle, nil
	}
	var outcome *Outcome
	var me *ModelError
	switch {
	case sinkErr != nil:
		outcome = sinkErr
		settle.Status, settle.Error = StatusFailed, ledger.FailEventSinkIO
	case s.ctx.Err() != nil:
		outcome = s.interrupted()
		settle.Status, settle.Delivery = outcome.Status, ledger.MayHaveBeenSent
	case errors.As(err, &me):
		outcome = &Outcome{Status: StatusFailed, Code: me.Code, Delivery: me.Delivery}
		settle.Status, settle.Delivery, settle.Error = StatusFailed, me.Delivery, me.Code
	default:
		outcome = &Outcome{Status: StatusFailed, Code: ledger.FailProviderTransport, Delivery: ledger.MayHaveBeenSent}
		settle.Status, settle.Delivery, settle.Error = StatusFailed, ledger.MayHaveBeenSent, ledger.FailProviderTransport
	}
	if route != nil && route.Delivery != nil && sinkErr == nil && s.ctx.Err() == nil {
		settle.Delivery = ledger.Delivery(*route.Delivery)
	}
	return settle, outcome
}

// modelFinished is the model.finished event of a call settled as settle.
func modelFinished(call *modelCall, resp *ModelResponse, settle ledger.ModelSettlement, route *RouteAttempt) EventData {
	out := call.outBytes
	fin := EventData{Type: EventModelFinished, Status: string(settle.Status), OutputBytes: &out, ModelRoute: route}
	if resp != nil {
		fin.FinishReason = resp.FinishReason
		if resp.UsageReported {
			fin.Usage = usageOf(settle.Usage)
		}
	}
	return fin
}

// modelTurn runs one logical model operation: one ledger call, or one per
// attempt when the model is a route that falls back. The response joins
// the history.
func (s *step) modelTurn() (*ModelResponse, *Outcome) {
	r := s.t.rt
	req := &ModelRequest{Instructions: r.opts.Instructions, Messages: s.history, Tools: s.defs, MaxOutputTokens: r.opts.MaxOutputTokens}
	model.SetTurn(req, s.histTurns+1)
	op := &modelOp{s: s, req: req}
	var resp *ModelResponse
	var o *Outcome
	if rm, ok := r.opts.Model.(routedModel); ok {
		resp, o = op.generateRouted(rm)
	} else {
		resp, o = op.generate()
	}
	if o != nil {
		return nil, o
	}
	s.addHistory(Message{Role: RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls})
	return resp, nil
}

// modelOp is one logical model operation in flight: its request, the
// ledger call its deltas belong to and what stopped it.
type modelOp struct {
	s       *step
	req     *ModelRequest
	current *modelCall // the call streaming now; nil between attempts
	sinkErr *Outcome   // the first delta the ledger or the sink refused
	failed  *Outcome   // the ledger stopped a route between attempts
}

// generate runs the operation as one call of a plain model.
func (op *modelOp) generate() (*ModelResponse, *Outcome) {
	s := op.s
	call, o := s.beginCall(s.ctx, s.modelInfo.Provider, s.modelInfo.Model, nil, op.req)
	if o != nil {
		return nil, o
	}
	op.current = call
	resp, err := s.t.rt.opts.Model.Generate(s.ctx, op.req, op.delta)
	if o := s.endCall(call, resp, err, op.sinkErr, nil); o != nil {
		return nil, o
	}
	return resp, nil
}

// generateRouted runs the operation on a route: the route's session
// begins and ends one ledger call per attempt.
func (op *modelOp) generateRouted(rm routedModel) (*ModelResponse, *Outcome) {
	s := op.s
	if s.route == nil {
		s.route = &routeSession{}
	}
	s.route.BeginAttempt = op.beginAttempt
	s.route.EndAttempt = op.endAttempt
	resp, err := rm.GenerateRouted(s.ctx, s.route, op.req, op.delta)
	if op.failed != nil {
		return nil, op.failed
	}
	if err != nil {
		return nil, s.failureOutcome(err, op.sinkErr)
	}
	return resp, nil
}

// beginAttempt begins the ledger call of one route attempt.
func (op *modelOp) beginAttempt(ctx context.Context, a RouteAttempt) error {
	call, o := op.s.beginCall(ctx, a.Provider, a.Model, &a, op.req)
	if o != nil {
		op.failed = o
		return errRouteStopped
	}
	op.current = call
	return nil
}

// endAttempt settles the ledger call of one route attempt.
func (op *modelOp) endAttempt(_ context.Context, a RouteAttempt, resp *ModelResponse, err error) {
	if op.current == nil {
		return
	}
	o := op.s.endCall(op.current, resp, err, op.sinkErr, &a)
	op.current = nil
	if err == nil && o != nil {
		op.failed = o
	}
}

// delta emits one text delta of the operation, masked as part of its
// call's stream.
func (op *modelOp) delta(delta string) error {
	if delta == "" {
		return nil
	}
	var masked int
	if op.current != nil {
		op.current.outBytes += uint64(len(delta))
		if delta, masked = op.current.text.WriteString(delta); delta == "" {
			return nil
		}
	} else {
		delta, masked = op.s.t.rt.opts.secrets.MaskString(delta)
	}
	if o := op.s.emitDelta(delta, masked); o != nil {
		op.sinkErr = o
		return errSink
	}
	return nil
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
		return &Outcome{Status: StatusFailed, Code: me.Code, Delivery: me.Delivery}
	}
	return &Outcome{Status: StatusFailed, Code: ledger.FailProviderTransport, Delivery: ledger.MayHaveBeenSent}
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
		return ledger.Count{Unknown: true}
	}
	return ledger.Count{N: *p}
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

// toolCall takes one proposed call down the path DESIGN.md draws, one
// stage at a time. Each stage takes the typed value the one before it
// produced and either produces its own or ends the task with an outcome,
// so nothing reaches a stage without passing every stage before it:
//
//	ToolCall ─resolve→ resolvedCall ─validate→ checkedCall ─admit→ admittedCall
//	  ─dispatch→ dispatchedCall ─observe→ observation ─retain→ nil, or the outcome
//
// It returns nil when the task goes on.
func (s *step) toolCall(call ToolCall) *Outcome {
	rc, o := s.resolve(call)
	if o != nil {
		return o
	}
	cc, o := s.validate(rc)
	if o != nil {
		return o
	}
	ac, o := s.admit(cc)
	if o != nil {
		return o
	}
	dc, o := s.dispatch(ac)
	if o != nil {
		return o
	}
	return s.retain(s.observe(dc))
}

// resolvedCall is a proposed call found in the admitted catalog: the
// capability its name stands for, the catalog that owns it, its arguments
// and the record the ledger keeps of it.
type resolvedCall struct {
	call  ToolCall // as the model wrote it: its result is returned under call.ID
	id    authority.ID
	owner ToolCatalog
	args  json.RawMessage // the model's arguments; {} when it wrote none
	rec   ledger.ToolCall // the ledger's record: ID, name, digest, size
}

// checkedCall is a resolved call its contract and its tool's own checks
// allow.
type checkedCall struct {
	resolvedCall
	decision authority.Decision
}

// admittedCall is a checked call the ledger admitted (charged against the
// ceilings) and whose tool.started event is out.
type admittedCall struct {
	checkedCall
}

// dispatchedCall is an admitted call the executor ran: the tool's result
// and the first live output event the ledger or the sink refused.
type dispatchedCall struct {
	admittedCall
	res          ledger.ToolResult
	streamFailed *Outcome
}

// observation is a dispatched call's result as the model, the events and
// the ledger see it, masked, and the settlement that records it.
type observation struct {
	dispatchedCall
	result []byte
	masked int
	settle ledger.ToolSettlement
}

// resolve names a proposed call: the capability its wire name stands for
// and the ledger record it is admitted or denied under. A name outside the
// admitted catalog is a model misselection: the call is recorded denied
// and the task ends.
func (s *step) resolve(call ToolCall) (resolvedCall, *Outcome) {
	r := s.t.rt
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
	rec := ledger.ToolCall{ID: call.ID, Name: string(id), ArgumentsDigest: sha256Tag(args), InputBytes: uint64(len(args))}
	if _, n := r.opts.secrets.MaskString(rec.ID); n > 0 {
		// The model wrote the ID: one holding a secret is recorded under
		// an ID of the loop's own (the model still sees its own).
		rec.ID = ""
	}
	if rec.ID == "" {
		rec.ID = "call_" + strconv.FormatUint(uint64(len(s.history)), 10)
	}
	if !known {
		return resolvedCall{}, s.denyUnknown(call.Name, rec)
	}
	return resolvedCall{call: call, id: id, owner: s.owner[id], args: args, rec: rec}, nil
}

// denyUnknown records the denial of a call to name, a tool outside the
// admitted catalog. A tool some layer kept out is recorded with the
// decision that did; any other name is the mandatory tool_unavailable
// denial.
func (s *step) denyUnknown(name string, rec ledger.ToolCall) *Outcome {
	if d, listed := s.refused[name]; listed {
		rec.Name = name
		if w, isWire := s.wireID(name); isWire {
			rec.Name = w
		}
		return s.deny(rec, d, unavailableRule(d))
	}
	// The model wrote the name: it is recorded masked, then bounded.
	rec.Name = textx.Shorten(s.t.rt.opts.secrets.String(name), 256)
	if !utf8.ValidString(rec.Name) {
		rec.Name = "invalid"
	}
	d := authority.Decision{Layer: authority.LayerConfiguration, RuleID: authority.RuleToolUnavailable, Reason: "the tool is not in the admitted catalog"}
	return s.deny(rec, d, d.RuleID)
}

// validate asks the contract and the owning catalog's own checks (a path,
// a command) whether the call may run. A denial or a contract rejection is
// recorded and ends the task.
func (s *step) validate(rc resolvedCall) (checkedCall, *Outcome) {
	d, err := decideCall(s.ctx, s.contracts, rc.owner, authority.Call{ID: rc.rec.ID, Tool: rc.id, Arguments: rc.args})
	if err != nil {
		return checkedCall{}, s.reject(rc, contractError(err))
	}
	if !d.Allowed {
		return checkedCall{}, s.deny(rc.rec, d, d.RuleID)
	}
	return checkedCall{resolvedCall: rc, decision: d}, nil
}

// reject records a call its contract rejected. An unknown tool or a
// resource outside the scope is a denial; arguments that do not fit the
// schema are the failure invalid_tool_arguments, under the authority's
// decision on the tool, which admits it.
func (s *step) reject(rc resolvedCall, ce *authority.ContractError) *Outcome {
	switch ce.Kind {
	case authority.ContractUnknownTool, authority.ContractUnauthorizedResource:
		d := authority.Decision{Layer: authority.LayerConfiguration, RuleID: authority.RuleToolUnavailable}
		if ce.Decision != nil {
			d = *ce.Decision
		}
		return s.deny(rc.rec, d, d.RuleID)
	}
	rec := rc.rec
	rec.Decision = s.t.rt.opts.Authority.Decide(authority.Request{Capability: rc.id})
	if err := s.t.root.AdmitToolCall(s.ctx, s.agent, rec); err != nil {
		return s.ledgerOutcome(err)
	}
	fail := &Outcome{Status: StatusFailed, Code: ledger.FailInvalidToolArguments, Delivery: ledger.NotSent}
	return s.settleUnsent(rec.ID, ledger.ToolInvalidArguments, string(ce.Kind), fail)
}

// admit records a checked call as admitted, which charges it against the
// ceilings, and emits tool.started. A refused admission ends the task
// before anything runs.
func (s *step) admit(cc checkedCall) (admittedCall, *Outcome) {
	rec := cc.rec
	rec.Decision = cc.decision
	if err := s.t.root.AdmitToolCall(s.ctx, s.agent, rec); err != nil {
		return admittedCall{}, s.ledgerOutcome(err)
	}
	if o := s.emitToolStarted(rec.ID, string(cc.id), cc.args); o != nil {
		return admittedCall{}, s.settleUnsent(rec.ID, ledger.ToolEventSinkFailed, "", o)
	}
	return admittedCall{checkedCall: cc}, nil
}

// dispatch marks an admitted call as leaving on the ledger and runs it on
// its catalog, inside an execute_tool span, streaming its live output.
func (s *step) dispatch(ac admittedCall) (dispatchedCall, *Outcome) {
	callID := ac.rec.ID
	ctx, span := s.t.rt.startSpan(s.ctx, "execute_tool")
	if span.IsRecording() {
		span.SetAttributes(attribute.String("gen_ai.tool.name", string(ac.id)))
	}
	if err := s.t.root.Dispatch(ctx, s.agent, callID); err != nil {
		span.End()
		return dispatchedCall{}, s.settleUnsent(callID, ledger.ToolAdmissionFailed, "", s.ledgerOutcome(err))
	}
	s.live = liveCall{id: callID, name: string(ac.id)}
	res := ac.owner.Call(ctx, authority.Call{ID: callID, Tool: ac.id, Arguments: ac.args})
	// A capture bound that stopped the tool cut its streams too.
	s.live.cut = s.live.cut || res.Status == ledger.ToolOutputLimit
	s.flushOutput()
	streamFailed := s.live.failed
	s.live = liveCall{}
	if res.Terminal() {
		span.SetStatus(codes.Error, string(res.Status))
	}
	span.End()
	return dispatchedCall{admittedCall: ac, res: res, streamFailed: streamFailed}, nil
}

// observe is the result of a dispatched call as it is recorded: its
// ToolResult object, masked, and its settlement.
func (s *step) observe(dc dispatchedCall) observation {
	res := dc.res
	result, masked := s.resultJSON(res)
	settle := ledger.ToolSettlement{Status: res.Status, Delivery: res.Delivery, OutputBytes: uint64(len(result)), Error: string(res.Code)}
	if settle.Delivery == "" {
		settle.Delivery = ledger.ResponseReceived
	}
	if res.Status == ledger.ToolPolicyDenied {
		// The tool denied the call when it ran: record what decided.
		settle.Decision = res.Decision
		if settle.Decision.Layer == "" {
			settle.Decision = authority.Decision{Layer: string(dc.id), RuleID: res.Rule, Reason: "denied by the tool"}
		}
		settle.Decision.Allowed = false
	}
	return observation{dispatchedCall: dc, result: result, masked: masked, settle: settle}
}

// retain stores the result, settles the call on the ledger and emits
// tool.finished. A terminal result ends the task; any other joins the
// history, and retain returns nil.
func (s *step) retain(ob observation) *Outcome {
	t, callID, name := s.t, ob.rec.ID, string(ob.id)
	settle := ob.settle
	ref, putErr := t.root.PutResult(s.ctx, json.RawMessage(ob.result))
	if putErr == nil {
		settle.Result = ref
	}
	if err := t.root.SettleToolCall(s.ctx, s.agent, callID, settle); err != nil {
		var le *ledger.LimitError
		if errors.As(err, &le) {
			if o := s.emit(EventData{Type: EventToolFinished, CallID: callID, Name: name, Result: json.RawMessage(`{"status":"output_limit","policy_rule":null,"shell":null}`)}); o != nil {
				return o
			}
		}
		return s.ledgerFailure(err, settle.Delivery)
	}
	if putErr != nil {
		return s.ledgerFailure(putErr, settle.Delivery)
	}
	if ob.streamFailed != nil {
		return ob.streamFailed
	}
	if o := s.emitToolFinished(callID, name, ob.result, ob.masked); o != nil {
		return o
	}
	if ob.res.Terminal() {
		return s.toolOutcome(ob.res)
	}
	s.addHistory(Message{Role: RoleTool, ToolCallID: ob.call.ID, Content: string(ob.result)})
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
	lc.Decision = authority.Decision{Allowed: false, Layer: d.Layer, RuleID: d.RuleID, Reason: d.Reason}
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
		return &Outcome{Status: StatusLimitExceeded, Limit: limit}
	case ledger.ToolTimedOut:
		return &Outcome{Status: StatusTimedOut}
	case ledger.ToolCancelled:
		if o := s.interrupted(); o != nil {
			return o
		}
		return &Outcome{Status: StatusCancelled}
	case ledger.ToolCleanupFailed:
		return &Outcome{Status: StatusFailed, Code: ledger.FailToolCleanup, Delivery: ledger.ResponseReceived}
	case ledger.ToolInvalidArguments:
		return &Outcome{Status: StatusFailed, Code: ledger.FailInvalidToolArguments, Delivery: ledger.NotSent}
	}
	code := res.Code
	if code == "" {
		code = ledger.FailToolExecution
	}
	d := res.Delivery
	if d == "" {
		d = ledger.ResponseReceived
	}
	return &Outcome{Status: StatusFailed, Code: code, Delivery: d}
}

// ledgerFailure is ledgerOutcome for a ledger failure after the call it
// concerns reached delivery d: a store or state failure is the task's
// failure with that delivery.
func (s *step) ledgerFailure(err error, d ledger.Delivery) *Outcome {
	o := s.ledgerOutcome(err)
	if o.Status == StatusFailed && o.Code == ledger.FailEventSinkIO {
		o.Delivery = d
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
		return &Outcome{Status: StatusFailed, Code: ledger.FailAccountingBoundViolated, Delivery: ledger.NotSent}
	case errors.As(err, &le):
		return &Outcome{Status: StatusLimitExceeded, Limit: le.Kind}
	case errors.Is(err, ledger.ErrBoundViolated):
		return &Outcome{Status: StatusFailed, Code: ledger.FailAccountingBoundViolated, Delivery: ledger.ResponseReceived}
	case s.ctx.Err() != nil:
		return s.interrupted()
	}
	return &Outcome{Status: StatusFailed, Code: ledger.FailEventSinkIO, Delivery: ledger.NotSent}
}

// emit appends an event to the ledger, publishes it and hands it to the
// host sink.
func (s *step) emit(data EventData) *Outcome {
	if !s.payloads {
		return s.publish(nil, "", &data)
	}
	payload, err := json.Marshal(&data)
	if err != nil {
		return &Outcome{Status: StatusFailed, Code: ledger.FailEventSinkIO, Delivery: ledger.NotSent}
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
	st, err := s.t.log.Add(func() (eventlog.Stamp, error) {
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
		// Built here rather than through eventlog.Entry.Event: on this path
		// every copy counts (BenchmarkEventLatency, about 15 ns).
		e := Event{SchemaVersion: EventSchemaVersion, Seq: st.Seq, RootSeq: st.RootSeq, TimestampUnixMicros: st.UnixMicros,
			RunID: s.hdr.RunID, SessionID: s.hdr.RunID, TraceID: s.hdr.TraceID, Agent: s.hdr.Agent}
		if data != nil {
			e.EventData = *data
		} else {
			e.Type, e.Text = EventTextDelta, text
		}
		if err := sink(e); err != nil {
			return &Outcome{Status: StatusFailed, Code: ledger.FailEventSinkIO, Delivery: ledger.ResponseReceived}
		}
	}
	if s.t.log.Low() {
		// Between events, not inside one's delivery.
		s.t.log.Grow()
	}
	return nil
}

// finish settles the task: the terminal event, the ledger's outcome record
// and the task object. A terminal record the ledger refuses is not
// dropped: the task fails with the ledger's code, and the failure is
// recorded instead when the ledger still can.
func (t *Task) finish(s *step, o *Outcome) {
	acc, _ := t.root.Accounting(s.agent)
	var en eventlog.Entry
	record := func() error {
		data := &EventData{Type: EventRunFinished, Outcome: o, Accounting: &acc}
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
	if errors.As(err, &le) && o.Status == StatusCompleted {
		// limit_exceeded carries no output to bound, so this is not
		// refused for the same reason.
		o = &Outcome{Status: StatusLimitExceeded, Limit: le.Kind}
		err = record()
	}
	if err != nil {
		stamped := en.Data != nil
		o = &Outcome{Status: StatusFailed, Code: ledger.FailEventSinkIO, Delivery: ledger.NotSent}
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
	id := t.root.ID()
	trace := s.traceID
	obj := &TaskObject{SchemaVersion: EventSchemaVersion, RunID: &id, SessionID: &id, TraceID: &trace, Outcome: o, Accounting: &acc}
	if s.check != nil {
		rec, rep := s.check.Records()
		obj.OutputValidation, _ = json.Marshal(rec)
		obj.OutputRepair = rep
	}
	t.settle(obj)
}

// stampOf is the stamp of an event the ledger appended: zero when it
// appended none.
func stampOf(ev ledger.Event) eventlog.Stamp {
	if ev.RootSeq == 0 {
		return eventlog.Stamp{}
	}
	return eventlog.Stamp{RootSeq: ev.RootSeq, Seq: ev.Seq, UnixMicros: ev.Time.UnixMicro()}
}

func outputBytes(o *Outcome) uint64 {
	if o.Output == nil {
		return 0
	}
	return uint64(len(*o.Output))
}
