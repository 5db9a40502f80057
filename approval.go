package pablo

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"sync"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/ledger/outcome"
)

// CodeApprovalRejected is the error code of the recoverable result a call
// its approver rejected returns to the model.
const CodeApprovalRejected outcome.FailureCode = "approval_rejected"

// The ledger's approval rules beyond the answers themselves: a request
// sent, a call an earlier "allow for this task" answer covered, a request
// the task ended before it was answered, and a call denied because no one
// could be asked.
const (
	approvalAsked      ApprovalAnswer = "requested"
	approvalGranted    ApprovalAnswer = "covered_by_task_grant"
	approvalRefused    ApprovalAnswer = "rejected_by_task_grant"
	approvalUnanswered ApprovalAnswer = "unanswered"
	approvalNoChannel  ApprovalAnswer = "no_channel"
)

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
// arguments, digest, the resources its contract names and its effect.
func (s *step) approvalRequest(ac admittedCall) ApprovalRequest {
	args, _ := s.t.rt.opts.secrets.Mask(ac.args)
	req := ApprovalRequest{TaskID: s.t.root.ID(), AgentID: s.agent, CallID: ac.rec.ID, Tool: ac.id,
		Arguments: json.RawMessage(args), ArgumentsDigest: ac.rec.ArgumentsDigest,
		Effect: authority.EffectOf(ac.id, ac.decision), Decision: ac.decision}
	if spec, ok := s.contracts.Spec(ac.id); ok && spec.Resources != nil {
		var decoded map[string]any
		if json.Unmarshal(ac.args, &decoded) == nil {
			req.Resources = spec.Resources(decoded)
		}
	}
	return req
}

// recordApproval records one step of an approval in the ledger, as a
// decision on the call's capability under the layer "approval": the rule
// is "approval.<step>" and the reason names the call it is bound to, its
// digest, effect and resources (masked), so a host can audit who approved
// what.
func (s *step) recordApproval(req ApprovalRequest, step ApprovalAnswer) *Outcome {
	allowed := step == ApprovalAllowOnce || step == ApprovalAllowForTask || step == approvalGranted
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
		b.WriteString(s.t.rt.opts.secrets.String(r.Value))
	}
	d := authority.Decision{Allowed: allowed, Layer: "approval", RuleID: "approval." + string(step), Reason: b.String()}
	if err := s.t.root.RecordDecision(s.ctx, s.agent, string(req.Tool), d); err != nil {
		return s.ledgerOutcome(err)
	}
	return nil
}

// IdempotencyKey is the stable key of one side-effecting call: derived
// from the root task, the agent and the call ID (SHA-256 over the three,
// each followed by a NUL byte; "idem_" and the hex of the first 16 bytes),
// so a retried delivery of the same call carries the same key and a server
// or script that honours it can apply the call once. The ledger records it
// on the call's admission record. MCP calls send it in _meta under
// mcp.IdempotencyMetaKey ("io.github.pabloagent/idempotency-key");
// shell.run in the environment variable PABLO_IDEMPOTENCY_KEY.
func IdempotencyKey(taskID, agentID, callID string) string {
	h := sha256.New()
	for _, p := range [...]string{taskID, agentID, callID} {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return "idem_" + hex.EncodeToString(h.Sum(nil)[:16])
}
