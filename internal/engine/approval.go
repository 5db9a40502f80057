package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path"
	"strings"
	"sync"

	"github.com/pabloagent/pablo/approval"
	"github.com/pabloagent/pablo/mcp"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/children"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/internal/redact"
)

// Approver answers approval requests: the host's own, called directly.
type Approver = approval.Approver

// elicitOf is the approver's elicitation channel, nil when it has none.
func elicitOf(ap Approver) mcp.ElicitFunc {
	if e, ok := ap.(approval.Elicitor); ok {
		return e.Elicit
	}
	return nil
}

// The ledger's approval rules beyond the answers themselves: a request
// sent, a call an earlier "allow for this task" answer covered, a request
// the task ended before it was answered, and a call denied because no one
// could be asked.
const (
	approvalAsked      approval.Answer = "requested"
	approvalGranted    approval.Answer = "covered_by_task_grant"
	approvalRefused    approval.Answer = "rejected_by_task_grant"
	approvalUnanswered approval.Answer = "unanswered"
	approvalLate       approval.Answer = "late"
	approvalNoChannel  approval.Answer = "no_channel"
)

// The channels an answer comes from besides an approver's own.
const (
	channelApprover  = "approver"
	channelTaskGrant = "task_grant"
	channelNone      = "none"
)

// channelOf names the channel of ap's answers.
func channelOf(ap Approver) string {
	if c, ok := ap.(approval.Channel); ok {
		if name := c.ApprovalChannel(); name != "" {
			return name
		}
	}
	return channelApprover
}

// digest16 is prefix (at most 16 bytes) and the hex of the first 16 bytes
// of SHA-256 over parts, each followed by a NUL byte.
func digest16(prefix string, parts ...string) string {
	// One allocation, the string: the parts are hashed from a stack
	// buffer when they fit (IDs do), every tool call derives one.
	var in [256]byte
	b := in[:0]
	for _, p := range parts {
		b = append(b, p...)
		b = append(b, 0)
	}
	sum := sha256.Sum256(b)
	var out [16 + 32]byte
	n := copy(out[:], prefix)
	hex.Encode(out[n:], sum[:16])
	return string(out[:n+32])
}

// approvalGrants are the "allow for this task" answers of one task, shared
// by its root and its children: a narrowing rule of the task's own that
// lets a later call of exactly the same shape skip the question.
type approvalGrants struct {
	mu     sync.Mutex
	grants []taskGrant
}

// taskGrant is one "for this task" answer: allowed or rejected.
type taskGrant struct {
	authority.ApprovalGrant
	allow bool
}

func (g *approvalGrants) add(x authority.ApprovalGrant, allow bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.grants = append(g.grants, taskGrant{x, allow})
}

// covers returns the earliest "for this task" answer covering x, if any.
func (g *approvalGrants) covers(x authority.ApprovalGrant) (allow, found bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, have := range g.grants {
		if have.Covers(x) {
			return have.allow, true
		}
	}
	return false, false
}

// approvalRequest is the request bound to one admitted call: its masked
// arguments, digest, the resources its contract names (masked, as every
// approver sees them) and its effect. resources are the call's own, which
// an answer for this task is bound to.
func (s *step) approvalRequest(ac admittedCall) (req approval.Request, resources []authority.Resource) {
	args, _ := s.t.rt.opts.Secrets.MaskJSON(ac.args)
	req = approval.Request{ID: approval.RequestID(s.t.root.ID(), s.agent, ac.rec.ID, ac.rec.ArgumentsDigest),
		TaskID: s.t.root.ID(), AgentID: s.agent, CallID: ac.rec.ID, Tool: ac.id,
		Arguments: json.RawMessage(args), ArgumentsDigest: ac.rec.ArgumentsDigest,
		Effect: authority.EffectOf(ac.id, ac.decision), Decision: ac.decision}
	if spec, ok := s.contracts.Spec(ac.id); ok && spec.Resources != nil {
		var decoded map[string]any
		if json.Unmarshal(ac.args, &decoded) == nil {
			resources = spec.Resources(decoded)
		}
	}
	if len(resources) == 0 {
		resources = workspaceResources(ac.id, ac.args)
	}
	if sc, ok := ac.owner.(*subagentCatalog); ok {
		req.Delegation = maskDelegation(sc.delegation(ac.args), s.t.rt.opts.Secrets)
	}
	for _, r := range resources {
		req.Resources = append(req.Resources, authority.Resource{Kind: r.Kind, Value: s.t.rt.opts.Secrets.String(r.Value)})
	}
	return req, resources
}

// workspaceResources is the path a workspace tool's call names, as the
// resource its approval request is bound to: a write of fs.write and
// fs.edit, a read of fs.read, fs.list and fs.search, cleaned so "./a.txt"
// and "a.txt" are one resource. The tool itself confines the path; this
// only names it for the human and for an "allow for this task" grant.
func workspaceResources(id authority.ID, args json.RawMessage) []authority.Resource {
	kind := authority.ResourceRead
	switch id {
	case authority.FSWrite, authority.FSEdit:
		kind = authority.ResourceWrite
	case authority.FSRead, authority.FSList, authority.FSSearch:
	default:
		return nil
	}
	var a struct {
		Path *string `json:"path"`
	}
	if json.Unmarshal(args, &a) != nil || a.Path == nil {
		return nil
	}
	return []authority.Resource{{Kind: kind, Value: path.Clean(*a.Path)}}
}

// recordApproval records one step of an approval in the ledger, as a
// decision on the call's capability under the layer "approval": the rule
// is "approval.<step>" and the reason names the call it is bound to, its
// digest, effect and resources (masked), the request and, for an answer,
// its channel, so a host can audit who approved what from the ledger
// alone. Every step but the request is also an approval.answered event.
func (s *step) recordApproval(req approval.Request, step approval.Answer) *event.Outcome {
	return s.recordAnswer(req, step, "")
}

// recordUnanswered records a request the task ended before its answer
// counted (a cancel, the deadline): "late" with the answer that came too
// late, which grants nothing, or "unanswered" when none came. The task
// has ended, so it is recorded on a context that is not.
func (s *step) recordUnanswered(req approval.Request, answer approval.Answer, err error) {
	saved := s.ctx
	s.ctx = context.WithoutCancel(saved)
	defer func() { s.ctx = saved }()
	if err == nil && answer != "" {
		_ = s.recordAnswer(req, approvalLate, answer)
		return
	}
	_ = s.recordAnswer(req, approvalUnanswered, "")
}

// recordAnswer is recordApproval with the late answer of a "late" step.
func (s *step) recordAnswer(req approval.Request, step, late approval.Answer) *event.Outcome {
	allowed := step == approval.AllowOnce || step == approval.AllowForTask || step == approvalGranted
	channel := ""
	switch step {
	case approvalAsked:
	case approvalGranted, approvalRefused:
		channel = channelTaskGrant
	case approvalNoChannel:
		channel = channelNone
		if s.conf.approver != nil {
			channel = channelOf(s.conf.approver) // it failed to answer
		}
	default:
		channel = channelOf(s.conf.approver)
	}
	var b strings.Builder
	b.WriteString("call ")
	b.WriteString(req.CallID)
	b.WriteString(" arguments ")
	b.WriteString(req.ArgumentsDigest)
	b.WriteString(" effect ")
	b.WriteString(string(req.Effect))
	for _, r := range req.Resources {
		b.WriteString(" ")
		b.WriteString(string(r.Kind))
		b.WriteString("=")
		b.WriteString(s.t.rt.opts.Secrets.String(r.Value))
	}
	b.WriteString(" request ")
	b.WriteString(req.ID)
	if channel != "" {
		b.WriteString(" channel ")
		b.WriteString(channel)
	}
	if late != "" {
		b.WriteString(" late answer ")
		b.WriteString(string(late))
	}
	d := authority.Decision{Allowed: allowed, Layer: "approval", RuleID: "approval." + string(step), Reason: b.String()}
	if err := s.t.root.RecordDecision(s.ctx, s.agent, string(req.Tool), d); err != nil {
		return s.ledgerOutcome(err)
	}
	if step == approvalAsked {
		// A barrier before the wait for a human: a host killed while
		// the approver thinks leaves the request, the call's admission
		// and the model response that asked for it durable.
		if err := s.t.root.Flush(s.ctx); err != nil {
			return s.ledgerOutcome(err)
		}
		return nil
	}
	a := s.approvalEvent(req, false)
	a.Answer, a.Channel, a.LateAnswer = eventAnswer(step), channel, string(late)
	return s.emit(event.EventData{Type: event.ApprovalAnswered, Approval: a})
}

// emitApprovalRequested is the approval.requested event of req: every
// call that needs approval has one, then one approval.answered.
//
// Under audit level none the ledger's payload carries the not-retained
// marker for the arguments; the approver and the event's readers see them.
func (s *step) emitApprovalRequested(req approval.Request) *event.Outcome {
	data := event.EventData{Type: event.ApprovalRequested, Approval: s.approvalEvent(req, true)}
	if !s.unretained(req.Tool) || len(data.Approval.Arguments) == 0 {
		return s.emit(data)
	}
	kept := *data.Approval
	kept.Arguments = json.RawMessage(notRetainedArguments)
	return s.emitAs(data, event.EventData{Type: event.ApprovalRequested, Approval: &kept})
}

// approvalEvent is req as its events carry it, masked; the request event
// also carries the arguments and the rule that asked.
func (s *step) approvalEvent(req approval.Request, request bool) *event.Approval {
	a := &event.Approval{RequestID: req.ID, CallID: req.CallID, Capability: string(req.Tool),
		ArgumentsDigest: req.ArgumentsDigest, Effect: string(req.Effect)}
	for _, r := range req.Resources {
		a.Resources = append(a.Resources, event.ApprovalResource{Kind: string(r.Kind), Value: s.t.rt.opts.Secrets.String(r.Value)})
	}
	if request {
		a.Arguments = req.Arguments
		by := authority.ApprovalSourceOf(req.Decision)
		a.Layer, a.RuleID = by.Layer, by.RuleID
		a.Delegation = eventDelegation(req.Delegation)
	}
	return a
}

// maskDelegation masks every name d carries (a model wrote them), as the
// request's resources are: every approver sees the same masked values.
func maskDelegation(d *approval.Delegation, secrets *redact.Set) *approval.Delegation {
	if d == nil {
		return nil
	}
	m := func(v []string) []string {
		if v == nil {
			return nil
		}
		out := make([]string, len(v))
		for i, x := range v {
			out[i] = secrets.String(x)
		}
		return out
	}
	d.Remote = secrets.String(d.Remote)
	c := &d.Capabilities
	c.Tools, c.Skills, c.MCPServers, c.ModelRoute = m(c.Tools), m(c.Skills), m(c.MCPServers), m(c.ModelRoute)
	hs := make([]children.Handoff, len(d.Handoffs))
	for i, h := range d.Handoffs {
		hs[i] = children.Handoff{SourceAgentID: secrets.String(h.SourceAgentID), ResultID: secrets.String(h.ResultID), Kind: h.Kind}
	}
	if d.Handoffs == nil {
		hs = nil
	}
	d.Handoffs = hs
	return d
}

// eventDelegation is d as the approval.requested event carries it.
func eventDelegation(d *approval.Delegation) *event.ApprovalDelegation {
	if d == nil {
		return nil
	}
	e := &event.ApprovalDelegation{Action: string(d.Action), Remote: d.Remote, InputDigest: d.InputDigest, InputBytes: d.InputBytes}
	if d.Action != children.ActionSpawnRemote {
		c := d.Capabilities
		e.Capabilities = &event.ApprovalCapabilities{Tools: nonNil(c.Tools), Skills: nonNil(c.Skills), MCPServers: nonNil(c.MCPServers), ModelRoute: nonNil(c.ModelRoute)}
		if m := c.Memory; m != nil {
			e.Capabilities.Memory = &event.ApprovalMemory{Kinds: nonNil(m.Kinds), Paths: nonNil(m.Paths)}
		}
	}
	for _, h := range d.Handoffs {
		e.Handoffs = append(e.Handoffs, event.ApprovalHandoff{SourceAgentID: h.SourceAgentID, ResultID: h.ResultID, Kind: string(h.Kind)})
	}
	return e
}

// nonNil is v, or an empty list for nil, so an event's list is never null.
func nonNil(v []string) []string {
	if v == nil {
		return []string{}
	}
	return v
}

// eventAnswer is the answer an approval.answered event gives for a ledger
// step: an earlier answer for this task is that answer, and a late answer
// leaves the request unanswered.
func eventAnswer(step approval.Answer) string {
	switch step {
	case approvalGranted:
		return string(approval.AllowForTask)
	case approvalRefused:
		return string(approval.RejectForTask)
	case approvalLate:
		return string(approvalUnanswered)
	}
	return string(step)
}

// IdempotencyKey is the stable key of one side-effecting call (the
// root's IdempotencyKey documents it).
func IdempotencyKey(taskID, agentID, callID string) string {
	return digest16("idem_", taskID, agentID, callID)
}
