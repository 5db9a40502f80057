package event

import "encoding/json"

// The approval events: a call that needs approval is asked about
// (approval.requested) and answered (approval.answered), both between its
// tool.started and its tool.finished.
const (
	ApprovalRequested Type = "approval.requested"
	ApprovalAnswered  Type = "approval.answered"
)

// Approval is the approval of one call, in an approval.requested or an
// approval.answered event; the agent that asks is the event's. Every
// value is masked: a secret never reaches an approval event.
type Approval struct {
	// RequestID names the request, bound to the call it asks about: the
	// answered event of a request carries the same ID and call ID.
	RequestID  string `json:"request_id"`
	CallID     string `json:"call_id"`
	Capability string `json:"capability"`
	// Arguments are the call's masked arguments (requested only).
	Arguments       json.RawMessage `json:"arguments,omitempty"`
	ArgumentsDigest string          `json:"arguments_digest"`
	// Resources are the resources the call names, values masked.
	Resources []ApprovalResource `json:"resources,omitempty"`
	Effect    string             `json:"effect"`
	// Layer and RuleID name what required approval (requested only): the
	// decision's approval_required_by.
	Layer  string `json:"layer,omitempty"`
	RuleID string `json:"rule_id,omitempty"`
	// Delegation (requested only, a subagent call that hands work to
	// another agent) is what the call delegates, never the content.
	Delegation *ApprovalDelegation `json:"delegation,omitempty"`
	// Answer (answered only) is allow_once, allow_for_task, reject,
	// reject_for_task, unanswered (the task ended first: a cancel, its
	// deadline) or no_channel (no approver could be asked, or it failed).
	Answer string `json:"answer,omitempty"`
	// Channel (answered only) is where the answer came from: the
	// approver's channel ("approver", "acp", "tty", "host"), "task_grant"
	// for an earlier answer for this task, "none" when no one was asked.
	Channel string `json:"channel,omitempty"`
	// LateAnswer is the answer an approver gave after the task had ended
	// (Answer is then unanswered): recorded, it granted nothing.
	LateAnswer string `json:"late_answer,omitempty"`
}

// ApprovalResource is one resource a call that asks names: its kind
// (path, host, ...) and its masked value, as authority.Resource.
type ApprovalResource struct {
	Kind  string `json:"kind"`
	Value string `json:"value"`
}

// ApprovalDelegation is what a subagent call asking for approval
// delegates, as approval.Delegation: the action, the remote a
// spawn_remote names or the capabilities a spawned child would get, the
// handoffs by reference, and the digest and size of what is handed over,
// never its content. Every value is masked.
type ApprovalDelegation struct {
	// Action is spawn or spawn_remote.
	Action string `json:"action"`
	// Remote is the A2A remote a spawn_remote delegates to.
	Remote string `json:"remote,omitempty"`
	// Capabilities are the spawned child's narrowed capabilities (spawn
	// only).
	Capabilities *ApprovalCapabilities `json:"capabilities,omitempty"`
	// Handoffs are the earlier children's results a spawn hands on.
	Handoffs []ApprovalHandoff `json:"handoffs,omitempty"`
	// InputDigest is "sha256:<hex>" of the child's input or the remote's
	// parts, and InputBytes its size.
	InputDigest string `json:"input_digest"`
	InputBytes  int    `json:"input_bytes"`
}

// ApprovalCapabilities are the tools, Skills, MCP servers and route
// entries a spawned child would get, as children.Capabilities.
type ApprovalCapabilities struct {
	Tools      []string `json:"tools"`
	Skills     []string `json:"skills"`
	MCPServers []string `json:"mcp_servers"`
	ModelRoute []string `json:"model_route"`
	// Memory is the memory scope (seed 002's memory tools' record kinds
	// and repository paths) the child's memory grants are cut down to;
	// nil when its parent has no memory tool.
	Memory *ApprovalMemory `json:"memory,omitempty"`
}

// ApprovalMemory is a spawned child's memory scope, as
// children.MemoryScope.
type ApprovalMemory struct {
	Kinds []string `json:"kinds"`
	Paths []string `json:"paths"`
}

// ApprovalHandoff is one handoff by reference, as children.Handoff.
type ApprovalHandoff struct {
	SourceAgentID string `json:"source_agent_id"`
	ResultID      string `json:"result_id"`
	Kind          string `json:"kind"`
}
