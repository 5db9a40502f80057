package ledger

import (
	"encoding/json"
	"time"

	"github.com/pabloagent/pablo/ledger/outcome"

	"github.com/pabloagent/pablo/authority"
)

// Event is one entry of a root's ordered event stream. RootSeq orders every
// event of the root task (1, 2, 3, ... with no gaps); Seq orders the events of
// one agent. Time is UTC with microsecond precision from the root's clock.
// The ledger retains Payload as given: do not modify it after Append.
type Event struct {
	RootSeq  uint64          `json:"root_seq"`
	Seq      uint64          `json:"seq"`
	RootID   string          `json:"root_id"`
	ParentID string          `json:"parent_id,omitempty"`
	AgentID  string          `json:"agent_id"`
	Type     string          `json:"type"`
	Time     time.Time       `json:"time"`
	Payload  json.RawMessage `json:"payload,omitempty"`
}

// RecordKind tags a [Record].
type RecordKind string

// Record kinds.
const (
	RecordTask     RecordKind = "task"     // the task started; Task is set
	RecordAgent    RecordKind = "agent"    // an agent started; Agent is set
	RecordEvent    RecordKind = "event"    // Event is set
	RecordCall     RecordKind = "call"     // a call transition; Call is set
	RecordDecision RecordKind = "decision" // an authority decision; Decision is set
	RecordResult   RecordKind = "result"   // an immutable result; Result is set
	RecordFinish   RecordKind = "finish"   // an agent's terminal outcome; Finish is set
	// RecordProcessGroup: the runtime started a process group it owns;
	// ProcessGroup is set.
	RecordProcessGroup RecordKind = "process_group"
	// RecordSnapshot: an agent's dispatch snapshot, taken when it started;
	// Snapshot is set.
	RecordSnapshot RecordKind = "snapshot"
)

// Record is the unit a [Store] persists: one durable fact about a task. N
// numbers a task's records densely from 1, in the order the ledger accepted
// them; a store returns them in that order. Exactly one of the payload fields
// matches Kind. Records are immutable once appended: stores may share the
// pointed-to values, so never modify them.
type Record struct {
	TaskID   string          `json:"task_id"`
	N        uint64          `json:"n"`
	Kind     RecordKind      `json:"kind"`
	Time     time.Time       `json:"time"`
	Event    Event           `json:"event,omitzero"`
	Task     *TaskRecord     `json:"task,omitempty"`
	Agent    *AgentRecord    `json:"agent,omitempty"`
	Call     *CallRecord     `json:"call,omitempty"`
	Decision *DecisionRecord `json:"decision,omitempty"`
	Result   *ResultRecord   `json:"result,omitempty"`
	Finish   *FinishRecord   `json:"finish,omitempty"`
	// ProcessGroup is set on a RecordProcessGroup record.
	ProcessGroup *ProcessGroupRecord `json:"process_group,omitempty"`
	// Snapshot is set on a RecordSnapshot record.
	Snapshot *SnapshotRecord `json:"snapshot,omitempty"`
}

// TaskRecord opens a task: its identity, its input version and the
// authorization scope it runs under.
type TaskRecord struct {
	TaskID      string `json:"task_id"`
	RootAgentID string `json:"root_agent_id"`
	// InputDigest identifies the input version, e.g. "sha256:<hex>".
	InputDigest string `json:"input_digest,omitempty"`
	// Fingerprint is the deployment fingerprint the task's authority came from.
	Fingerprint string `json:"fingerprint,omitempty"`
	Limits      Limits `json:"limits"`
	// Session links the task to the conversation it belongs to; nil for a
	// task that is its own session.
	Session *SessionLink `json:"session,omitempty"`
	// Input references the task's input, stored (masked) as a result so
	// the task can be resumed from the store; empty when it was not kept.
	Input ResultRef `json:"input,omitempty"`
}

// SessionLink places a task in a session: a conversation of prompts, each
// its own task. The prompt is kept (masked) so a session can be listed and
// continued from the store after a restart; the answer is the task's
// outcome.
type SessionLink struct {
	SessionID string `json:"session_id"`
	Workspace string `json:"workspace,omitempty"`
	// Turn numbers the session's prompts from 1.
	Turn   uint64 `json:"turn"`
	Prompt string `json:"prompt"`
}

// AgentRecord records an agent joining the tree.
type AgentRecord struct {
	AgentID     string `json:"agent_id"`
	ParentID    string `json:"parent_id,omitempty"`
	Kind        string `json:"kind"`
	InputDigest string `json:"input_digest,omitempty"`
	Limits      Limits `json:"limits"`
}

// CallKind says whether a call went to a model or a tool.
type CallKind string

// Call kinds.
const (
	ModelCallKind CallKind = "model"
	ToolCallKind  CallKind = "tool"
)

// CallState is a call's place in its state machine:
// admitted → dispatched → settled, or admitted → settled when it never left.
type CallState string

// Call states.
const (
	CallAdmitted   CallState = "admitted"
	CallDispatched CallState = "dispatched"
	CallSettled    CallState = "settled"
)

// CallRecord is one transition of a model or tool call. The admitted record
// carries what was requested and decided; the settled record carries what
// happened, and the decision of a tool that denied the call when it ran.
type CallRecord struct {
	CallID  string    `json:"call_id"`
	AgentID string    `json:"agent_id"`
	Kind    CallKind  `json:"kind"`
	State   CallState `json:"state"`
	// Admitted.
	Step            uint64             `json:"step,omitempty"` // the agent's call ordinal, from 1
	Name            string             `json:"name,omitempty"` // tool capability ID or model route
	ArgumentsDigest string             `json:"arguments_digest,omitempty"`
	InputBytes      uint64             `json:"input_bytes,omitempty"`
	IdempotencyKey  string             `json:"idempotency_key,omitempty"` // a tool call's (ToolCall.IdempotencyKey)
	Decision        authority.Decision `json:"decision,omitzero"`
	TokenBound      Limit              `json:"token_bound,omitzero"`
	CostBound       Limit              `json:"cost_bound,omitzero"`
	// Settled.
	Status        string           `json:"status,omitempty"` // outcome.ToolStatus or outcome.Status
	Delivery      outcome.Delivery `json:"delivery,omitempty"`
	Usage         Usage            `json:"usage,omitzero"`
	CostMicroUSD  Count            `json:"cost_microusd,omitzero"`
	ChargedTokens Count            `json:"charged_tokens,omitzero"`
	ChargedCost   Count            `json:"charged_cost_microusd,omitzero"`
	OutputBytes   uint64           `json:"output_bytes,omitempty"`
	Result        ResultRef        `json:"result,omitempty"`
	Error         string           `json:"error,omitempty"`
	// Counted: a tool call settled before dispatch that counts as a
	// dispatched one (ToolSettlement.Counted), so a resumed ledger
	// charges it again as its settlement did.
	Counted bool `json:"counted,omitempty"`
}

// DecisionRecord records an authority decision that is part of the task's
// authorization scope but not tied to one call (a spawn, a Skill activation).
type DecisionRecord struct {
	AgentID    string             `json:"agent_id"`
	Capability string             `json:"capability"`
	Decision   authority.Decision `json:"decision"`
}

// ResultRecord holds an immutable result in canonical JSON.
type ResultRecord struct {
	ID   ResultRef       `json:"id"`
	Data json.RawMessage `json:"data"`
}

// FinishRecord records an agent's terminal outcome.
type FinishRecord struct {
	AgentID string  `json:"agent_id"`
	Outcome Outcome `json:"outcome"`
}

// ProcessGroupRecord identifies a process group the runtime started and
// owns (a shell command, a stdio MCP server), so that recovery can find and
// end what survived a crash of the host. A group is the same group only on
// the same boot, with the same group ID, and with a leader that started at
// the recorded time: a pgid alone is reused once the group is gone.
type ProcessGroupRecord struct {
	AgentID string `json:"agent_id"`
	// BootID is /proc/sys/kernel/random/boot_id of the host that started it.
	BootID string `json:"boot_id"`
	// Pgid is the group ID: the leader's PID.
	Pgid int `json:"pgid"`
	// LeaderStart is the leader's start time in clock ticks after boot
	// (field 22 of /proc/PID/stat).
	LeaderStart uint64 `json:"leader_start"`
	// Program is the leader's program path, for the report.
	Program string `json:"program,omitempty"`
}
