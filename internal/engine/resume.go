package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/pabloagent/pablo/approval"
	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/children"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/internal/eventlog"
	"github.com/pabloagent/pablo/internal/jsonx"
	"github.com/pabloagent/pablo/internal/redact"
	"github.com/pabloagent/pablo/internal/textx"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/ledger/outcome"
	"github.com/pabloagent/pablo/model"
)

// UnknownPolicy is what a resumed task does with a call whose outcome is
// unknown (options.resume.unknown).
type UnknownPolicy string

// Unknown-outcome policies.
const (
	// UnknownReport gives the model a typed unknown_outcome result and
	// lets it decide.
	UnknownReport UnknownPolicy = "report"
	// UnknownAsk asks the task's approver: allowed, the model gets the
	// unknown_outcome result; refused (or no approver), the task ends.
	UnknownAsk UnknownPolicy = "ask"
	// UnknownFail ends the task failed, naming the call.
	UnknownFail UnknownPolicy = "fail"
)

// ErrNotResumable is the kind of the error Resume returns for a task its
// records cannot continue (the root's pablo.ErrNotResumable).
var ErrNotResumable = errors.New("pablo: task cannot be resumed")

// CodeUnknownOutcome is the status of the tool result a resumed task's
// model gets for a call whose outcome is unknown, and the error its
// settlement records.
const CodeUnknownOutcome = "unknown_outcome"

// codeHostStopped is the error a model call in flight when its host
// stopped is settled with by the resume.
const codeHostStopped outcome.FailureCode = "host_stopped"

// ResumeRequest is an interrupted task to continue.
type ResumeRequest struct {
	TaskID string
	// Approver answers the resumed task's approval requests (every one is
	// asked again: no answer of the stopped host is reused).
	Approver Approver
	// Deadline, when set, replaces the task's deadline; zero keeps the
	// original (its start plus its duration ceiling).
	Deadline time.Time
	// History is the conversation the task continues (a session's
	// earlier turns), as Request.History.
	History []model.Message
	// Settled, when set, is called once the task settled, before Done
	// closes.
	Settled func(*Result)
	// Roles are the roles the host gives the resumed task, as
	// Request.Roles: the ledger does not keep a task's roles.
	Roles []string
	// Kind is the resumed task's kind, as Request.Kind: the ledger does
	// not keep it, so a host that started the task with a kind passes it
	// again.
	Kind string
}

// resumeState is what a resumed task continues from: its ledger's
// records, sorted by agent for each agent's loop.
type resumeState struct {
	rs   *ledger.Resumption
	info event.Resume
	// agents are each agent's records, by agent ID (the root's and every
	// child's the ledger holds).
	agents map[string]*agentResume
}

// agentResume is one agent's records before the resume.
type agentResume struct {
	info event.Resume
	// turns are the agent's recorded model responses, in order.
	turns []ledger.ResultRef
	// calls are the agent's tool calls by Pablo's call ID.
	calls map[string]*pastCall
	// openModel are the agent's model calls the stop left open.
	openModel []ledger.OpenCall
}

// pastCall is one tool call's records before the resume.
type pastCall struct {
	admitted, dispatched, settled *ledger.CallRecord
	dispatchedAt                  time.Time
}

// Resume continues the interrupted task req.TaskID from the runtime's
// store (see [ledger.Resume] for the lease and the rebuilt ledger), in the
// background, as Start runs a new one.
func (r *Runtime) Resume(ctx context.Context, req ResumeRequest) (*Task, error) {
	if r.opts.Store == nil {
		return nil, fmt.Errorf("%w: the runtime has no store (RuntimeOptions.Store) to resume task %q from", ErrNotResumable, req.TaskID)
	}
	if err := r.admit(); err != nil {
		return nil, err
	}
	if r.opts.Reap != nil {
		r.reapOnce.Do(func() { r.opts.Reap(ctx) })
	}
	t, err := r.resumedTask(ctx, req)
	if err != nil {
		r.untrack(nil)
		return nil, err
	}
	return r.launch(ctx, t), nil
}

// resumedTask takes the task over and rebuilds what its loop needs.
func (r *Runtime) resumedTask(ctx context.Context, req ResumeRequest) (*Task, error) {
	// The roles are checked before the task is taken over.
	auth, err := r.taskAuthority(req.Roles)
	if err != nil {
		return nil, err
	}
	rs, err := ledger.Resume(ctx, ledger.ResumeOptions{Store: r.opts.Store, TaskID: req.TaskID, Clock: r.opts.Clock, IDs: idFunc(r.opts.NewID),
		TrustedPayloads: true, Deadline: req.Deadline})
	if err != nil {
		return nil, err
	}
	if rs.Task.Input == "" {
		return nil, fmt.Errorf("%w: task %q was recorded without its input (it started under a runtime without a store, or before inputs were kept); run it again instead", ErrNotResumable, req.TaskID)
	}
	data, err := rs.Root.Result(ctx, rs.Task.Input)
	if err != nil {
		return nil, fmt.Errorf("%w: task %q: its input: %v", ErrNotResumable, req.TaskID, err)
	}
	var input string
	if err := json.Unmarshal(data, &input); err != nil {
		return nil, fmt.Errorf("%w: task %q: its input does not read back: %v", ErrNotResumable, req.TaskID, err)
	}
	if err := checkConversation(req.History); err != nil {
		return nil, err
	}
	er := Request{Input: input, History: req.History, Approver: req.Approver, Settled: req.Settled, Roles: req.Roles, Kind: req.Kind}
	if l := rs.Task.Session; l != nil {
		er.SessionID, er.Workspace, er.Turn = l.SessionID, l.Workspace, l.Turn
	}
	// A resumed task holds the roles the host gives it again: the ledger
	// does not keep them.
	t := &Task{rt: r, root: rs.Root, req: er, finished: make(chan struct{}), auth: auth, bound: req.Roles != nil}
	t.cond = sync.NewCond(&t.mu)
	t.log = eventlog.New(&t.mu)
	t.resume = r.resumeStateOf(rs, req)
	return t, nil
}

// resumeStateOf sorts the records of rs by agent, for each agent's loop.
func (r *Runtime) resumeStateOf(rs *ledger.Resumption, req ResumeRequest) *resumeState {
	root := rs.Task.RootAgentID
	st := &resumeState{rs: rs, agents: map[string]*agentResume{}}
	base := event.Resume{Attempt: 2, Fingerprint: rs.Task.Fingerprint, NewDeadline: !req.Deadline.IsZero()}
	if d := r.opts.Deployment; d != nil {
		base.ResumedUnder = d.Fingerprint
	}
	now := time.Now()
	if r.opts.Clock != nil {
		now = r.opts.Clock.Now()
	}
	if d := now.Sub(rs.Interrupted); d > 0 {
		base.DowntimeMS = uint64(d.Milliseconds())
	}
	agent := func(id string) *agentResume {
		a := st.agents[id]
		if a == nil {
			a = &agentResume{info: base, calls: map[string]*pastCall{}}
			a.info.Completed, a.info.Retried, a.info.Unknown = []string{}, []string{}, []string{}
			st.agents[id] = a
		}
		return a
	}
	for _, a := range rs.Report.Agents {
		agent(a.AgentID)
	}
	attempt := 2
	for i := range rs.Records {
		rec := &rs.Records[i]
		if rec.Kind == ledger.RecordEvent && rec.Event.AgentID == root && rec.Event.Type == string(event.RunResumed) {
			attempt++
		}
		c := rec.Call
		if rec.Kind != ledger.RecordCall || c == nil {
			continue
		}
		a := agent(c.AgentID)
		if c.Kind == ledger.ModelCallKind {
			if c.State == ledger.CallSettled && c.Result != "" && c.Status == string(event.StatusCompleted) {
				a.turns = append(a.turns, c.Result)
			}
			continue
		}
		pc := a.calls[c.CallID]
		if pc == nil {
			pc = &pastCall{}
			a.calls[c.CallID] = pc
		}
		switch c.State {
		case ledger.CallAdmitted:
			pc.admitted = c
		case ledger.CallDispatched:
			pc.dispatched, pc.dispatchedAt = c, rec.Time
		case ledger.CallSettled:
			pc.settled = c
		}
	}
	for _, oc := range rs.OpenCalls() {
		a := agent(oc.AgentID)
		switch {
		case oc.Kind == ledger.ModelCallKind:
			a.openModel = append(a.openModel, oc)
			if oc.State == ledger.CallDispatched {
				a.info.ResentModelCalls++
			}
		case oc.State == ledger.CallDispatched:
			a.info.Unknown = append(a.info.Unknown, oc.CallID)
		default:
			a.info.Retried = append(a.info.Retried, oc.CallID)
		}
	}
	for _, c := range rs.Report.Completed {
		if c.Kind == ledger.ToolCallKind {
			a := agent(c.AgentID)
			a.info.Completed = append(a.info.Completed, c.CallID)
		}
	}
	for _, a := range st.agents {
		a.info.Attempt = attempt
	}
	st.info = agent(root).info
	return st
}

// resumeTurns rebuilds the agent's history from its recorded turns and
// settles what the stop left open, each call by its class; it returns
// the agent's outcome, or nil when the loop goes on with a new model
// turn. The root first puts its children back under its supervisor
// (resumeChildren).
func (s *step) resumeTurns() *event.Outcome {
	st := s.res
	resps := make([]*model.Response, len(st.turns))
	for i, ref := range st.turns {
		resp, err := s.recordedResponse(ref)
		if err != nil {
			return &event.Outcome{Status: event.StatusFailed, Code: outcome.FailEventSinkIO, Delivery: outcome.NotSent,
				Reason: s.reason("resume: a recorded model response does not read back: %v", err)}
		}
		resps[i] = resp
	}
	if !s.conf.child {
		if o := s.resumeChildren(resps); o != nil {
			return o
		}
	}
	for _, oc := range st.openModel {
		// A model call has no side effect: one in flight is sent again
		// (charged again), after this one is settled as what it may have
		// been.
		settle := ledger.ModelSettlement{Status: event.StatusFailed, Delivery: outcome.MayHaveBeenSent, Error: codeHostStopped}
		if oc.State == ledger.CallAdmitted {
			settle.Delivery = outcome.NotSent
		}
		if err := s.t.root.SettleModelCall(s.ctx, s.agent, oc.CallID, settle); err != nil && !errors.Is(err, ledger.ErrBoundViolated) {
			return s.ledgerOutcome(err)
		}
	}
	for i, resp := range resps {
		if calls := s.pairCalls(resp.ToolCalls, s.histTurns+1); len(calls) > 0 && &calls[0] != &resp.ToolCalls[0] {
			resp.ToolCalls = calls
		}
		s.addHistory(model.Message{Role: model.RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls, Reasoning: resp.Reasoning})
		if len(resp.ToolCalls) == 0 {
			if i == len(resps)-1 {
				return s.final(resp.Text)
			}
			continue
		}
		turn := s.histTurns
		for j, call := range resp.ToolCalls {
			if o := s.interrupted(); o != nil {
				return o
			}
			if o := s.resumeCall(call, callID(turn, j)); o != nil {
				return o
			}
		}
	}
	return nil
}

// resumeChildren puts the root's children back under its supervisor
// before its history is replayed, reading what its recorded subagent
// calls returned (resps are its recorded turns: turn i+1's calls are
// call_{i+1}_*):
//
//   - a child settled before the stop is restored settled, as the root
//     last saw it (its snapshot, with its result ID) or else as its
//     terminal record says, and runs no more;
//   - a local child the stop left running, or admitted and not yet
//     started, whose spawn the root got the result of, is readmitted
//     under its agent ID from that spawn's request, narrowed again from
//     the parent's current scope, and continues from its own records as
//     the root does (a child never started starts);
//   - any other child left open (a remote one, one started with
//     handoffs, one whose spawn's outcome the root never learned or whose
//     spawn the ledger did not retain under audit level none, or any
//     when children are no longer enabled) has its open calls settled by
//     their classes and is settled cancelled.
func (s *step) resumeChildren(resps []*model.Response) *event.Outcome {
	st := s.t.resume
	spawned := map[string]json.RawMessage{}
	spawnCall := map[string]string{} // child agent ID → its parent's spawn call ID
	// unkept: a spawn's request or result was not retained (the
	// subagent tool at audit level none), so a child may have no spawn
	// to continue from.
	unkept := false
	var order []string
	last := map[string]children.Snapshot{}
	for i, resp := range resps {
		for j, call := range resp.ToolCalls {
			pc := s.res.calls[callID(i+1, j)]
			if pc != nil && pc.admitted != nil && pc.admitted.Name == string(authority.Subagent) && isNotRetained(call.Arguments) {
				unkept = true
				continue
			}
			if pc == nil || pc.admitted == nil || pc.settled == nil || pc.admitted.Name != string(authority.Subagent) ||
				pc.settled.Status != string(outcome.ToolCompleted) || pc.settled.Result == "" {
				continue
			}
			data, err := s.readResult(pc.settled.Result)
			if err != nil {
				return s.ledgerOutcome(err)
			}
			var payload struct {
				Subagent json.RawMessage `json:"subagent"`
			}
			if json.Unmarshal(data, &payload) != nil {
				continue
			}
			if id, ok := children.SpawnedAgent(payload.Subagent); ok {
				args := call.Arguments
				if len(args) == 0 {
					args = json.RawMessage("{}")
				}
				if sha256Tag(args) == pc.admitted.ArgumentsDigest {
					spawned[id], spawnCall[id] = args, callID(i+1, j)
					order = append(order, id)
				}
			}
			for _, snap := range children.SettledSnapshots(payload.Subagent) {
				last[snap.AgentID] = snap
			}
		}
	}
	recorded := map[string]bool{}
	orphans := map[string]*event.Outcome{} // agent ID → its outcome: it is not continued
	for _, a := range st.rs.Report.Agents {
		if a.ParentID != s.agent {
			continue
		}
		recorded[a.AgentID] = true
		if a.Outcome != nil {
			if s.tree != nil {
				snap, ok := last[a.AgentID]
				if !ok {
					o := a.Outcome
					snap = children.Snapshot{AgentID: a.AgentID, ParentAgentID: s.agent, Kind: children.Kind(a.Kind), Depth: 1, State: children.StateSettled,
						Outcome: &event.Outcome{Status: o.Status, Rule: nonEmpty(o.Rule), Limit: o.Limit, Code: o.Code, Delivery: o.Delivery, Reason: o.Reason}}
				}
				_ = s.tree.Restore(snap)
			}
			continue
		}
		if spawned[a.AgentID] == nil && unkept {
			orphans[a.AgentID] = &event.Outcome{Status: event.StatusCancelled, Reason: "host_stopped: the host running the task stopped, and the resume cannot continue this child: " +
				"the deployment's audit level for the subagent tool is none, so the ledger did not retain its spawn's request"}
			continue
		}
		if o := s.readmitChild(a.AgentID, a.Kind, spawnCall[a.AgentID], spawned[a.AgentID], true); o != nil {
			orphans[a.AgentID] = o
		}
	}
	for _, id := range order {
		if !recorded[id] {
			// Admitted and never started: nothing of it ran (a remote
			// child's request never left); it starts now, as the spawn's
			// result told the model, or settles without starting.
			if o := s.readmitChild(id, "", spawnCall[id], spawned[id], false); o != nil {
				if o := s.settleUnstarted(id, spawned[id], o); o != nil {
					return o
				}
			}
		}
	}
	return s.settleOrphans(orphans)
}

// settleUnstarted settles child id, whose spawn (arguments args) its
// parent's records hold but which never started, with o, the outcome the
// resume gave it instead of starting it. The model was told its agent ID,
// so it is not left unknown: the ledger gets its agent, finished with o
// (what `ledger show`, recovery and the inspector list), and the parent's
// supervisor holds it settled (what its wait and inspect see). Nothing of
// it runs. A ledger that refuses the agent (the root's deadline passed)
// leaves it to the supervisor alone.
func (s *step) settleUnstarted(id string, args json.RawMessage, o *event.Outcome) *event.Outcome {
	kind, input := children.KindLocal, []byte(nil)
	if s.tree != nil {
		if a, err := children.ParseArguments(args, s.tree.Remotes()); err == nil {
			if a.Action == children.ActionSpawnRemote {
				kind = children.KindRemote
				input, _ = json.Marshal(a.Remote.Parts)
			} else {
				input = []byte(a.Request.Input)
			}
		}
	}
	if _, err := s.t.root.StartAgent(s.ctx, ledger.AgentSpec{ID: id, ParentID: s.agent, Kind: string(kind), InputDigest: sha256Tag(input)}); err == nil {
		c := &step{t: s.t, agent: id, payloads: s.payloads, ctx: s.ctx, base: s.base, caller: s.caller, traceID: s.traceID}
		c.hdr = s.childHeader(id, kind)
		if got, _ := c.terminal(o); got.Code == outcome.FailEventSinkIO {
			// The ledger failed: the root cannot settle either.
			return got
		}
	}
	if s.tree != nil {
		_ = s.tree.Restore(children.Snapshot{AgentID: id, ParentAgentID: s.agent, Kind: kind, Depth: 1, State: children.StateSettled, Outcome: o})
	}
	return nil
}

// nonEmpty is r as an outcome's rule: nil when empty.
func nonEmpty(r string) any {
	if r == "" {
		return nil
	}
	return r
}

// readmitChild readmits child id from its spawn arguments args, those of
// its parent's call callID (kind is its recorded agent kind; started,
// whether it has an agent record), or
// returns the outcome it settles with instead (see resumeChildren): a
// local child that cannot be continued is cancelled, saying why; a remote
// one whose request left but whose task ID is not recorded failed with an
// unknown outcome.
func (s *step) readmitChild(id, kind, callID string, args json.RawMessage, started bool) *event.Outcome {
	cancelled := func(why string) *event.Outcome {
		return &event.Outcome{Status: event.StatusCancelled, Reason: textx.Shorten("host_stopped: the host running the task stopped, and the resume cannot continue this child: "+why, ledger.MaxReasonBytes)}
	}
	switch {
	case s.tree == nil:
		return cancelled("children are not enabled in the deployment it resumes under")
	case args == nil:
		return cancelled("its spawn's result never reached its parent, whose records are the child's request")
	}
	a, err := children.ParseArguments(args, s.tree.Remotes())
	if err != nil {
		return cancelled(err.Error())
	}
	// The spawn is decided again against what the parent holds now (its
	// roles, the layers of the deployment it resumes under): a
	// delegation it may no longer make is not continued, followed or
	// sent, whatever the stopped host decided.
	req := authority.Request{Capability: authority.Subagent}
	if a.Action == children.ActionSpawnRemote {
		req.Resources = []authority.Resource{{Kind: authority.ResourceRemote, Value: a.Remote.Remote}}
	}
	d := s.conf.auth.Decide(req)
	if !d.Allowed {
		return cancelled("its parent may no longer make this delegation: " + d.Reason)
	}
	if d.NeedsApproval {
		if why := s.approveSpawn(id, callID, args, a, req, d); why != "" {
			return cancelled(why)
		}
	}
	switch {
	case a.Action == children.ActionSpawn && (!started || kind == string(children.KindLocal)):
		_, err = s.tree.Readmit(s.ctx, id, a.Request)
	case a.Action == children.ActionSpawnRemote && (!started || kind == string(children.KindRemote)):
		var bound *event.RemoteTask
		if started {
			if bound = s.t.resume.boundTask(id); bound == nil {
				return &event.Outcome{Status: event.StatusFailed, Code: outcome.FailRemoteTask, Delivery: outcome.MayHaveBeenSent,
					Reason: CodeUnknownOutcome + ": the host stopped after this remote child started and before the remote's task ID was recorded: its request may have left, and its outcome is unknown; it is not sent again"}
			}
		} else {
			bound = &event.RemoteTask{}
		}
		_, err = s.tree.ReadmitRemote(s.ctx, id, a.Remote, bound.TaskID, bound.ContextID)
	default:
		return cancelled("its spawn does not match its agent record")
	}
	if err != nil {
		return cancelled(err.Error())
	}
	return nil
}

// approveSpawn asks the task's approver about child id's spawn, which a
// resume decided again (decision d on req) and which now needs approval:
// a delegation the stopped host let through unasked is not continued,
// followed or sent until someone allows it. The request is bound to the
// spawn (the parent's call callID, its arguments args, a the parsed
// delegation) and to this resume; it is recorded like any approval, an
// approval.requested event, each step in the ledger, and an answer; an
// answer for this task is kept and honoured as the spawn call's own (see
// step.approve). It returns why the child is not continued, empty when it
// is allowed.
func (s *step) approveSpawn(id, callID string, args json.RawMessage, a children.Arguments, req authority.Request, d authority.Decision) string {
	digest := sha256Tag(args)
	masked, _ := s.t.rt.opts.Secrets.MaskJSON(args)
	ar := approval.Request{ID: approval.RequestID(s.t.root.ID(), s.agent, callID+"/resume/"+id, digest), TaskID: s.t.root.ID(), AgentID: s.agent, CallID: callID,
		Tool: authority.Subagent, Arguments: json.RawMessage(masked), ArgumentsDigest: digest, Effect: authority.EffectOf(authority.Subagent, d), Decision: d,
		Delegation: maskDelegation(delegationOf(a, s.tree), s.t.rt.opts.Secrets)}
	for _, r := range req.Resources {
		ar.Resources = append(ar.Resources, authority.Resource{Kind: r.Kind, Value: s.t.rt.opts.Secrets.String(r.Value)})
	}
	src := authority.ApprovalSourceOf(d)
	rule := fmt.Sprintf("its spawn needs approval by layer %q rule %q", src.Layer, src.RuleID)
	if o := s.emitApprovalRequested(ar); o != nil {
		return rule + ", and the request could not be recorded"
	}
	// An answer for this task given since the resume covers the spawn as
	// it covers any call of the same shape (the remote it delegates to,
	// or else its arguments).
	grant := authority.NewApprovalGrant(authority.Subagent, ar.Effect, req.Resources, digest)
	if allow, found := s.t.grants.covers(grant); found {
		if !allow {
			_ = s.recordApproval(ar, approvalRefused)
			return rule + ", and an earlier answer for this task rejected it"
		}
		if o := s.recordApproval(ar, approvalGranted); o != nil {
			return rule + ", and its approval could not be recorded"
		}
		return ""
	}
	ap := s.conf.approver
	if ap == nil {
		_ = s.recordApproval(ar, approvalNoChannel)
		return rule + ", and the resume has no approver to ask"
	}
	if o := s.recordApproval(ar, approvalAsked); o != nil {
		return rule + ", and the request could not be recorded"
	}
	answer, err := ap.Approve(s.ctx, ar)
	if o := s.afterApproval(); o != nil {
		s.recordUnanswered(ar, answer, err)
		return rule + ", and the task ended before it was answered"
	}
	switch {
	case err != nil:
		_ = s.recordApproval(ar, approvalNoChannel)
		return rule + ", and the approver could not answer"
	case answer == approval.AllowOnce || answer == approval.AllowForTask:
		// An answer for the task is the grant the same answer to the
		// spawn call records: a later spawn of the same shape, asked
		// again by this resume or called by the model, runs unasked.
		if answer == approval.AllowForTask {
			s.t.grants.add(grant, true)
		}
		if o := s.recordApproval(ar, answer); o != nil {
			return rule + ", and its approval could not be recorded"
		}
		return ""
	case answer == approval.RejectForTask:
		s.t.grants.add(grant, false)
	default:
		answer = approval.Reject
	}
	_ = s.recordApproval(ar, answer)
	return rule + ", and the approver rejected it"
}

// boundTask is the remote task the remote child id's remote bound before
// the stop, as its remote.bound event recorded it; nil when none was.
func (st *resumeState) boundTask(id string) *event.RemoteTask {
	for i := range st.rs.Records {
		rec := &st.rs.Records[i]
		if rec.Kind != ledger.RecordEvent || rec.Event.AgentID != id || rec.Event.Type != string(event.RemoteBound) {
			continue
		}
		var d event.EventData
		if json.Unmarshal(rec.Event.Payload, &d) == nil && d.RemoteTask != nil && d.RemoteTask.TaskID != "" {
			return d.RemoteTask
		}
	}
	return nil
}

// resumeCall continues one tool call of a recorded turn by its class.
func (s *step) resumeCall(call model.ToolCall, id string) *event.Outcome {
	pc := s.res.calls[id]
	switch {
	case (pc == nil || pc.admitted == nil) && isNotRetained(call.Arguments):
		// Never admitted, and its arguments were not retained (audit
		// level none): it cannot run as the model wrote it. The model is
		// told; nothing is recorded, as nothing of it happened, and a
		// later resume tells it the same.
		s.addHistory(model.Message{Role: model.RoleTool, ToolCallID: call.ID, Content: string(unretainedArgumentsResult())})
		return nil
	case pc == nil || pc.admitted == nil:
		// Never admitted: it never left the process. It runs now, like
		// any call of the turn.
		if o := s.modelCallRemains(); o != nil {
			return o
		}
		return s.toolCall(call, id)
	case pc.settled != nil:
		return s.recordedResult(call, pc)
	case pc.dispatched != nil:
		return s.unknownOutcome(call, id, pc)
	}
	if o := s.modelCallRemains(); o != nil {
		return o
	}
	return s.retryCall(call, id, pc)
}

// recordedResult puts a settled call's recorded result back in the
// history, as the model saw it; nothing is sent again. A result that
// ended the task ends it again.
func (s *step) recordedResult(call model.ToolCall, pc *pastCall) *event.Outcome {
	st := pc.settled
	status := outcome.ToolStatus(st.Status)
	back := status == outcome.ToolCompleted || status == outcome.ToolRecoverableError ||
		pc.dispatched == nil && st.Result != "" && (status == outcome.ToolPolicyDenied || status == outcome.ToolInvalidArguments)
	if !back || st.Result == "" {
		d := st.Decision
		if !d.Allowed && d.RuleID == "" && pc.admitted != nil {
			d = pc.admitted.Decision
		}
		return s.toolOutcome(ledger.ToolResult{Status: status, Code: outcome.FailureCode(st.Error), Rule: d.RuleID, Delivery: st.Delivery})
	}
	content, err := s.readResult(st.Result)
	if err != nil {
		return s.ledgerOutcome(err)
	}
	// The run of mistakes goes on as it went: a recovered mistake counts,
	// a call that ran ends the run.
	if pc.dispatched == nil && status != outcome.ToolCompleted && status != outcome.ToolRecoverableError {
		s.misses++
	} else {
		s.misses = 0
	}
	s.addHistory(model.Message{Role: model.RoleTool, ToolCallID: call.ID, Content: string(content)})
	return nil
}

// resultReader reads a stored result back; the resumed ledger, a
// [*ledger.Root], is one.
type resultReader interface {
	Result(ctx context.Context, ref ledger.ResultRef) (json.RawMessage, error)
}

// unknownResult is the typed tool result of a call whose outcome is
// unknown: what was sent, when, under which key, and that its effect may
// have happened.
type unknownResult struct {
	Status          string `json:"status"`
	Tool            string `json:"tool"`
	CallID          string `json:"call_id"`
	ArgumentsDigest string `json:"arguments_digest"`
	IdempotencyKey  string `json:"idempotency_key,omitempty"`
	DispatchedAt    string `json:"dispatched_at"`
	EffectMayHave   bool   `json:"effect_may_have_happened"`
	Message         string `json:"message"`
}

// unknownOutcome settles a call that was dispatched and never settled:
// it is never run again. Under the host's policy the model is told, the
// approver is asked first, or the task ends.
func (s *step) unknownOutcome(call model.ToolCall, id string, pc *pastCall) *event.Outcome {
	adm := pc.admitted
	res := unknownResult{Status: CodeUnknownOutcome, Tool: adm.Name, CallID: id, ArgumentsDigest: adm.ArgumentsDigest, IdempotencyKey: adm.IdempotencyKey,
		DispatchedAt: pc.dispatchedAt.UTC().Format(time.RFC3339Nano), EffectMayHave: true,
		Message: "the host stopped after this call was sent and before its result was recorded: its effect may have happened, and it is not run again. " +
			"Check its effect before you call the tool again: the same call may repeat the effect."}
	b, err := json.Marshal(res)
	if err != nil {
		return s.ledgerOutcome(err)
	}
	policy := s.t.rt.opts.ResumeUnknown
	end := policy == UnknownFail
	if policy == UnknownAsk {
		end = !s.askUnknown(adm, id)
	}
	ref, err := s.t.root.PutResult(s.ctx, json.RawMessage(b))
	if err != nil {
		return s.ledgerOutcome(err)
	}
	settle := ledger.ToolSettlement{Status: outcome.ToolRecoverableError, Delivery: outcome.MayHaveBeenSent, OutputBytes: uint64(len(b)),
		Result: ref, Error: CodeUnknownOutcome}
	if err := s.t.root.SettleToolCall(s.ctx, s.agent, id, settle); err != nil {
		return s.ledgerFailure(err, outcome.MayHaveBeenSent)
	}
	if o := s.emitToolFinished(id, adm.Name, b, 0); o != nil {
		return o
	}
	if end {
		return &event.Outcome{Status: event.StatusFailed, Code: outcome.FailToolExecution, Delivery: outcome.MayHaveBeenSent,
			Reason: s.reason("unknown_outcome: call %s (%s, idempotency key %s) was sent before the host stopped and never settled; options.resume.unknown = %q ends the task: check its effect by hand", id, adm.Name, adm.IdempotencyKey, string(policy))}
	}
	s.addHistory(model.Message{Role: model.RoleTool, ToolCallID: call.ID, Content: string(b)})
	return nil
}

// askUnknown asks the task's approver whether the task goes on past a
// call whose outcome is unknown; false without an approver.
func (s *step) askUnknown(adm *ledger.CallRecord, id string) bool {
	ap := s.conf.approver
	if ap == nil {
		return false
	}
	req := approval.Request{ID: approval.RequestID(s.t.root.ID(), s.agent, id+"/unknown", adm.ArgumentsDigest), TaskID: s.t.root.ID(), AgentID: s.agent, CallID: id,
		Tool: authority.ID(adm.Name), ArgumentsDigest: adm.ArgumentsDigest, Decision: authority.Decision{Allowed: true, NeedsApproval: true, Layer: "builtin.resume", RuleID: CodeUnknownOutcome,
			Reason: "the call was sent before the host stopped and never settled: its effect may have happened; allow to report it to the model and go on, reject to end the task"}}
	answer, err := ap.Approve(s.ctx, req)
	return err == nil && (answer == approval.AllowOnce || answer == approval.AllowForTask)
}

// retryCall runs again a call admitted and provably never dispatched:
// decided again under the current deployment and authority (an approval
// asked again), and when allowed dispatched under its admission, with its
// original idempotency key.
func (s *step) retryCall(call model.ToolCall, id string, pc *pastCall) *event.Outcome {
	args := call.Arguments
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if sha256Tag(args) != pc.admitted.ArgumentsDigest {
		// The recorded arguments were masked (they held a secret) or not
		// retained (audit level none): the call cannot be sent as it was
		// admitted. The model is told.
		b, _ := json.Marshal(ledger.RecoverableError("arguments_not_kept", "the host stopped before this call ran, and its arguments held a secret the ledger does not keep: it did not run; call it again").Output)
		code := "arguments_not_kept"
		if isNotRetained(call.Arguments) {
			b, code = unretainedArgumentsResult(), "arguments_not_retained"
		}
		ref, err := s.t.root.PutResult(s.ctx, json.RawMessage(b))
		if err != nil {
			return s.ledgerOutcome(err)
		}
		if err := s.t.root.SettleToolCall(s.ctx, s.agent, id, ledger.ToolSettlement{Status: outcome.ToolRecoverableError, Delivery: outcome.NotSent,
			Result: ref, Error: code, OutputBytes: uint64(len(b))}); err != nil {
			return s.ledgerFailure(err, outcome.NotSent)
		}
		s.addHistory(model.Message{Role: model.RoleTool, ToolCallID: call.ID, Content: string(b)})
		return nil
	}
	if s.readmit == nil {
		s.readmit = map[string]authority.Decision{}
	}
	s.readmit[id] = pc.admitted.Decision
	return s.toolCall(call, id)
}

// admitCall admits a tool call on the ledger, or, for a call a resume
// decides again, keeps the admission recorded before the stop (its
// reservation and idempotency key). A call admitted denied before the
// stop is never dispatched, whatever is decided now.
func (s *step) admitCall(rec ledger.ToolCall) error {
	if d, ok := s.readmit[rec.ID]; ok {
		delete(s.readmit, rec.ID)
		if rec.Decision.Allowed && !d.Allowed {
			return &ledger.StateError{What: "call", ID: rec.ID, Op: "resume", State: string(ledger.CallAdmitted),
				Reason: "it was admitted denied before the host stopped, so it holds no reservation to dispatch under"}
		}
		return nil
	}
	return s.t.root.AdmitToolCall(s.ctx, s.agent, rec)
}

// readmitting reports whether id is a call a resume decides again.
func (s *step) readmitting(id string) bool {
	_, ok := s.readmit[id]
	return ok
}

// settleOrphans settles the children in open that a resume does not
// continue: each open call by its class (a model call as
// may_have_been_sent, a dispatched tool call as unknown, an admitted one
// as never sent) and the child with its outcome, which its parent's wait and
// inspect then see. The root's calls of the subagent tool go on by their
// own classes.
func (s *step) settleOrphans(open map[string]*event.Outcome) *event.Outcome {
	st := s.t.resume
	if len(open) == 0 {
		return nil
	}
	for _, oc := range st.rs.OpenCalls() {
		if _, ok := open[oc.AgentID]; !ok {
			continue
		}
		var err error
		d := outcome.MayHaveBeenSent
		if oc.State == ledger.CallAdmitted {
			d = outcome.NotSent
		}
		if oc.Kind == ledger.ModelCallKind {
			err = s.t.root.SettleModelCall(s.ctx, oc.AgentID, oc.CallID, ledger.ModelSettlement{Status: event.StatusFailed, Delivery: d, Error: codeHostStopped})
		} else {
			err = s.t.root.SettleToolCall(s.ctx, oc.AgentID, oc.CallID, ledger.ToolSettlement{Status: outcome.ToolCancelled, Delivery: d, Error: CodeUnknownOutcome})
		}
		if err != nil && !errors.Is(err, ledger.ErrBoundViolated) {
			return s.ledgerOutcome(err)
		}
	}
	for _, a := range st.rs.Report.Agents {
		o, ok := open[a.AgentID]
		if !ok {
			continue
		}
		payload, _ := json.Marshal(&event.EventData{Type: event.RunFinished, Outcome: o})
		if _, err := s.t.root.Finish(s.ctx, a.AgentID, ledger.Finish{Outcome: ledgerOutcome(o), Payload: payload}); err != nil {
			return s.ledgerOutcome(err)
		}
		if s.tree != nil && a.ParentID == s.agent {
			// Its parent's wait and inspect see it settled, as it is.
			_ = s.tree.Restore(children.Snapshot{AgentID: a.AgentID, ParentAgentID: s.agent, Kind: children.Kind(a.Kind), Depth: 1, State: children.StateSettled, Outcome: o})
		}
	}
	return nil
}

// recordedTurn is a model response as the ledger keeps it, for a resume
// to rebuild the history from: masked like everything the ledger holds,
// content-addressed, referenced from the call's settlement.
type recordedTurn struct {
	Kind      string             `json:"kind"`
	Text      string             `json:"text"`
	ToolCalls []recordedToolCall `json:"tool_calls"`
	Reasoning []model.Reasoning  `json:"reasoning,omitempty"`
}

type recordedToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

const recordedTurnKind = "model_response"

// recordResponse stores resp, masked, and returns its reference.
//
// The arguments of a call to a capability at audit level none are kept
// as the not-retained marker (retainedResponse).
func (s *step) recordResponse(resp *model.Response) (ledger.ResultRef, error) {
	resp = s.retainedResponse(resp)
	if b, ok := canonicalResponse(s.t.rt.opts.Secrets, resp); ok {
		return s.t.root.PutResult(s.ctx, json.RawMessage(b))
	}
	return s.t.root.PutResult(s.ctx, recordedTurnOf(s.t.rt.opts.Secrets, resp))
}

// canonicalResponse is the recordedTurn of resp written in its canonical
// form (keys sorted, strings escaped as the ledger escapes them), so the
// ledger recognizes it as canonical without decoding it: every turn of a
// task with a durable ledger records one. ok is false for a reasoning
// entry whose data the canonical form cannot take as it is: the general
// way then says why.
func canonicalResponse(sec *redact.Set, resp *model.Response) (b []byte, ok bool) {
	text := sec.String(resp.Text)
	n := 64 + len(text)
	for _, c := range resp.ToolCalls {
		n += 48 + len(c.ID) + len(c.Name) + 2*len(c.Arguments)
	}
	buf := make([]byte, 0, n)
	buf = append(buf, `{"kind":"`+recordedTurnKind+`"`...)
	if len(resp.Reasoning) > 0 {
		buf = append(buf, `,"reasoning":[`...)
		for i, r := range resp.Reasoning {
			data, err := jsonx.Canonical(r.Data)
			if len(r.Data) == 0 || err != nil {
				return nil, false
			}
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = append(buf, `{"data":`...)
			buf = append(buf, data...)
			buf = append(buf, `,"provider":`...)
			buf = jsonx.AppendString(buf, r.Provider)
			buf = append(buf, '}')
		}
		buf = append(buf, ']')
	}
	buf = append(buf, `,"text":`...)
	buf = jsonx.AppendString(buf, text)
	buf = append(buf, `,"tool_calls":[`...)
	for i, c := range resp.ToolCalls {
		if i > 0 {
			buf = append(buf, ',')
		}
		args, _ := sec.MaskJSON(c.Arguments)
		buf = append(buf, `{"arguments":`...)
		buf = jsonx.AppendBytes(buf, args)
		buf = append(buf, `,"id":`...)
		buf = jsonx.AppendString(buf, sec.String(c.ID))
		buf = append(buf, `,"name":`...)
		buf = jsonx.AppendString(buf, sec.String(c.Name))
		buf = append(buf, '}')
	}
	return append(buf, "]}"...), true
}

// recordedTurnOf is resp, masked, as the ledger keeps it.
func recordedTurnOf(sec *redact.Set, resp *model.Response) recordedTurn {
	rt := recordedTurn{Kind: recordedTurnKind, Text: sec.String(resp.Text), ToolCalls: make([]recordedToolCall, len(resp.ToolCalls)), Reasoning: resp.Reasoning}
	for i, c := range resp.ToolCalls {
		args, _ := sec.MaskJSON(c.Arguments)
		rt.ToolCalls[i] = recordedToolCall{ID: sec.String(c.ID), Name: sec.String(c.Name), Arguments: string(args)}
	}
	return rt
}

// readResult reads a stored result back from the task's ledger.
func (s *step) readResult(ref ledger.ResultRef) (json.RawMessage, error) {
	rr, ok := s.t.root.(resultReader)
	if !ok {
		return nil, errors.New("the ledger cannot read results back")
	}
	return rr.Result(s.ctx, ref)
}

// recordedResponse reads a response recordResponse stored.
func (s *step) recordedResponse(ref ledger.ResultRef) (*model.Response, error) {
	data, err := s.readResult(ref)
	if err != nil {
		return nil, err
	}
	var rt recordedTurn
	if err := json.Unmarshal(data, &rt); err != nil {
		return nil, err
	}
	if rt.Kind != recordedTurnKind {
		return nil, fmt.Errorf("result %s is a %q, not a model response", ref, rt.Kind)
	}
	resp := &model.Response{Text: rt.Text, Reasoning: rt.Reasoning}
	for _, c := range rt.ToolCalls {
		args := json.RawMessage(c.Arguments)
		if c.Arguments == "" {
			args = nil
		}
		resp.ToolCalls = append(resp.ToolCalls, model.ToolCall{ID: c.ID, Name: c.Name, Arguments: args})
	}
	return resp, nil
}

// resumedChild is the records of child id when the task is resumed and
// the ledger holds the child's agent (a readmitted child continues it);
// nil otherwise.
func (t *Task) resumedChild(id string) *agentResume {
	if t.resume == nil {
		return nil
	}
	for _, a := range t.resume.rs.Report.Agents {
		if a.AgentID == id && a.ParentID != "" {
			return t.resume.agents[id]
		}
	}
	return nil
}
