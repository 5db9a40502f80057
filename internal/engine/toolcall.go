package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pabloagent/pablo/approval"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger/outcome"
	"github.com/pabloagent/pablo/model"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/children"
	"github.com/pabloagent/pablo/internal/jsonx"
	"github.com/pabloagent/pablo/internal/sandbox"
	"github.com/pabloagent/pablo/internal/textx"
	"github.com/pabloagent/pablo/ledger"
)

// toolCall takes one proposed call down the path DESIGN.md draws, one
// stage at a time. Each stage takes the typed value the one before it
// produced and either produces its own or ends the task with an outcome,
// so nothing reaches a stage without passing every stage before it:
//
//	ToolCall ─resolve→ resolvedCall ─validate→ checkedCall ─admit→ admittedCall
//	  ─approve→ ─dispatch→ dispatchedCall ─observe→ observation ─retain→ nil, or the outcome
//
// It returns nil when the task goes on.
//
// id is Pablo's ID of the call, which every record of it carries; call.ID
// is the one its result goes back to the model under.
func (s *step) toolCall(call model.ToolCall, id string) *event.Outcome {
	rc, o := s.resolve(call, id)
	if o != nil {
		return s.answerMistake(call, o)
	}
	cc, o := s.validate(rc)
	if o != nil {
		return s.answerMistake(call, o)
	}
	// A call the model chose well ends a run of mistakes.
	s.misses = 0
	ac, o := s.admit(cc)
	if o != nil {
		return o
	}
	if res, denied := s.approve(ac); denied {
		// Settled as a call that never left: tool.finished says why. A
		// rejection counts as a dispatched call without being one.
		return s.retain(s.observe(dispatchedCall{admittedCall: ac, res: res, counted: res.Code == approval.CodeRejected}))
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
	call  model.ToolCall // as the model wrote it, under its wire ID: its result is returned under call.ID
	id    authority.ID
	owner Catalog
	args  json.RawMessage // the model's arguments; {} when it wrote none
	rec   ledger.ToolCall // the ledger's record: Pablo's call ID, name, digest, size
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
	streamFailed *event.Outcome
	// counted: the call never left but counts as a dispatched one (an
	// approval rejection), charged when it settles.
	counted bool
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
// and the ledger record it is admitted or denied under, keyed by callID,
// Pablo's ID of the call. A name outside the admitted catalog is a model
// misselection: the call is recorded denied and the task ends.
func (s *step) resolve(call model.ToolCall, callID string) (resolvedCall, *event.Outcome) {
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
	rec := ledger.ToolCall{ID: callID, Name: string(id), ArgumentsDigest: sha256Tag(args), InputBytes: uint64(len(args))}
	if !known {
		s.mistake = &mistake{kind: mistakeUnavailable, tool: call.Name}
		return resolvedCall{}, s.denyUnknown(call.Name, rec)
	}
	return resolvedCall{call: call, id: id, owner: s.owner[id], args: args, rec: rec}, nil
}

// denyUnknown records the denial of a call to name, a tool outside the
// admitted catalog. A tool some layer kept out is recorded with the
// decision that did; any other name is the mandatory tool_unavailable
// denial.
func (s *step) denyUnknown(name string, rec ledger.ToolCall) *event.Outcome {
	if d, listed := s.refused[name]; listed {
		rec.Name = name
		if w, isWire := s.wireID(name); isWire {
			rec.Name = w
		}
		return s.deny(rec, d, unavailableRule(d))
	}
	// The model wrote the name: it is recorded masked, then bounded.
	rec.Name = textx.Shorten(s.t.rt.opts.Secrets.String(name), 256)
	if !utf8.ValidString(rec.Name) {
		rec.Name = "invalid"
	}
	d := authority.Decision{Layer: authority.LayerConfiguration, RuleID: authority.RuleToolUnavailable, Reason: "the tool is not in the admitted catalog"}
	return s.deny(rec, d, d.RuleID)
}

// validate asks the contract and the owning catalog's own checks (a path,
// a command) whether the call may run. A denial or a contract rejection is
// recorded and ends the task.
func (s *step) validate(rc resolvedCall) (checkedCall, *event.Outcome) {
	d, err := DecideCall(s.ctx, s.contracts, rc.owner, authority.Call{ID: rc.rec.ID, Tool: rc.id, Arguments: rc.args})
	if err != nil {
		ce := contractError(err)
		s.mistake = &mistake{kind: mistakeArguments, tool: rc.call.Name, pointer: ce.Path, rule: string(ce.Kind), keyword: ce.Keyword}
		switch {
		case ce.Kind == authority.ContractUnknownTool:
			s.mistake.kind = mistakeUnavailable
		case ce.Kind == authority.ContractUnauthorizedResource:
			s.mistake.kind = mistakeDenied
			s.mistake.decision = authority.Decision{Layer: authority.LayerConfiguration, RuleID: authority.RuleToolUnavailable, Reason: "a resource is outside the caller's scope"}
			if ce.Decision != nil {
				s.mistake.decision = *ce.Decision
			}
		}
		return checkedCall{}, s.reject(rc, ce)
	}
	if !d.Allowed {
		s.mistake = &mistake{kind: mistakeDenied, tool: rc.call.Name, decision: d}
		return checkedCall{}, s.deny(rc.rec, d, d.RuleID)
	}
	return checkedCall{resolvedCall: rc, decision: d}, nil
}

// reject records a call its contract rejected. An unknown tool or a
// resource outside the scope is a denial; arguments that do not fit the
// schema are the failure invalid_tool_arguments, under the authority's
// decision on the tool, which admits it.
func (s *step) reject(rc resolvedCall, ce *authority.ContractError) *event.Outcome {
	switch ce.Kind {
	case authority.ContractUnknownTool, authority.ContractUnauthorizedResource:
		d := authority.Decision{Layer: authority.LayerConfiguration, RuleID: authority.RuleToolUnavailable}
		if ce.Decision != nil {
			d = *ce.Decision
		}
		return s.deny(rc.rec, d, d.RuleID)
	}
	rec := rc.rec
	rec.Decision = s.conf.auth.Decide(authority.Request{Capability: rc.id})
	if err := s.admitCall(rec); err != nil {
		return s.ledgerOutcome(err)
	}
	fail := &event.Outcome{Status: event.StatusFailed, Code: outcome.FailInvalidToolArguments, Delivery: outcome.NotSent,
		Reason: s.reason("%v", ce)}
	return s.settleUnsent(rec.ID, outcome.ToolInvalidArguments, string(ce.Kind), fail)
}

// admit records a checked call as admitted, which charges it against the
// ceilings, and emits tool.started. A refused admission ends the task
// before anything runs.
func (s *step) admit(cc checkedCall) (admittedCall, *event.Outcome) {
	rec := cc.rec
	rec.Decision = cc.decision
	// The key the call's side effect carries is on its admission record,
	// before anything can leave.
	rec.IdempotencyKey = IdempotencyKey(s.t.root.ID(), s.agent, rec.ID)
	if err := s.admitCall(rec); err != nil {
		return admittedCall{}, s.ledgerOutcome(err)
	}
	if o := s.emitToolStarted(rec.ID, string(cc.id), cc.args, cc.decision.Sandbox, s.unretained(cc.id)); o != nil {
		return admittedCall{}, s.settleUnsent(rec.ID, outcome.ToolEventSinkFailed, "", o)
	}
	cc.rec = rec
	return admittedCall{checkedCall: cc}, nil
}

// approve asks the task's approver about an admitted call whose decision
// needs approval; denied is false when the call may run. The question is
// bound to this one call: its ID, capability, arguments digest, masked
// arguments, resources and effect, and the agent that asks. An earlier
// "allow for this task" grant covering exactly this call answers without
// asking. A rejection is the recoverable result approval_rejected, counted
// as a dispatched call that never left; no approver, or one that fails,
// denies the call under builtin.approval, terminally; a task cancelled or
// timed out while the approver thinks ends so. Every request and answer is
// recorded in the ledger (approval.ledgerDecision).
func (s *step) approve(ac admittedCall) (res ledger.ToolResult, denied bool) {
	if !ac.decision.NeedsApproval {
		return res, false
	}
	req, resources := s.approvalRequest(ac)
	if o := s.emitApprovalRequested(req); o != nil {
		return s.approvalStopped(o), true
	}
	grant := authority.NewApprovalGrant(req.Tool, req.Effect, resources, req.ArgumentsDigest)
	// Network unrestricted-with-approval asks about every call: no grant
	// answers it, and its "allow for this task" records none.
	// (whichever rule asked first: the decision's sandbox says so).
	everyCall := strings.Contains(ac.decision.Sandbox, "network="+string(sandbox.UnrestrictedWithApproval))
	if allow, found := s.t.grants.covers(grant); found && (!everyCall || !allow) {
		if !allow {
			return s.rejected(ac, req, approvalRefused)
		}
		if o := s.recordApproval(req, approvalGranted); o != nil {
			return s.approvalStopped(o), true
		}
		return res, false
	}
	ap := s.conf.approver
	if ap == nil {
		return s.approvalDenied(req, "no approval channel: the task has no approver, so a call that needs approval is denied"), true
	}
	if o := s.recordApproval(req, approvalAsked); o != nil {
		return s.approvalStopped(o), true
	}
	answer, err := ap.Approve(s.ctx, req)
	if o := s.afterApproval(); o != nil {
		s.recordUnanswered(req, answer, err)
		return s.approvalStopped(o), true
	}
	if err != nil {
		return s.approvalDenied(req, "the approver could not answer"), true
	}
	switch answer {
	case approval.AllowOnce:
		if o := s.recordApproval(req, approval.AllowOnce); o != nil {
			return s.approvalStopped(o), true
		}
		return res, false
	case approval.AllowForTask:
		if !everyCall {
			s.t.grants.add(grant, true)
		}
		if o := s.recordApproval(req, approval.AllowForTask); o != nil {
			return s.approvalStopped(o), true
		}
		return res, false
	}
	if answer == approval.RejectForTask {
		s.t.grants.add(grant, false)
		return s.rejected(ac, req, approval.RejectForTask)
	}
	return s.rejected(ac, req, approval.Reject)
}

// rejected records a rejection and returns the recoverable result
// approval_rejected. The rejected call counts as a dispatched call, so a
// model that keeps asking spends its tool-call ceiling; it never leaves.
func (s *step) rejected(ac admittedCall, req approval.Request, step approval.Answer) (ledger.ToolResult, bool) {
	if o := s.recordApproval(req, step); o != nil {
		return s.approvalStopped(o), true
	}
	return rejectedResult(req), true
}

// afterApproval is the interruption that ended the task while its
// approver thought: a cancel, or its deadline, which an answer arriving
// after it cannot beat. The deadline is read on the runtime's clock (the
// ledger's), so an injected clock decides it as the ledger would.
func (s *step) afterApproval() *event.Outcome {
	if o := s.interrupted(); o != nil {
		return o
	}
	if d, ok := s.t.root.Deadline(s.agent); ok {
		now := time.Now()
		if s.t.rt.opts.Clock != nil {
			now = s.t.rt.opts.Clock.Now()
		}
		if !now.Before(d) {
			return &event.Outcome{Status: event.StatusTimedOut}
		}
	}
	return nil
}

// approvalStopped is the never-sent result of a call whose approval o
// ended: the task's interruption, or the ledger's failure.
func (s *step) approvalStopped(o *event.Outcome) ledger.ToolResult {
	switch o.Status {
	case event.StatusTimedOut:
		return ledger.ToolResult{Status: outcome.ToolTimedOut, Delivery: outcome.NotSent}
	case event.StatusCancelled:
		return ledger.ToolResult{Status: outcome.ToolCancelled, Delivery: outcome.NotSent}
	}
	return ledger.ToolResult{Status: outcome.ToolAdmissionFailed, Code: o.Code, Delivery: outcome.NotSent}
}

// approvalDenied is the terminal policy_denied result of a call that
// needed approval and had no one to give it. It is denied under what
// required the approval (the layer and rule, the class key, the host's
// list or the privileged default), so the outcome says what to change.
func (s *step) approvalDenied(req approval.Request, reason string) ledger.ToolResult {
	src := authority.ApprovalSourceOf(req.Decision)
	d := authority.Decision{Layer: src.Layer, RuleID: src.RuleID,
		Reason: fmt.Sprintf("%s: %s needs approval by layer %q rule %q; give the task an approver, or change that rule", reason, req.Tool, src.Layer, src.RuleID)}
	_ = s.recordApproval(req, approvalNoChannel)
	return ledger.ToolResult{Status: outcome.ToolPolicyDenied, Rule: src.RuleID, Decision: d, Delivery: outcome.NotSent}
}

// rejectedResult is what the model sees of a call its approver rejected:
// a recoverable error naming the call, so it can choose another way.
func rejectedResult(req approval.Request) ledger.ToolResult {
	return ledger.ToolResult{Status: outcome.ToolRecoverableError, Code: approval.CodeRejected, Delivery: outcome.NotSent,
		Output: map[string]any{"error": map[string]any{"code": string(approval.CodeRejected),
			"message": "the approver rejected this call; it did not run. Another call may be approved."}}}
}

// dispatch marks an admitted call as leaving on the ledger and runs it on
// its catalog, inside an execute_tool span, streaming its live output.
func (s *step) dispatch(ac admittedCall) (dispatchedCall, *event.Outcome) {
	callID := ac.rec.ID
	ctx, span := s.t.rt.startSpanFor(s.ctx, "execute_tool", string(ac.id))
	if span.IsRecording() {
		span.SetAttributes(attribute.String("gen_ai.operation.name", "execute_tool"), attribute.String("gen_ai.tool.name", string(ac.id)))
	}
	if err := s.t.root.Dispatch(ctx, s.agent, callID); err != nil {
		span.End()
		return dispatchedCall{}, s.settleUnsent(callID, outcome.ToolAdmissionFailed, "", s.ledgerOutcome(err))
	}
	s.liveMu.Lock()
	s.live = liveCall{id: callID, name: string(ac.id), unretained: s.unretained(ac.id)}
	s.liveMu.Unlock()
	// The workspace tools serialize their mutations across the tree
	// themselves (fstools' cancellation-aware gate, one per workspace).
	var res ledger.ToolResult
	if release, ok := s.t.processPermit(ac.id); ok {
		res = ac.owner.Call(ctx, authority.Call{ID: callID, Tool: ac.id, Arguments: ac.args,
			IdempotencyKey: ac.rec.IdempotencyKey})
		release()
	} else {
		res = ledger.RecoverableError("process_limit", fmt.Sprintf("the %d processes this task's tree may own at once are running (stdio MCP servers and shell commands); retry when one has ended", children.MaxOwnedProcesses))
	}
	// A capture bound that stopped the tool cut its streams too.
	s.liveMu.Lock()
	s.live.cut = s.live.cut || res.Status == outcome.ToolOutputLimit
	s.flushOutput()
	streamFailed := s.live.failed
	s.live = liveCall{}
	s.liveMu.Unlock()
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
	settle := ledger.ToolSettlement{Status: res.Status, Delivery: res.Delivery, OutputBytes: uint64(len(result)), Error: string(res.Code), Counted: dc.counted}
	if settle.Delivery == "" {
		settle.Delivery = outcome.ResponseReceived
	}
	if res.Status == outcome.ToolPolicyDenied {
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
func (s *step) retain(ob observation) *event.Outcome {
	t, callID, name := s.t, ob.rec.ID, string(ob.id)
	settle := ob.settle
	// Under audit level none the ledger keeps a marker in place of the
	// result of a call that was sent (its size and digest, and why), in
	// the settlement and in tool.finished; the model and the event's
	// readers get the result. A call never sent (an approver's
	// rejection) has Pablo's own answer as its result, which is kept.
	kept := ob.result
	if s.unretained(ob.id) && settle.Delivery != outcome.NotSent {
		kept = notRetainedJSON(string(settle.Status), ob.result)
	}
	ref, putErr := t.root.PutResult(s.ctx, json.RawMessage(kept))
	if putErr == nil {
		settle.Result = ref
	}
	if err := t.root.SettleToolCall(s.ctx, s.agent, callID, settle); err != nil {
		var le *ledger.LimitError
		if errors.As(err, &le) {
			if o := s.emit(event.EventData{Type: event.ToolFinished, CallID: callID, Name: name, Result: json.RawMessage(`{"status":"output_limit","policy_rule":null,"shell":null}`)}); o != nil {
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
	if o := s.emitToolFinishedAs(callID, name, ob.result, kept, ob.masked); o != nil {
		return o
	}
	if ob.res.Terminal() {
		return s.toolOutcome(ob.res)
	}
	s.addHistory(model.Message{Role: model.RoleTool, ToolCallID: ob.call.ID, Content: string(ob.result)})
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
func (s *step) deny(lc ledger.ToolCall, d authority.Decision, rule string) *event.Outcome {
	lc.Decision = authority.Decision{Allowed: false, Layer: d.Layer, RuleID: d.RuleID, Reason: d.Reason, MissingRole: d.MissingRole}
	readmitted := s.readmitting(lc.ID)
	if err := s.admitCall(lc); err != nil {
		return s.ledgerOutcome(err)
	}
	denied := &event.Outcome{Status: event.StatusPolicyDenied, Rule: ruleOf(rule)}
	if readmitted {
		// Admitted allowed before the host stopped, denied now: the
		// settlement records what decided.
		err := s.t.root.SettleToolCall(s.ctx, s.agent, lc.ID, ledger.ToolSettlement{Status: outcome.ToolPolicyDenied, Delivery: outcome.NotSent, Error: d.RuleID, Decision: lc.Decision})
		if err != nil {
			return s.ledgerFailure(err, outcome.NotSent)
		}
		return denied
	}
	return s.settleUnsent(lc.ID, outcome.ToolPolicyDenied, d.RuleID, denied)
}

// settleUnsent settles a tool call that never left the process and returns
// o, the outcome that ended it, or the ledger's failure when the
// settlement is refused: a call the ledger still holds open would keep the
// task from its terminal record.
func (s *step) settleUnsent(callID string, status outcome.ToolStatus, code string, o *event.Outcome) *event.Outcome {
	settle := ledger.ToolSettlement{Status: status, Delivery: outcome.NotSent, Error: code}
	if b, ok := s.mistakeAnswer(o); ok && s.payloads {
		// A mistake the model is told about: its result is kept with the
		// settlement, as a dispatched call's is.
		ref, err := s.t.root.PutResult(s.ctx, json.RawMessage(b))
		if err != nil {
			return s.ledgerFailure(err, outcome.NotSent)
		}
		settle.Result, settle.OutputBytes = ref, uint64(len(b))
	}
	err := s.t.root.SettleToolCall(s.ctx, s.agent, callID, settle)
	if err != nil {
		return s.ledgerFailure(err, outcome.NotSent)
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
		if h, ok := c.(HealthReporter); ok {
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
	masked, maskedN := s.t.rt.opts.Secrets.MaskJSON(buf)
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
	if out, ok := appendPlainJSON(buf, v); ok {
		return out
	}
	w := bytes.NewBuffer(buf)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return append(buf, "null"...)
	}
	out := w.Bytes()
	return out[:len(out)-1] // Encode adds a newline
}

// appendPlainJSON appends v as encoding/json writes it without HTML
// escaping, when v is made of the values catalogs return most (nil, bool,
// int, string, json.RawMessage, []string, []any and map[string]any of
// them): every MCP result is. It reports false, having appended nothing,
// for anything else, or a string encoding/json escapes differently (one
// holding U+2028, U+2029 or invalid UTF-8), which appendJSONValue then encodes by
// reflection. Walking the value directly spares a result the encoder's
// reflection on every call.
func appendPlainJSON(buf []byte, v any) ([]byte, bool) {
	start := len(buf)
	out, ok := appendPlain(buf, v)
	if !ok {
		return buf[:start], false
	}
	return out, true
}

func appendPlain(buf []byte, v any) ([]byte, bool) {
	switch x := v.(type) {
	case nil:
		return append(buf, "null"...), true
	case bool:
		return strconv.AppendBool(buf, x), true
	case int:
		return strconv.AppendInt(buf, int64(x), 10), true
	case string:
		return appendPlainString(buf, x)
	case json.RawMessage:
		if x == nil {
			return append(buf, "null"...), true
		}
		// What the encoder does with a RawMessage: compact it, unescaped.
		w := bytes.NewBuffer(buf)
		if len(x) == 0 || json.Compact(w, x) != nil {
			return buf, false
		}
		return w.Bytes(), true
	case []string:
		return appendPlainArray(buf, x, appendPlainString)
	case []any:
		return appendPlainArray(buf, x, appendPlain)
	case map[string]any:
		if x == nil {
			return append(buf, "null"...), true
		}
		var room [8]string
		keys := room[:0]
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		buf = append(buf, '{')
		for i, k := range keys {
			if i > 0 {
				buf = append(buf, ',')
			}
			var ok bool
			if buf, ok = appendPlainString(buf, k); !ok {
				return buf, false
			}
			buf = append(buf, ':')
			if buf, ok = appendPlain(buf, x[k]); !ok {
				return buf, false
			}
		}
		return append(buf, '}'), true
	}
	return buf, false
}

// appendPlainArray appends x as encoding/json writes a slice (nil as
// null), each element by each.
func appendPlainArray[T any](buf []byte, x []T, each func([]byte, T) ([]byte, bool)) ([]byte, bool) {
	if x == nil {
		return append(buf, "null"...), true
	}
	buf = append(buf, '[')
	for i, e := range x {
		if i > 0 {
			buf = append(buf, ',')
		}
		var ok bool
		if buf, ok = each(buf, e); !ok {
			return buf, false
		}
	}
	return append(buf, ']'), true
}

// appendPlainString is jsonx.AppendString, which escapes as encoding/json
// does except for U+2028, U+2029 and invalid UTF-8 (which the encoder
// writes as \ufffd, not raw): a string holding any is left to the encoder.
func appendPlainString(buf []byte, s string) ([]byte, bool) {
	if strings.Contains(s, "\u2028") || strings.Contains(s, "\u2029") || !utf8.ValidString(s) {
		return buf, false
	}
	return jsonx.AppendString(buf, s), true
}

// toolOutcome maps a terminal tool status to the task outcome.
func (s *step) toolOutcome(res ledger.ToolResult) *event.Outcome {
	switch res.Status {
	case outcome.ToolPolicyDenied:
		return &event.Outcome{Status: event.StatusPolicyDenied, Rule: ruleOf(res.Rule)}
	case outcome.ToolWorkLimit, outcome.ToolOutputLimit:
		limit := res.Limit
		if limit == "" {
			limit = outcome.LimitToolOutputBytes
		}
		return &event.Outcome{Status: event.StatusLimitExceeded, Limit: limit}
	case outcome.ToolTimedOut:
		return &event.Outcome{Status: event.StatusTimedOut}
	case outcome.ToolCancelled:
		if o := s.interrupted(); o != nil {
			return o
		}
		return &event.Outcome{Status: event.StatusCancelled, Reason: s.t.cancelReason()}
	case outcome.ToolCleanupFailed:
		return &event.Outcome{Status: event.StatusFailed, Code: outcome.FailToolCleanup, Delivery: outcome.ResponseReceived}
	case outcome.ToolInvalidArguments:
		return &event.Outcome{Status: event.StatusFailed, Code: outcome.FailInvalidToolArguments, Delivery: outcome.NotSent}
	}
	code := res.Code
	if code == "" {
		code = outcome.FailToolExecution
	}
	d := res.Delivery
	if d == "" {
		d = outcome.ResponseReceived
	}
	return &event.Outcome{Status: event.StatusFailed, Code: code, Delivery: d}
}
