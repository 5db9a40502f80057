// Package approval is the vocabulary of asking a person before a call runs:
// the [Approver] a host implements, the [Request] it is asked about, the
// [Answer] it gives, the optional capabilities an approver may also have
// ([Channel], [Elicitor]), and the audit a host reads back from the ledger
// ([Records]).
//
// The runtime asks when the authority's decision for a call is "ask". Each
// request is bound to one call — the task, the agent, the call ID and the
// digest of the arguments as the model wrote them ([RequestID]) — so an
// answer never authorizes a different call. The package is public so a host
// writing an approver, and the engine calling it, name the same types: no
// adapter stands between them.
package approval

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/children"
	"github.com/pabloagent/pablo/ledger/outcome"
	"github.com/pabloagent/pablo/mcp"
)

// CodeRejected is the error code of the recoverable result a call its
// approver rejected returns to the model.
const CodeRejected outcome.FailureCode = "approval_rejected"

// Approver answers approval requests. Each request is bound to one call;
// an answer never authorizes a different call. It may block until a human
// answers; ctx ends when the task is cancelled or times out, and the call
// is then denied. An error means the approver could not answer: the call
// is denied as if there were no approver.
type Approver interface {
	Approve(ctx context.Context, req Request) (Answer, error)
}

// Answer is an approver's answer to one request. The zero value rejects.
type Answer string

// The answers to an approval request.
const (
	// Reject keeps the call from running: the model gets the recoverable
	// result approval_rejected ([CodeRejected]) and may choose another way.
	Reject Answer = "reject"
	// AllowOnce runs this one call: the same capability with other
	// arguments asks again.
	AllowOnce Answer = "allow_once"
	// AllowForTask runs this call and, for the rest of the task, every
	// call of the same capability and effect over the same resources (the
	// same arguments, when the call names none): an
	// [authority.ApprovalGrant] recorded in the ledger.
	AllowForTask Answer = "allow_for_task"
	// RejectForTask rejects this call and, for the rest of the task,
	// every call the same grant would cover, without asking.
	RejectForTask Answer = "reject_for_task"
)

// Request is one call that needs approval before it runs: the capability,
// its arguments (masked, as the events show them) and their digest, the
// resources it names, its effect and the agent that asks.
type Request struct {
	// ID names this request ([RequestID]): bound to the task, the agent,
	// the call ID and the arguments digest, it is what the approval events
	// and the ledger's records of the request carry.
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
	Delegation *Delegation
}

// Delegation is what a subagent call asking for approval hands to another
// agent: the remote it names, or the capabilities the child would get, and
// a digest of the work handed over, never its content.
type Delegation struct {
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

// Channel is what an [Approver] may also implement to name the channel its
// answers come from ("acp", "tty", "host"): the channel of its
// approval.answered events. An approver without it is "approver".
type Channel interface {
	ApprovalChannel() string
}

// Elicitor is what an [Approver] may also implement, as http.Flusher is to
// a ResponseWriter, to answer an MCP server's request for information from
// the user (form elicitation) during one of the task's calls. The request
// is validated and masked before it arrives, and the answer is validated
// against its form before it leaves; an error, or an approver that is not
// an Elicitor, declines. The CLI's terminal prompt is one.
type Elicitor interface {
	Elicit(ctx context.Context, req mcp.Elicitation) (mcp.ElicitationResult, error)
}

// RequestID is the ID of the approval request bound to one call: derived
// from the root task, the agent, the call ID and the arguments digest
// ("apr_" and 32 hex digits of SHA-256 over the four, each followed by a
// NUL byte), so a request names exactly one call and its answer, carrying
// the same ID, can be bound to nothing else.
func RequestID(taskID, agentID, callID, argumentsDigest string) string {
	// One allocation, the string: the parts are hashed from a stack buffer
	// when they fit (IDs and digests do).
	var in [256]byte
	b := in[:0]
	for _, p := range [...]string{taskID, agentID, callID, argumentsDigest} {
		b = append(b, p...)
		b = append(b, 0)
	}
	sum := sha256.Sum256(b)
	var out [4 + 32]byte
	n := copy(out[:], "apr_")
	hex.Encode(out[n:], sum[:16])
	return string(out[:])
}
