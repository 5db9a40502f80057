package pablo

import (
	"context"
	"encoding/json"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/children"
	"github.com/pabloagent/pablo/internal/engine"
	"github.com/pabloagent/pablo/ledger/outcome"
	"github.com/pabloagent/pablo/mcp"
)

// CodeApprovalRejected is the error code of the recoverable result a call
// its approver rejected returns to the model.
const CodeApprovalRejected outcome.FailureCode = "approval_rejected"

// Approver answers approval requests. Each request is bound to one call;
// an answer never authorizes a different call. It may block until a human
// answers; ctx ends when the task is cancelled or times out, and the call
// is then denied. An error means the approver could not answer: the call
// is denied as if there were no approver.
type Approver interface {
	Approve(ctx context.Context, req ApprovalRequest) (ApprovalAnswer, error)
}

// ApprovalAnswer is an approver's answer to one request. The zero value
// rejects.
type ApprovalAnswer string

// The answers to an approval request.
const (
	// ApprovalReject keeps the call from running: the model gets the
	// recoverable result approval_rejected and may choose another way.
	ApprovalReject ApprovalAnswer = "reject"
	// ApprovalAllowOnce runs this one call: the same capability with
	// other arguments asks again.
	ApprovalAllowOnce ApprovalAnswer = "allow_once"
	// ApprovalAllowForTask runs this call and, for the rest of the task,
	// every call of the same capability and effect over the same
	// resources (the same arguments, when the call names none): an
	// [authority.ApprovalGrant] recorded in the ledger.
	ApprovalAllowForTask ApprovalAnswer = "allow_for_task"
	// ApprovalRejectForTask rejects this call and, for the rest of the
	// task, every call the same grant would cover, without asking.
	ApprovalRejectForTask ApprovalAnswer = "reject_for_task"
)

// ApprovalRequest is one call that needs approval before it runs: the
// capability, its arguments (masked, as the events show them) and their
// digest, the resources it names, its effect and the agent that asks.
type ApprovalRequest struct {
	// ID names this request ([ApprovalRequestID]): bound to the task, the
	// agent, the call ID and the arguments digest, it is what the
	// approval events and the ledger's records of the request carry.
	ID     string
	TaskID string
	// AgentID is the agent whose call it is: the root's, or a child's.
	AgentID string
	CallID  string
	Tool    authority.ID
	// Arguments are the call's arguments with every secret masked.
	Arguments json.RawMessage
	// ArgumentsDigest is "sha256:<hex>" of the arguments as the model
	// wrote them: what the answer is bound to.
	ArgumentsDigest string
	// Resources are the resources the call names (paths, hosts), from its
	// tool's contract, each value masked; nil when it names none.
	Resources []authority.Resource
	// Effect is what the call does: read, write, execute, network or
	// delegate.
	Effect authority.CallEffect
	// Decision is the authority's decision that asked for approval: its
	// layer and rule.
	Decision authority.Decision
	// Delegation, on a subagent call that hands work to another agent
	// (spawn, spawn_remote), is what it delegates; nil on any other call.
	Delegation *ApprovalDelegation
}

// ApprovalDelegation is what a subagent call asking for approval hands to
// another agent: the remote it names, or the capabilities the child would
// get, and a digest of the work handed over, never its content.
type ApprovalDelegation struct {
	// Action is spawn or spawn_remote.
	Action children.Action
	// Remote is the A2A remote a spawn_remote delegates to.
	Remote string
	// Capabilities are the tools, Skills, MCP servers and route entries a
	// spawned child would get: its request narrowed from its parent's
	// (an omitted list inherits the parent's).
	Capabilities children.Capabilities
	// Handoffs are the earlier children's results a spawn hands on, by
	// reference (source agent, result ID, kind).
	Handoffs []children.Handoff
	// InputDigest is "sha256:<hex>" of what is handed over — a child's
	// input, as its agent record in the ledger digests it, or a remote's
	// parts — and InputBytes its size.
	InputDigest string
	InputBytes  int
}

// ApprovalChannel is what an [Approver] may also implement to name the
// channel its answers come from ("acp", "tty", "host"): the channel of
// its approval.answered events. An approver without it is "approver".
type ApprovalChannel interface {
	ApprovalChannel() string
}

// ApprovalRequestID is the ID of the approval request bound to one call:
// derived from the root task, the agent, the call ID and the arguments
// digest ("apr_" and 32 hex digits of SHA-256 over the four, each followed
// by a NUL byte), so a request names exactly one call and its answer,
// carrying the same ID, can be bound to nothing else.
func ApprovalRequestID(taskID, agentID, callID, argumentsDigest string) string {
	return engine.ApprovalRequestID(taskID, agentID, callID, argumentsDigest)
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
	return engine.IdempotencyKey(taskID, agentID, callID)
}

// engineApprover adapts a host's Approver to the engine's; nil stays nil. The
// adapter forwards ApprovalChannel, so the engine sees the channel the
// host's approver names.
func engineApprover(ap Approver) engine.Approver {
	if ap == nil {
		return nil
	}
	if c, ok := ap.(ApprovalChannel); ok {
		return channelApprover{approver{ap}, c}
	}
	return approver{ap}
}

type approver struct{ ap Approver }

func (a approver) Approve(ctx context.Context, req engine.ApprovalRequest) (engine.ApprovalAnswer, error) {
	r := ApprovalRequest{ID: req.ID, TaskID: req.TaskID, AgentID: req.AgentID, CallID: req.CallID, Tool: req.Tool,
		Arguments: req.Arguments, ArgumentsDigest: req.ArgumentsDigest, Resources: req.Resources, Effect: req.Effect, Decision: req.Decision}
	if d := req.Delegation; d != nil {
		r.Delegation = &ApprovalDelegation{Action: d.Action, Remote: d.Remote, Capabilities: d.Capabilities, Handoffs: d.Handoffs,
			InputDigest: d.InputDigest, InputBytes: d.InputBytes}
	}
	answer, err := a.ap.Approve(ctx, r)
	return engine.ApprovalAnswer(answer), err
}

// Elicitor is what an [Approver] may also implement, as http.Flusher is
// to a ResponseWriter, to answer an MCP server's request for information
// from the user (form elicitation) during one of the task's calls. The
// request is validated and masked before it arrives, and the answer is
// validated against its form before it leaves; an error, or an approver
// that is not an Elicitor, declines. The CLI's terminal prompt is one.
type Elicitor interface {
	Elicit(ctx context.Context, req mcp.Elicitation) (mcp.ElicitationResult, error)
}

// ElicitFunc implements engine.ElicitationChannel.
func (a approver) ElicitFunc() mcp.ElicitFunc {
	if e, ok := a.ap.(Elicitor); ok {
		return e.Elicit
	}
	return nil
}

type channelApprover struct {
	approver
	c ApprovalChannel
}

func (a channelApprover) ApprovalChannel() string { return a.c.ApprovalChannel() }
