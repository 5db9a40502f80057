package engine

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger/outcome"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/pabloagent/pablo/internal/clock"
	"github.com/pabloagent/pablo/internal/compaction"
	"github.com/pabloagent/pablo/internal/eventlog"
	"github.com/pabloagent/pablo/internal/providers"
	"github.com/pabloagent/pablo/internal/redact"
	"github.com/pabloagent/pablo/internal/textx"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/model"
)

func (s *step) modelCallRemains() *event.Outcome {
	lim := s.t.rt.opts.Limits.ModelCalls
	n, finite := lim.Value()
	if !finite {
		return nil
	}
	acc, err := s.t.root.Accounting(s.agent)
	if err == nil && acc.ModelCalls.N >= n {
		return &event.Outcome{Status: event.StatusLimitExceeded, Limit: outcome.LimitModelCalls}
	}
	return nil
}

// modelCall is one model call on the ledger: reserved, started, dispatched,
// settled. A routed model makes one per attempt.
type modelCall struct {
	id       string
	started  bool
	outBytes uint64
	// profile, bytes and items are the call's profile and its request's
	// measure, which a reported input usage calibrates.
	profile string
	bytes   uint64
	items   int
	span    trace.Span
	// text masks the call's text deltas as one stream: a secret split
	// across deltas is masked whole.
	text redact.Stream
	// retryInMS, set on a failed call the run loop retries, is the wait
	// before the retry: the call settles as failed, but its failure is
	// not the task's.
	retryInMS *int64
	// turn: the call answers one of the agent's turns (not a summary, not
	// a route classification); its response is recorded for a resume.
	turn bool
}

// profileName is "provider/model", the name a model call's calibration is
// kept under; the last one is kept, so that a turn on the same model as
// the turn before allocates none.
func (s *step) profileName(provider, mdl string) string {
	if p := s.lastProfile; len(p) == len(provider)+1+len(mdl) && p[:len(provider)] == provider && p[len(provider)] == '/' && p[len(provider)+1:] == mdl {
		return p
	}
	s.lastProfile = provider + "/" + mdl
	return s.lastProfile
}

// beginCall reserves and dispatches one model call of req, with the
// worst case bd attests (nil: none), and emits model.started. It returns
// the request to send: req, or a copy whose output allowance a ceiling
// lowered.
func (s *step) beginCall(ctx context.Context, provider, mdl string, route *event.RouteAttempt, req *model.Request, bd model.Bounder) (*modelCall, *model.Request, *event.Outcome) {
	t, r := s.t, s.t.rt
	id, req, o := s.reserve(provider, mdl, route, req, bd)
	if o != nil {
		return nil, nil, o
	}
	call := &modelCall{id: id, profile: s.profileName(provider, mdl), bytes: s.requestBytes(req), items: len(req.Messages) + len(req.Tools)}
	call.text.Reset(r.opts.Secrets)
	if s.comp != nil {
		s.comp.profile = call.profile // the entry now selected
	}
	if o := s.emitModel(eventlog.Model{Provider: provider, Model: mdl, Route: route}); o != nil {
		return nil, nil, s.abandonCall(id, outcome.FailEventSinkIO, o)
	}
	// The OpenTelemetry GenAI conventions: "chat {model}", the provider,
	// the requested model; the answer's attributes are set at its end.
	_, call.span = r.startSpanFor(ctx, "chat", mdl)
	if call.span.IsRecording() {
		call.span.SetAttributes(attribute.String("gen_ai.operation.name", "chat"), attribute.String("gen_ai.provider.name", provider),
			attribute.String("gen_ai.request.model", mdl))
		if req.MaxOutputTokens > 0 {
			call.span.SetAttributes(attribute.Int64("gen_ai.request.max_tokens", req.MaxOutputTokens))
		}
	}
	if err := t.root.Dispatch(s.ctx, s.agent, id); err != nil {
		call.span.End()
		return nil, nil, s.abandonCall(id, "", s.ledgerOutcome(err))
	}
	call.started = true
	return call, req, nil
}

// modelCallRecord is the ledger's record of a model call about to be
// reserved: its route, the request's context bytes and the model's bounds.
func (s *step) modelCallRecord(provider, mdl string, route *event.RouteAttempt, req *model.Request) ledger.ModelCall {
	mc := ledger.ModelCall{Route: provider + "/" + mdl, ContextBytes: s.requestBytes(req)}
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
func (s *step) abandonCall(id string, code outcome.FailureCode, o *event.Outcome) *event.Outcome {
	settle := ledger.ModelSettlement{Status: event.StatusFailed, Delivery: outcome.NotSent, Error: code}
	if err := s.t.root.SettleModelCall(s.ctx, s.agent, id, settle); err != nil {
		return s.ledgerFailure(err, outcome.NotSent)
	}
	return o
}

// endCall settles a model call with its response or error, emits
// model.finished and returns the outcome the failure implies (nil when the
// call succeeded).
func (s *step) endCall(call *modelCall, resp *model.Response, err error, sinkErr *event.Outcome, route *event.RouteAttempt) *event.Outcome {
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
	settle, end := s.modelResult(resp, err, sinkErr, route)
	if call.retryInMS != nil {
		end = nil
	}
	if call.turn && end == nil && err == nil && resp != nil && call.retryInMS == nil && s.payloads {
		// The response is kept (masked) with the call's settlement, so a
		// resumed task rebuilds its history without sending it again.
		ref, rerr := s.recordResponse(resp)
		if rerr != nil {
			end = s.ledgerOutcome(rerr)
		}
		settle.Result = ref
	}
	if s.comp != nil && end == nil && resp != nil && resp.UsageReported && resp.Usage.InputTokens != nil {
		s.comp.calib.Observe(call.profile, call.bytes, call.items, *resp.Usage.InputTokens)
	}
	if end != nil {
		call.span.SetStatus(codes.Error, "model call failed")
	}
	if serr := t.root.SettleModelCall(s.ctx, s.agent, call.id, settle); serr != nil && end == nil {
		end = s.ledgerOutcome(serr)
	}
	if acc, aerr := t.root.Accounting(s.agent); aerr == nil {
		s.usage = acc.Usage
	}
	if resp != nil && call.span.IsRecording() {
		attrs := []attribute.KeyValue{attribute.StringSlice("gen_ai.response.finish_reasons", []string{string(resp.FinishReason)})}
		if resp.Model != "" {
			// The provider's words: masked like any text it sends.
			attrs = append(attrs, attribute.String("gen_ai.response.model", t.rt.opts.Secrets.String(resp.Model)))
		}
		if resp.UsageReported {
			for _, u := range []struct {
				key string
				n   *uint64
			}{{"gen_ai.usage.input_tokens", resp.Usage.InputTokens}, {"gen_ai.usage.output_tokens", resp.Usage.OutputTokens},
				{"gen_ai.usage.cache_read.input_tokens", resp.Usage.CacheReadTokens}, {"gen_ai.usage.cache_creation.input_tokens", resp.Usage.CacheWriteTokens}} {
				if u.n != nil && *u.n <= math.MaxInt64 {
					attrs = append(attrs, attribute.Int64(u.key, int64(*u.n)))
				}
			}
		}
		call.span.SetAttributes(attrs...)
	}
	fin := modelFinished(call, resp, settle, route)
	fin.RetryInMS = call.retryInMS
	if o := s.emitModel(fin); o != nil && end == nil {
		end = o
	}
	return end
}

// modelResult is how the ledger settles a model call that answered resp
// or failed with err, and the task outcome a failure implies (nil when the
// call succeeded); sinkErr is set when the ledger or the host's sink
// refused one of its deltas.
func (s *step) modelResult(resp *model.Response, err error, sinkErr *event.Outcome, route *event.RouteAttempt) (ledger.ModelSettlement, *event.Outcome) {
	settle := ledger.ModelSettlement{Status: event.StatusCompleted, Delivery: outcome.ResponseReceived}
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
	var end *event.Outcome
	var me *model.Error
	switch {
	case sinkErr != nil:
		end = sinkErr
		settle.Status, settle.Error = event.StatusFailed, outcome.FailEventSinkIO
	case s.ctx.Err() != nil:
		end = s.interrupted()
		settle.Status, settle.Delivery = end.Status, outcome.MayHaveBeenSent
	case errors.As(err, &me):
		end = &event.Outcome{Status: event.StatusFailed, Code: me.Code, Delivery: me.Delivery, Reason: s.modelReason(err)}
		settle.Status, settle.Delivery, settle.Error = event.StatusFailed, me.Delivery, me.Code
	default:
		end = &event.Outcome{Status: event.StatusFailed, Code: outcome.FailProviderTransport, Delivery: outcome.MayHaveBeenSent, Reason: s.modelReason(err)}
		settle.Status, settle.Delivery, settle.Error = event.StatusFailed, outcome.MayHaveBeenSent, outcome.FailProviderTransport
	}
	if route != nil && route.Delivery != nil && sinkErr == nil && s.ctx.Err() == nil {
		settle.Delivery = outcome.Delivery(*route.Delivery)
	}
	return settle, end
}

// modelFinished is the model.finished event of a call settled as settle.
func modelFinished(call *modelCall, resp *model.Response, settle ledger.ModelSettlement, route *event.RouteAttempt) eventlog.Model {
	out := call.outBytes
	fin := eventlog.Model{Finished: true, Status: string(settle.Status), OutputBytes: &out, Route: route}
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
//
// A normal turn (not an output repair) is compacted first when its request
// is due, and a turn the provider refuses with an explicit context-overflow
// code is compacted once and retried once on the same entry; a second
// overflow, or one that cannot be compacted, ends the task
// context_overflow.
func (s *step) modelTurn() (*model.Response, *event.Outcome) {
	if o := s.compactIfDue(); o != nil {
		return nil, o
	}
	resp, o := s.generateTurn()
	if s.canRecover(o) {
		if o := s.compact(compaction.TriggerOverflow, s.measure()); o != nil {
			return nil, o
		}
		resp, o = s.generateTurn()
	}
	if o != nil {
		return nil, o
	}
	if calls := s.pairCalls(resp.ToolCalls, s.histTurns+1); len(calls) > 0 && &calls[0] != &resp.ToolCalls[0] {
		paired := *resp
		paired.ToolCalls = calls
		resp = &paired
	}
	s.addHistory(model.Message{Role: model.RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls, Reasoning: resp.Reasoning})
	return resp, nil
}

// generateTurn runs the model operation of one turn over the history as
// it is.
func (s *step) generateTurn() (*model.Response, *event.Outcome) {
	r := s.t.rt
	req := &model.Request{Instructions: r.opts.Instructions, Messages: s.history, Tools: s.defs, MaxOutputTokens: r.opts.MaxOutputTokens}
	model.SetTurn(req, s.histTurns+1)
	op := &modelOp{s: s, req: req, turn: true}
	if rm, ok := s.conf.route, s.conf.route != nil; ok {
		return op.generateRouted(rm)
	}
	return op.generate()
}

// modelOp is one logical model operation in flight: its request, the
// ledger call its deltas belong to and what stopped it.
type modelOp struct {
	s   *step
	req *model.Request
	// ctx, when set, is the context the operation's spans start under
	// (a summary's compact_context span); nil means the agent's.
	ctx context.Context
	// collect, when set, takes the text deltas instead of the event
	// stream: a summary is content and is never emitted.
	collect func(string) error
	// turn: the operation is one of the agent's turns (modelCall.turn).
	turn    bool
	current *modelCall     // the call streaming now; nil between attempts
	sinkErr *event.Outcome // the first delta the ledger or the sink refused
	failed  *event.Outcome // the ledger stopped a route between attempts
}

// generate runs the operation as one call of a plain model.
func (op *modelOp) generate() (*model.Response, *event.Outcome) {
	s := op.s
	ctx := op.ctx
	if ctx == nil {
		ctx = s.ctx
	}
	var retry providers.RetryPolicy
	var clk clock.Clock
	if r, ok := s.conf.model.(retrier); ok {
		retry, clk = r.retryPolicy()
	}
	for tries := 1; ; tries++ {
		bd, _ := s.conf.model.(model.Bounder)
		call, req, o := s.beginCall(ctx, s.modelInfo.Provider, s.modelInfo.Model, nil, op.req, bd)
		if o != nil {
			return nil, o
		}
		call.turn = op.turn
		op.current = call
		resp, err := s.conf.model.Generate(ctx, req, op.delta)
		if err != nil && clk != nil && op.sinkErr == nil && call.outBytes == 0 {
			// Nothing of this attempt reached the task: a retryable
			// failure is settled as its own failed call, and the same
			// model is asked again after the wait.
			if d, ok := retry.Wait(ctx, tries, err, clk.Now()); ok {
				ms := d.Milliseconds()
				call.retryInMS = &ms
				if o := s.endCall(call, nil, err, nil, nil); o != nil {
					return nil, o
				}
				op.current = nil
				if providers.Sleep(ctx, clk, d) != nil {
					return nil, s.interrupted()
				}
				continue
			}
		}
		if o := s.endCall(call, resp, err, op.sinkErr, nil); o != nil {
			return nil, o
		}
		return resp, nil
	}
}

// generateRouted runs the operation on a route: the route's session
// begins and ends one ledger call per attempt.
func (op *modelOp) generateRouted(rm *Route) (*model.Response, *event.Outcome) {
	s := op.s
	if s.route == nil {
		s.route = &RouteSession{}
	}
	s.route.BeginAttempt = op.beginAttempt
	s.route.EndAttempt = op.endAttempt
	ctx := op.ctx
	if ctx == nil {
		ctx = s.ctx
	}
	resp, err := rm.GenerateRouted(ctx, s.route, op.req, op.delta)
	if op.failed != nil {
		return nil, op.failed
	}
	if err != nil {
		return nil, s.failureOutcome(err, op.sinkErr)
	}
	return resp, nil
}

// beginAttempt begins the ledger call of one route attempt.
func (op *modelOp) beginAttempt(ctx context.Context, a event.RouteAttempt, req *model.Request, bd model.Bounder) (*model.Request, error) {
	call, req, o := op.s.beginCall(ctx, a.Provider, a.Model, &a, req, bd)
	if o != nil {
		op.failed = o
		return nil, errRouteStopped
	}
	call.turn = op.turn
	op.current = call
	return req, nil
}

// endAttempt settles the ledger call of one route attempt.
func (op *modelOp) endAttempt(_ context.Context, a event.RouteAttempt, resp *model.Response, err error) {
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
	if op.collect != nil {
		if op.current != nil {
			op.current.outBytes += uint64(len(delta))
		}
		return op.collect(delta)
	}
	var masked int
	if op.current != nil {
		op.current.outBytes += uint64(len(delta))
		if delta, masked = op.current.text.WriteString(delta); delta == "" {
			return nil
		}
	} else {
		delta, masked = op.s.t.rt.opts.Secrets.MaskString(delta)
	}
	if o := op.s.emitDelta(delta, masked); o != nil {
		op.sinkErr = o
		return errSink
	}
	return nil
}

// modelReason is why a model call failed, as the task's outcome says it:
// the model error's Reason (the provider's status and words, or the
// transport error and the endpoint), else its cause's message, naming the
// model; masked and bounded.
func (s *step) modelReason(err error) string {
	var me *model.Error
	why := ""
	switch {
	case errors.As(err, &me) && me.Reason != "":
		why = me.Reason
	case errors.As(err, &me) && me.Err != nil:
		why = me.Err.Error()
	case err != nil:
		why = err.Error()
	}
	if why == "" {
		return ""
	}
	var re *routeError
	if errors.As(err, &re) && len(re.Attempts) > 0 {
		// A route names the entry whose attempt failed last.
		a := re.Attempts[len(re.Attempts)-1]
		return s.reason("model %s/%s (route %s entry %s, after %d attempt(s)): %s", a.Provider, a.Model, a.Route, a.Entry, len(re.Attempts), why)
	}
	return s.reason("model %s/%s: %s", s.modelInfo.Provider, s.modelInfo.Model, why)
}

// reason is a task outcome's reason: formatted, masked and bounded.
func (s *step) reason(format string, args ...any) string {
	return textx.Shorten(s.t.rt.opts.Secrets.String(fmt.Sprintf(format, args...)), ledger.MaxReasonBytes-len("…"))
}

// failureOutcome is the task outcome of a failed model operation.
func (s *step) failureOutcome(err error, sinkErr *event.Outcome) *event.Outcome {
	var me *model.Error
	switch {
	case sinkErr != nil:
		return sinkErr
	case s.ctx.Err() != nil:
		return s.interrupted()
	case errors.As(err, &me):
		return &event.Outcome{Status: event.StatusFailed, Code: me.Code, Delivery: me.Delivery, Reason: s.modelReason(err)}
	}
	return &event.Outcome{Status: event.StatusFailed, Code: outcome.FailProviderTransport, Delivery: outcome.MayHaveBeenSent, Reason: s.modelReason(err)}
}

var errRouteStopped = errors.New("pablo: route stopped by the ledger")

var errSink = errors.New("pablo: event sink failed")

func countOf(p *uint64) ledger.Count {
	if p == nil {
		return ledger.Count{Unknown: true}
	}
	return ledger.Count{N: *p}
}
