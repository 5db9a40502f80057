package ledger

import (
	"context"
	"strconv"

	"github.com/pabloagent/pablo/ledger/outcome"

	"github.com/pabloagent/pablo/authority"
)

// ModelCall asks [Root.ReserveModelCall] to admit one model request.
type ModelCall struct {
	// ID names the call; empty means a fresh ID from the root's source.
	ID string
	// Route names the model route or profile, for the record.
	Route string
	// ContextBytes is the request's size, checked against context_bytes.
	ContextBytes uint64
	// TokenBound and CostBound are the adapter-attested per-call upper bounds
	// (max_call_tokens, max_call_cost_microusd). A finite total_tokens or cost
	// ceiling anywhere up the tree requires the matching bound; the full
	// bound is reserved until settlement.
	TokenBound Limit
	CostBound  Limit
}

// ModelSettlement reports how a model call ended.
type ModelSettlement struct {
	// Status is the call's status: completed, failed, cancelled, timed_out, ...
	Status outcome.Status
	// Delivery is required. NotSent releases the reservation to zero (a
	// dispatched call still counts); MayHaveBeenSent keeps it.
	Delivery outcome.Delivery
	// Reported says the provider sent usage; when false Usage is ignored and
	// every usage field is unknown. Set individual fields Unknown for the ones
	// the provider left out.
	Reported bool
	Usage    Usage
	// CostReported says CostMicroUSD is the provider's figure; when false the
	// cost is unknown.
	CostReported bool
	CostMicroUSD uint64
	// Error is the failure code, if any.
	Error outcome.FailureCode
	// Result, when set, references the stored response (what a resumed
	// task rebuilds its history from); see [Root.PutResult].
	Result ResultRef
}

// ToolCall asks [Root.AdmitToolCall] to admit one tool call.
type ToolCall struct {
	// ID is the provider's call ID; required and unique within the agent.
	ID string
	// Name is the qualified capability ID ("fs.read", "mcp/notes/read_note").
	Name string
	// ArgumentsDigest identifies the exact arguments, e.g. "sha256:<hex>",
	// without recording their content.
	ArgumentsDigest string
	// InputBytes is the arguments' size, checked against tool_input_bytes.
	InputBytes uint64
	// IdempotencyKey is the call's stable key (pablo.IdempotencyKey): the
	// one its side effect carries, recorded so a host can match a server's
	// or a script's deduplication log to the call. Empty records none.
	IdempotencyKey string
	// Decision is the authority's decision. A denied call is recorded but
	// reserves nothing and cannot be dispatched: settle it with
	// policy_denied.
	Decision authority.Decision
}

// ToolSettlement reports how a tool call ended.
type ToolSettlement struct {
	Status   outcome.ToolStatus
	Delivery outcome.Delivery
	// OutputBytes is the serialized result's size, checked against
	// tool_output_bytes.
	OutputBytes uint64
	// Result references the stored result, if any.
	Result ResultRef
	// Error is a failure code or error category, never error text that could
	// hold a secret.
	Error string
	// Decision, for a call the tool itself denied when it ran (a resource
	// rule, workspace confinement, the literal command policy), is the
	// decision that denied it; it is recorded with the settlement and
	// replaces the admission's decision in recovery.
	Decision authority.Decision
	// Counted, for a call settled before it was dispatched, charges it as
	// a dispatched tool call although it never left the process (a call
	// its approver rejected): the tool-call ceiling is spent, the record
	// still says not_sent, and recovery never sees it as sent.
	Counted bool
}

// limitOrder is the order in which a model call's ceilings are checked: a
// token failure is reported before a cost failure.
const (
	checkModelCalls = iota
	checkContextBytes
	checkTokens
	checkCost
	checkCount
)

// ReserveModelCall implements [Ledger]: it checks the deadline, model_calls,
// context_bytes, total_tokens and cost for the agent and every ancestor,
// reserves one model call and the full attested bounds, and records the call
// as admitted, durable at the task's next barrier: its own Dispatch, or
// an earlier barrier another agent of the task reaches first. A crash
// between the two leaves the call admitted, never dispatched: retryable.
func (r *Root) ReserveModelCall(ctx context.Context, agentID string, req ModelCall) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	r.mu.Lock()
	a, err := r.usable(agentID, "reserve a model call for")
	if err == nil {
		err = r.checkModel(a, &req)
	}
	if err == nil && req.ID == "" {
		req.ID = r.ids.NewID()
	}
	if err == nil {
		err = a.checkNewCall(req.ID)
	}
	if err != nil {
		r.mu.Unlock()
		return "", err
	}
	tb, _ := req.TokenBound.Value()
	cb, _ := req.CostBound.Value()
	for x := a; x != nil; x = x.parent {
		x.c.modelRes++
		x.c.tokensRes += tb
		x.c.costRes += cb
	}
	a.steps++
	a.open++
	a.admit(req.ID, call{kind: ModelCallKind, state: CallAdmitted, reserved: true,
		tokenRes: tb, costRes: cb, tokenBnd: req.TokenBound, costBnd: req.CostBound})
	if r.logs() {
		r.record(Record{Kind: RecordCall, Time: r.clock(), Call: &CallRecord{
			CallID: req.ID, AgentID: a.id, Kind: ModelCallKind, State: CallAdmitted, Step: a.steps, Name: req.Route,
			InputBytes: req.ContextBytes, TokenBound: req.TokenBound, CostBound: req.CostBound,
		}})
	}
	return req.ID, r.unlockAccepted(ctx)
}

func (r *Root) checkModel(a *agent, req *ModelCall) error {
	if err := checkDeadline(a, r.instant()); err != nil {
		return err
	}
	for step := range checkCount {
		for x := a; x != nil; x = x.parent {
			c := &x.c
			var (
				l          Limit
				used, more uint64
				kind       outcome.LimitKind
				bound      Limit
			)
			switch step {
			case checkModelCalls:
				l, used, more, kind = x.limits.ModelCalls, c.modelCalls+c.modelRes, 1, outcome.LimitModelCalls
			case checkContextBytes:
				l, more, kind = x.limits.ContextBytes, req.ContextBytes, outcome.LimitContextBytes
			case checkTokens:
				l, used, kind, bound = x.limits.TotalTokens, c.tokens+c.tokensRes, outcome.LimitTotalTokens, req.TokenBound
				more, _ = bound.Value()
			case checkCost:
				l, used, kind, bound = x.limits.CostMicroUSD, c.cost+c.costRes, outcome.LimitCost, req.CostBound
				more, _ = bound.Value()
			}
			max, finite := l.Value()
			if !finite {
				continue
			}
			if (step == checkTokens || step == checkCost) && !bound.IsFinite() {
				return &LimitError{Kind: kind, AgentID: x.id, Limit: max, NoBound: true}
			}
			if (step == checkTokens && c.tokensUnknown) || (step == checkCost && c.costUnknown) {
				// An unknown charge could already exceed the ceiling.
				return &LimitError{Kind: kind, AgentID: x.id, Limit: max, Used: used, Requested: more}
			}
			if !l.Allows(used, more) {
				return &LimitError{Kind: kind, AgentID: x.id, Limit: max, Used: used, Requested: more}
			}
		}
	}
	return nil
}

func (a *agent) checkNewCall(id string) error {
	if id == "" {
		return &InvalidError{Field: "call ID", Reason: "must not be empty"}
	}
	if a.hasCall(id) {
		return &StateError{What: "call", ID: id, Op: "admit", Reason: "agent " + a.id + " already has a call with this ID"}
	}
	return nil
}

// The tags of a settled call's kind in agent.settled.
const (
	tagModel uint8 = iota + 1
	tagTool
)

// hasCall reports whether the agent has a call with this ID, open or
// settled.
func (a *agent) hasCall(id string) bool {
	if a.calls[id] != nil {
		return true
	}
	_, ok := a.settledKind(id)
	return ok
}

// settledKind returns the kind of the agent's settled call id, and whether
// it has one.
func (a *agent) settledKind(id string) (CallKind, bool) {
	switch tag, ok := a.settled.Tag(id); {
	case ok && tag == tagModel:
		return ModelCallKind, true
	case ok && tag == tagTool:
		return ToolCallKind, true
	}
	k, ok := a.settledOdd[id]
	return k, ok
}

// admit opens call id as c, in a call a settled one left when there is
// one: a task allocates no call a turn.
func (a *agent) admit(id string, c call) *call {
	var p *call
	if n := len(a.free); n > 0 {
		p, a.free = a.free[n-1], a.free[:n-1]
	} else {
		p = new(call)
	}
	*p = c
	a.calls[id] = p
	return p
}

// settle marks c, the agent's call id, settled: it leaves the open calls
// for the settled ones, and is kept for the next admission.
func (a *agent) settle(id string, c *call) {
	a.open--
	delete(a.calls, id)
	kind := c.kind
	*c = call{}
	a.free = append(a.free, c)
	switch kind {
	case ModelCallKind:
		a.settled.Add(id, tagModel)
	case ToolCallKind:
		a.settled.Add(id, tagTool)
	default: // only a resumed record names another kind
		if a.settledOdd == nil {
			a.settledOdd = map[string]CallKind{}
		}
		a.settledOdd[id] = kind
	}
}

// AdmitToolCall implements [Ledger]. For an allowed call it checks the
// deadline, tool_calls and tool_input_bytes for the agent and every ancestor
// and reserves one tool call; a denied call reserves nothing. Either way the
// call and its decision are recorded as admitted, durable at the next
// barrier (its Dispatch or, for a call never dispatched, its settlement).
func (r *Root) AdmitToolCall(ctx context.Context, agentID string, req ToolCall) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r.mu.Lock()
	a, err := r.usable(agentID, "admit a tool call for")
	if err == nil {
		err = a.checkNewCall(req.ID)
	}
	if err == nil && req.Decision.Allowed {
		err = r.checkTool(a, req.InputBytes)
	}
	if err != nil {
		r.mu.Unlock()
		return err
	}
	if req.Decision.Allowed {
		for x := a; x != nil; x = x.parent {
			x.c.toolRes++
		}
	}
	a.steps++
	a.open++
	a.admit(req.ID, call{kind: ToolCallKind, state: CallAdmitted, reserved: req.Decision.Allowed})
	if r.logs() {
		r.record(Record{Kind: RecordCall, Time: r.clock(), Call: &CallRecord{
			CallID: req.ID, AgentID: a.id, Kind: ToolCallKind, State: CallAdmitted, Step: a.steps, Name: req.Name,
			ArgumentsDigest: req.ArgumentsDigest, InputBytes: req.InputBytes, IdempotencyKey: req.IdempotencyKey,
			Decision: recorded(req.Decision),
		}})
	}
	return r.unlockAccepted(ctx)
}

func (r *Root) checkTool(a *agent, inputBytes uint64) error {
	if err := checkDeadline(a, r.instant()); err != nil {
		return err
	}
	for x := a; x != nil; x = x.parent {
		used := x.c.toolCalls + x.c.toolRes
		if !x.limits.ToolCalls.Allows(used, 1) {
			max, _ := x.limits.ToolCalls.Value()
			return &LimitError{Kind: outcome.LimitToolCalls, AgentID: x.id, Limit: max, Used: used, Requested: 1}
		}
	}
	return checkBytes(a, outcome.LimitToolInputBytes, inputBytes)
}

// lookup finds an agent's call; r.mu must be held.
func (r *Root) lookup(agentID, callID, op string, kind CallKind) (*agent, *call, error) {
	if r.err != nil {
		return nil, nil, r.err
	}
	a := r.agents[agentID]
	if a == nil {
		return nil, nil, &StateError{What: "agent", ID: agentID, Op: op, Reason: reasonUnknown}
	}
	c := a.calls[callID]
	if c == nil {
		settledKind, settled := a.settledKind(callID)
		switch {
		case !settled:
			return nil, nil, &StateError{What: "call", ID: callID, Op: op, Reason: reasonUnknown}
		case kind != "" && settledKind != kind:
			return nil, nil, &StateError{What: "call", ID: callID, Op: op, State: string(CallSettled), Reason: "it is a " + string(settledKind) + " call"}
		}
		return nil, nil, &StateError{What: "call", ID: callID, Op: op, State: string(CallSettled), Reason: "the call was already settled; a call settles exactly once"}
	}
	if kind != "" && c.kind != kind {
		return nil, nil, &StateError{What: "call", ID: callID, Op: op, State: string(c.state), Reason: "it is a " + string(c.kind) + " call"}
	}
	return a, c, nil
}

// Dispatch implements [Ledger]. It turns the call's reservation into a charged
// model or tool call and records the call as dispatched. It is a barrier:
// when it returns, the dispatch and every record accepted before it are
// durable, so that a crash from here on reports the call's outcome as
// unknown. Call it immediately before the request leaves the process.
func (r *Root) Dispatch(ctx context.Context, agentID, callID string) error {
	r.mu.Lock()
	a, c, err := r.lookup(agentID, callID, "dispatch", "")
	if err == nil && c.state != CallAdmitted {
		err = &StateError{What: "call", ID: callID, Op: "dispatch", State: string(c.state), Reason: "a call is dispatched once"}
	}
	if err == nil && !c.reserved {
		err = &StateError{What: "call", ID: callID, Op: "dispatch", State: string(c.state), Reason: "the authority denied it; settle it with policy_denied"}
	}
	if err != nil {
		r.mu.Unlock()
		return err
	}
	for x := a; x != nil; x = x.parent {
		if c.kind == ModelCallKind {
			x.c.modelRes--
			x.c.modelCalls++
		} else {
			x.c.toolRes--
			x.c.toolCalls++
		}
	}
	c.state = CallDispatched
	if r.logs() {
		r.record(Record{Kind: RecordCall, Time: r.clock(), Call: &CallRecord{
			CallID: callID, AgentID: a.id, Kind: c.kind, State: CallDispatched,
		}})
	}
	r.mu.Unlock()
	return r.flush(ctx)
}

// SettleModelCall implements [Ledger]. It releases the call's reservation and
// charges, for the agent and every ancestor:
//   - never dispatched: nothing (delivery is recorded as not_sent);
//   - not_sent: zero tokens and cost, known zero usage (the call still counts);
//   - may_have_been_sent: the reservation (the bound) when there is one;
//   - otherwise the actual when known, the bound when not, or unknown when
//     there is neither.
//
// An actual above its bound is charged and then reported as a
// [*BoundError] (tokens before cost). A second settlement fails with
// [ErrAlreadySettled] and charges nothing. It is not a barrier: the
// settlement is durable with the next one, and a crash before it reads the
// call as an unknown outcome.
func (r *Root) SettleModelCall(ctx context.Context, agentID, callID string, s ModelSettlement) error {
	if !s.Delivery.Valid() {
		return &InvalidError{Field: "ModelSettlement.Delivery", Reason: "must be not_sent, may_have_been_sent or response_received, got " + strconv.Quote(string(s.Delivery))}
	}
	if s.Status == "" {
		return &InvalidError{Field: "ModelSettlement.Status", Reason: "must not be empty"}
	}
	r.mu.Lock()
	a, c, err := r.lookup(agentID, callID, "settle", ModelCallKind)
	if err != nil {
		r.mu.Unlock()
		return err
	}
	rec := CallRecord{CallID: callID, AgentID: a.id, Kind: ModelCallKind, State: CallSettled,
		Status: string(s.Status), Delivery: s.Delivery, Error: string(s.Error), Result: s.Result}
	var violation error
	if c.state == CallAdmitted {
		rec.Delivery = outcome.NotSent
		for x := a; x != nil; x = x.parent {
			x.c.modelRes--
			x.c.tokensRes -= c.tokenRes
			x.c.costRes -= c.costRes
		}
	} else {
		usage, cost := Usage{}, Count{}
		if s.Delivery != outcome.NotSent {
			usage = unknownUsage()
			if s.Reported {
				usage = s.Usage
			}
			cost = unknownCount()
			if s.CostReported {
				cost = known(s.CostMicroUSD)
			}
		}
		tokCharge, tokErr := charge(usage.Charge(), c.tokenBnd, s.Delivery)
		costCharge, costErr := charge(cost, c.costBnd, s.Delivery)
		if tokErr != nil {
			violation = &BoundError{CallID: callID, Kind: outcome.LimitTotalTokens, Bound: tokErr.bound, Actual: tokErr.actual}
		} else if costErr != nil {
			violation = &BoundError{CallID: callID, Kind: outcome.LimitCost, Bound: costErr.bound, Actual: costErr.actual}
		}
		for x := a; x != nil; x = x.parent {
			x.c.tokensRes -= c.tokenRes
			x.c.costRes -= c.costRes
			x.c.tokens += tokCharge.N
			x.c.tokensUnknown = x.c.tokensUnknown || tokCharge.Unknown
			x.c.cost += costCharge.N
			x.c.costUnknown = x.c.costUnknown || costCharge.Unknown
			x.c.usage = x.c.usage.add(usage)
			x.c.costActual = x.c.costActual.add(cost)
		}
		rec.Usage, rec.CostMicroUSD, rec.ChargedTokens, rec.ChargedCost = usage, cost, tokCharge, costCharge
		if violation != nil && rec.Error == "" {
			rec.Error = string(outcome.FailAccountingBoundViolated)
		}
	}
	if err := r.settled(ctx, a, c, rec, false); err != nil {
		return err
	}
	return violation
}

// settled marks c settled, records rec and releases r.mu (which must be
// held), then flushes when barrier is set.
func (r *Root) settled(ctx context.Context, a *agent, c *call, rec CallRecord, barrier bool) error {
	a.settle(rec.CallID, c)
	if r.logs() {
		kept := rec // allocated only when recorded
		r.record(Record{Kind: RecordCall, Time: r.clock(), Call: &kept})
	}
	if !barrier {
		return r.unlockAccepted(ctx)
	}
	r.mu.Unlock()
	return r.flush(ctx)
}

type overBound struct{ bound, actual uint64 }

// charge decides what one dispatched call charges against a ceiling.
func charge(actual Count, bound Limit, d outcome.Delivery) (Count, *overBound) {
	if d == outcome.NotSent {
		return known(0), nil
	}
	b, hasBound := bound.Value()
	var over *overBound
	if hasBound && !actual.Unknown && actual.N > b {
		over = &overBound{bound: b, actual: actual.N}
	}
	switch {
	case actual.Unknown && hasBound:
		return known(b), nil
	case actual.Unknown:
		return actual, nil
	case d == outcome.MayHaveBeenSent && hasBound && b > actual.N:
		return known(b), over
	}
	return actual, over
}

// unknownUsage returns a Usage whose every field is unknown.
func unknownUsage() Usage {
	u := unknownCount()
	return Usage{InputTokens: u, OutputTokens: u, CacheReadTokens: u, CacheWriteTokens: u}
}

// SettleToolCall implements [Ledger]. A call settled without being dispatched
// releases its reservation, counts nothing and is recorded as not_sent. A
// dispatched call whose OutputBytes exceed a tool_output_bytes ceiling is
// recorded with status output_limit and no result, and the method returns the
// [*LimitError]. A second settlement fails with [ErrAlreadySettled]. It is a
// barrier: the settlement, its result and every record accepted before them
// are durable when it returns.
func (r *Root) SettleToolCall(ctx context.Context, agentID, callID string, s ToolSettlement) error {
	if !s.Status.Valid() {
		return &InvalidError{Field: "ToolSettlement.Status", Reason: "unknown tool status " + strconv.Quote(string(s.Status))}
	}
	if !s.Delivery.Valid() {
		return &InvalidError{Field: "ToolSettlement.Delivery", Reason: "must be not_sent, may_have_been_sent or response_received, got " + strconv.Quote(string(s.Delivery))}
	}
	if s.Result != "" && !s.Result.Valid() {
		return &InvalidError{Field: "ToolSettlement.Result", Reason: "must be a ResultRef from PutResult, got " + strconv.Quote(string(s.Result))}
	}
	r.mu.Lock()
	a, c, err := r.lookup(agentID, callID, "settle", ToolCallKind)
	if err != nil {
		r.mu.Unlock()
		return err
	}
	rec := CallRecord{CallID: callID, AgentID: a.id, Kind: ToolCallKind, State: CallSettled,
		Status: string(s.Status), Delivery: s.Delivery, OutputBytes: s.OutputBytes, Result: s.Result, Error: s.Error, Decision: recorded(s.Decision)}
	if c.state == CallAdmitted && c.reserved && s.Counted {
		rec.Counted = true
	}
	var limitErr error
	if c.state == CallAdmitted {
		rec.Delivery = outcome.NotSent
		if c.reserved {
			for x := a; x != nil; x = x.parent {
				x.c.toolRes--
				if s.Counted {
					x.c.toolCalls++
				}
			}
		}
	} else if limitErr = checkBytes(a, outcome.LimitToolOutputBytes, s.OutputBytes); limitErr != nil {
		rec.Status, rec.Result = string(outcome.ToolOutputLimit), ""
	}
	if err := r.settled(ctx, a, c, rec, true); err != nil {
		return err
	}
	return limitErr
}
