package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/internal/compaction"
	"github.com/pabloagent/pablo/internal/ids"
	"github.com/pabloagent/pablo/ledger/outcome"
	"github.com/pabloagent/pablo/model"
)

// CompactionOptions are the root's CompactionOptions (which document
// each field), converted.
type CompactionOptions struct {
	SafetyMarginPercent int
	MaxSummaryTokens    int64
	MaxSummaryBytes     int64
	KeepRecentTurns     int
	ContextWindowTokens uint64
	MaxCompactions      int
}

// ErrCompactionOptions is the kind of an invalid CompactionOptions.
var ErrCompactionOptions = errors.New("pablo: invalid compaction options")

// resolved checks o and returns it with its defaults written out.
func (o CompactionOptions) resolved() (CompactionOptions, error) {
	def := func(v *int64, d, lo, hi int64, name string) error {
		if *v == 0 {
			*v = d
		}
		if *v < lo || *v > hi {
			return fmt.Errorf("%w: %s must be %d..%d, got %d", ErrCompactionOptions, name, lo, hi, *v)
		}
		return nil
	}
	margin, keep, most := int64(o.SafetyMarginPercent), int64(o.KeepRecentTurns), int64(o.MaxCompactions)
	if keep < 0 {
		return o, fmt.Errorf("%w: KeepRecentTurns must be 0..%d, got %d", ErrCompactionOptions, compaction.MaxKeepRecentTurns, keep)
	}
	for _, c := range []struct {
		v         *int64
		d, lo, hi int64
		name      string
	}{
		{&margin, 10, 1, 50, "SafetyMarginPercent"},
		{&o.MaxSummaryTokens, 1024, compaction.MinSummaryTokens, 65536, "MaxSummaryTokens"},
		{&o.MaxSummaryBytes, 16384, compaction.MinSummaryBytes, 1 << 20, "MaxSummaryBytes"},
		{&keep, 0, 0, compaction.MaxKeepRecentTurns, "KeepRecentTurns"},
		{&most, compaction.MaxPerTask, 1, compaction.MaxPerTask, "MaxCompactions"},
	} {
		if err := def(c.v, c.d, c.lo, c.hi, c.name); err != nil {
			return o, err
		}
	}
	if o.ContextWindowTokens > 1_000_000_000 {
		return o, fmt.Errorf("%w: ContextWindowTokens must be 1..1000000000 (0 for unknown), got %d", ErrCompactionOptions, o.ContextWindowTokens)
	}
	o.SafetyMarginPercent, o.KeepRecentTurns, o.MaxCompactions = int(margin), int(keep), int(most)
	return o, nil
}

// compactor is one agent's compaction state.
type compactor struct {
	opts  CompactionOptions
	calib compaction.Calibration
	// profile is the provider and model of the agent's last model call
	// (the route entry now selected), whose calibration estimates apply.
	profile string
	// started counts the compactions the loop started, completed those
	// that replaced history.
	started, completed int
	// pinned is the number of leading history messages never summarized.
	pinned int
}

// bounds are what the agent's next normal request must fit.
func (s *step) bounds() compaction.Bounds {
	c := s.comp
	return compaction.Bounds{ContextBytes: s.conf.contextBytes, WindowTokens: c.opts.ContextWindowTokens,
		MaxOutputTokens: uint64(max(s.t.rt.opts.MaxOutputTokens, 0)), MarginPercent: uint64(c.opts.SafetyMarginPercent)}
}

// measure is the size of the normal request the loop is about to send.
func (s *step) measure() compaction.Measure {
	req := model.Request{Instructions: s.t.rt.opts.Instructions, Messages: s.history, Tools: s.defs}
	n := s.requestBytes(&req)
	return compaction.Measure{Bytes: n, Tokens: s.comp.calib.Estimate(s.comp.profile, n, len(s.history)+len(s.defs))}
}

// compactIfDue compacts before a normal request that is due, again while
// a completed compaction leaves it due (a large last turn), within the
// per-task maximum. It returns the task's outcome when a compaction ended
// it, nil when the loop goes on (compacted, or with its history kept when
// the request still fits).
func (s *step) compactIfDue() *event.Outcome {
	c := s.comp
	if c == nil || s.repairing {
		return nil
	}
	for c.started < c.opts.MaxCompactions {
		m := s.measure()
		if !s.bounds().Due(m) {
			return nil
		}
		done := c.completed
		if o := s.compact(compaction.TriggerThreshold, m); o != nil {
			return o
		}
		if c.completed == done {
			return nil // it failed and the request still fits: go on with the history kept
		}
	}
	return nil
}

// canRecover reports whether a turn that overflowed (o) may be answered
// with one compaction and one retry: an explicit overflow code from the
// provider (context_overflow with the response received), compaction on,
// not during an output repair and within the per-task maximum.
func (s *step) canRecover(o *event.Outcome) bool {
	return o != nil && o.Status == event.StatusFailed && o.Code == outcome.FailContextOverflow && o.Delivery == outcome.ResponseReceived &&
		s.comp != nil && !s.repairing && s.comp.started < s.comp.opts.MaxCompactions
}

// compact runs one compaction of the agent's history. On success the
// history is replaced at once; on failure it is kept whole, and the loop
// goes on when the request that was due still fits (a threshold trigger)
// or ends compaction_failed.
func (s *step) compact(trigger compaction.Trigger, before compaction.Measure) *event.Outcome {
	r := s.t.rt
	c := s.comp
	c.started++
	sp := compaction.Choose(s.history, c.pinned, c.opts.KeepRecentTurns)
	rec := event.Compaction{SchemaVersion: event.CompactionSchemaVersion, ID: s.newID(), Trigger: string(trigger), Status: "running",
		BeforeBytes: compaction.Decimal(before.Bytes), BeforeEstimatedTokens: compaction.Decimal(before.Tokens), RemovedTurns: "0",
		ReplacedHistorySHA256: historyDigest(s.history[sp.From:sp.To])}
	if w := c.opts.ContextWindowTokens; w > 0 {
		ws := compaction.Decimal(w)
		rec.WindowTokens = &ws
	}
	ctx, span := r.startSpan(s.ctx, "compact_context")
	defer span.End()
	if span.IsRecording() {
		span.SetAttributes(attribute.String("pablo.compaction.id", rec.ID), attribute.String("pablo.compaction.trigger", string(trigger)))
	}
	if o := s.emitCompaction(event.CompactionStarted, rec, 0); o != nil {
		span.SetStatus(codes.Error, string(compaction.ReasonEventDeliveryFailed))
		s.finishCompaction(rec, compaction.ReasonEventDeliveryFailed, "failed", 0)
		return o
	}
	res := s.summarize(ctx, sp)
	if res.span != sp {
		// A shorter span was summarized: the record names what it replaced.
		sp = res.span
		rec.ReplacedHistorySHA256 = historyDigest(s.history[sp.From:sp.To])
	}
	if res.reason == "" {
		s.replaceHistory(compaction.Replace(s.history, sp, res.message))
		after := s.measure()
		ab, at := compaction.Decimal(after.Bytes), compaction.Decimal(after.Tokens)
		rec.AfterBytes, rec.AfterEstimatedTokens, rec.RemovedTurns = &ab, &at, compaction.Decimal(uint64(sp.Turns))
		if span.IsRecording() {
			span.SetAttributes(attribute.Int64("pablo.compaction.before_bytes", int64(before.Bytes)), attribute.Int64("pablo.compaction.after_bytes", int64(after.Bytes)))
		}
		c.completed++
		return s.finishCompaction(rec, "", "completed", res.summaryBytes)
	}
	span.SetStatus(codes.Error, string(res.reason))
	status := "failed"
	if res.end != nil && res.end.Status != event.StatusFailed {
		status = string(res.end.Status)
	}
	if o := s.finishCompaction(rec, res.reason, status, res.summaryBytes); o != nil && res.end == nil {
		return o
	}
	switch {
	case res.end != nil:
		return res.end // the summary call ended the task (cancelled, a ceiling, the ledger, the sink)
	case trigger == compaction.TriggerThreshold && s.bounds().Fits(before):
		return nil // the history is kept and the request still fits: the task goes on
	}
	d := outcome.NotSent
	if res.called {
		d = outcome.ResponseReceived
	}
	return &event.Outcome{Status: event.StatusFailed, Code: outcome.FailCompactionFailed, Delivery: d, Reason: "context compaction: " + string(res.reason)}
}

// summary is how one summary call went.
type summary struct {
	// span is the part of the history summarized: the chosen span, or
	// its first half (again) when the summary request would be too large.
	span         compaction.Span
	message      model.Message
	summaryBytes int
	reason       compaction.Reason
	// end is set when the summary call ended the task.
	end *event.Outcome
	// called says a summary request was answered.
	called bool
}

// errSummaryTooLarge stops a summary stream past max_summary_bytes.
var errSummaryTooLarge = errors.New("pablo: the summary exceeds max_summary_bytes")

// summarize asks the model on the currently selected entry, without tools
// and never through fallback, for a summary of the span sp of the history.
// A summary request that would itself be due is tried again on the first
// half of the span's turns, and so on, the later turns kept verbatim.
func (s *step) summarize(ctx context.Context, sp compaction.Span) summary {
	r := s.t.rt
	c := s.comp
	if sp.Empty() {
		return summary{span: sp, reason: compaction.ReasonNoHistory}
	}
	maxTokens, okT := compaction.ClampTokens(c.opts.MaxSummaryTokens, 0, r.opts.MaxOutputTokens)
	rootOut := int64(0)
	if n, finite := r.opts.Limits.OutputBytes.Value(); finite {
		rootOut = int64(min(n, 1<<40))
	}
	maxBytes, okB := compaction.ClampBytes(c.opts.MaxSummaryBytes, rootOut)
	if !okT || !okB {
		return summary{span: sp, reason: compaction.ReasonBoundsUnsupported}
	}
	b := s.bounds()
	b.MaxOutputTokens = uint64(maxTokens)
	var req model.Request
	for {
		req = compaction.Request(s.history[sp.From:sp.To], maxTokens)
		sb := requestBytes(&req)
		if !b.Due(compaction.Measure{Bytes: sb, Tokens: c.calib.Estimate(c.profile, sb, len(req.Messages))}) {
			break
		}
		half, ok := compaction.Halve(s.history, sp)
		if !ok {
			return summary{span: sp, reason: compaction.ReasonSummaryInputTooLarge}
		}
		sp = half
	}
	replaced := s.history[sp.From:sp.To]
	var text strings.Builder
	tooLarge := false
	op := &modelOp{s: s, req: &req, ctx: ctx, collect: func(d string) error {
		// The summary is content: it is collected, never emitted.
		if int64(text.Len()+len(d)) > maxBytes {
			tooLarge = true
			return errSummaryTooLarge
		}
		text.WriteString(d)
		return nil
	}}
	var resp *model.Response
	var o *event.Outcome
	if rm, ok := s.conf.route, s.conf.route != nil; ok {
		if s.route == nil {
			s.route = &RouteSession{}
		}
		s.route.NoFallback = true
		resp, o = op.generateRouted(rm)
		s.route.NoFallback = false
	} else {
		resp, o = op.generate()
	}
	switch {
	case tooLarge:
		return summary{span: sp, reason: compaction.ReasonNotSmaller, called: true}
	case o != nil:
		f := summaryFailure(o)
		f.span = sp
		return f
	case len(resp.ToolCalls) > 0:
		return summary{span: sp, reason: compaction.ReasonToolCallDuringSummary, called: true}
	}
	masked, _ := r.opts.Secrets.MaskString(resp.Text)
	msg := compaction.Message(masked)
	var replacedBytes uint64
	for i := range replaced {
		replacedBytes += messageBytes(&replaced[i])
	}
	out := summary{span: sp, message: msg, summaryBytes: len(resp.Text), called: true}
	out.reason = compaction.Check(resp.Text, resp.FinishReason, maxBytes, messageBytes(&msg), replacedBytes)
	return out
}

// summaryFailure is the summary of a summary call that failed with o:
// a provider failure is summary_unavailable_or_invalid and leaves the task
// to decide; anything else (cancelled, timed out, a ceiling, the ledger,
// the sink) ends the task as o.
func summaryFailure(o *event.Outcome) summary {
	switch o.Status {
	case event.StatusCancelled:
		return summary{reason: compaction.ReasonCancelled, end: o}
	case event.StatusTimedOut:
		return summary{reason: compaction.ReasonTimedOut, end: o}
	case event.StatusLimitExceeded:
		return summary{reason: compaction.ReasonLimitExceeded, end: o}
	case event.StatusPolicyDenied:
		return summary{reason: compaction.ReasonPolicyDenied, end: o}
	}
	switch o.Code {
	case outcome.FailEventSinkIO:
		return summary{reason: compaction.ReasonEventDeliveryFailed, end: o}
	case outcome.FailAccountingBoundViolated:
		return summary{reason: compaction.ReasonFailed, end: o}
	}
	return summary{reason: compaction.ReasonSummaryUnavailable, called: o.Delivery == outcome.ResponseReceived}
}

// finishCompaction emits context.compaction.finished with rec ended as
// status for reason ("" when completed).
func (s *step) finishCompaction(rec event.Compaction, reason compaction.Reason, status string, summaryBytes int) *event.Outcome {
	rec.Status = status
	if reason != "" {
		r := string(reason)
		rec.Reason = &r
	}
	return s.emitCompaction(event.CompactionFinished, rec, summaryBytes)
}

// emitCompaction emits one compaction event with its own copy of rec.
func (s *step) emitCompaction(typ event.Type, rec event.Compaction, summaryBytes int) *event.Outcome {
	n := compaction.Decimal(uint64(max(summaryBytes, 0)))
	return s.emit(event.EventData{Type: typ, Compaction: &rec, Summary: event.NullSummary(), SummaryBytes: &n})
}

// replaceHistory swaps the agent's history for h, a new slice, and
// measures it once. The turn count is not reset: it numbers the task's
// turns, not the messages left.
func (s *step) replaceHistory(h []model.Message) {
	var n uint64
	for i := range h {
		n += messageBytes(&h[i])
	}
	s.history, s.histBytes = h, n
}

// newID is a new ID from the runtime's source.
func (s *step) newID() string {
	if f := s.t.rt.opts.NewID; f != nil {
		return f()
	}
	return ids.Random{}.NewID()
}

// historyDigest is the SHA-256 of the canonical JSON of msgs.
func historyDigest(msgs []model.Message) string {
	b, err := json.Marshal(msgs)
	if err != nil {
		return sha256Tag(nil)
	}
	return sha256Tag(b)
}
