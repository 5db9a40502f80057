// Package event defines a task's typed event stream: an [Event] is one
// entry, numbered by its agent (Seq) and by the whole task tree (RootSeq),
// placed in the agent tree by its [AgentRef], and typed by its [EventData]
// (one [Type] of run.started, model.started, assistant.text.delta, ...,
// run.finished, with only that type's fields set). A run.finished event
// carries the task's [Outcome]; a routed model call's events carry its
// [RouteAttempt].
//
// A host reads these values from a task's event stream (pablo.Task.Events)
// and from a task object's outcome; the run loop builds them, the event log
// retains them and the trace writer encodes them, each in its own package.
package event

import (
	"encoding/json"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/model"
	"github.com/pabloagent/pablo/skills"
)

// SchemaVersion is the native event and task contract revision.
const SchemaVersion = "c3.33"

// Type is the kind of an event.
type Type string

// The event kinds, in the order a run produces them:
// run.started → (model.started → deltas → model.finished →
// [tool.started → tool.output* → tool.finished])* → run.finished.
const (
	RunStarted Type = "run.started"
	// RunResumed opens the part of a task that a resumed host runs
	// (Runtime.Resume), in place of a second run.started.
	RunResumed     Type = "run.resumed"
	SkillActivated Type = "skill.activated"
	ModelStarted   Type = "model.started"
	TextDelta      Type = "assistant.text.delta"
	ModelFinished  Type = "model.finished"
	ToolStarted    Type = "tool.started"
	ToolOutput     Type = "tool.output"
	// ToolEgress is one decision of a sandbox's egress proxy (network
	// allowlist): during a call, the call's; an MCP server's outside any
	// call has no event, only its ledger decision record.
	ToolEgress   Type = "tool.egress"
	ToolFinished Type = "tool.finished"
	// RemoteBound is a remote A2A child's: the remote bound its task, and
	// the IDs a resume follows it by are recorded.
	RemoteBound Type = "remote.bound"
	RunFinished Type = "run.finished"
)

// Event is one entry of a task's typed event stream. Seq orders one agent's
// events and RootSeq the whole task tree's, both from 1 with no gaps.
type Event struct {
	SchemaVersion       string   `json:"schema_version"`
	Seq                 uint64   `json:"seq"`
	RootSeq             uint64   `json:"root_seq"`
	TimestampUnixMicros int64    `json:"timestamp_unix_micros"`
	RunID               string   `json:"run_id"`
	SessionID           string   `json:"session_id"`
	TraceID             string   `json:"trace_id"`
	Agent               AgentRef `json:"agent"`
	EventData
}

// AgentRef places an event in the agent tree.
type AgentRef struct {
	AgentID       string `json:"agent_id"`
	RootRunID     string `json:"root_run_id"`
	RootSessionID string `json:"root_session_id"`
	ParentAgentID string `json:"parent_agent_id,omitempty"`
	Kind          string `json:"kind"`
	Depth         int    `json:"depth"`
}

// EventData is the type-specific part of an event; only the fields of its
// Type are set.
type EventData struct {
	Type Type `json:"type"`
	// run.started and run.resumed
	Deployment *DeploymentRef `json:"deployment,omitempty"`
	// run.resumed
	Resume *Resume `json:"resume,omitempty"`
	// model.started
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
	// model.started and model.finished of a routed model
	ModelRoute *RouteAttempt `json:"model_route,omitempty"`
	// assistant.text.delta
	Text string `json:"text,omitempty"`
	// model.finished
	Status       string             `json:"status,omitempty"`
	FinishReason model.FinishReason `json:"finish_reason,omitempty"`
	Usage        *OutcomeUsage      `json:"usage,omitempty"`
	OutputBytes  *uint64            `json:"output_bytes,omitempty"`
	// RetryInMS, on a failed call of a model (not a route: its record
	// says it) that is retried (options.model.retry), is the wait in
	// milliseconds before the retry.
	RetryInMS *int64 `json:"retry_in_ms,omitempty"`
	// tool.started
	Call *Call `json:"call,omitempty"`
	// tool.output and tool.finished
	CallID string          `json:"call_id,omitempty"`
	Name   string          `json:"name,omitempty"`
	Stream string          `json:"stream,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	// tool.egress: the proxy's verdict (with CallID and Name)
	Egress *authority.EgressDecision `json:"egress,omitempty"`
	// skill.activated
	Skill *skills.Activation `json:"skill,omitempty"`
	// remote.bound
	RemoteTask *RemoteTask `json:"remote_task,omitempty"`
	// context.compaction.started and .finished: the compaction-v1 record,
	// the summary (always null: it is content) and its bytes (a decimal
	// string: zero on the start and when no summary came back).
	Compaction   *Compaction     `json:"compaction,omitempty"`
	Summary      json.RawMessage `json:"summary,omitempty"`
	SummaryBytes *string         `json:"summary_bytes,omitempty"`
	// approval.requested and approval.answered
	Approval *Approval `json:"approval,omitempty"`
	// run.finished
	Outcome    *Outcome           `json:"outcome,omitempty"`
	Accounting *ledger.Accounting `json:"accounting,omitempty"`
	// Masked counts the secrets (known values and suspected-secret
	// matches) masked in this event's content: a text delta's or a tool
	// output's text, a tool call's arguments, a tool result. It is absent
	// when nothing was masked. (run.finished counts its output's in
	// Outcome.Masked.)
	Masked int `json:"masked,omitempty"`
}

// Call is the call of a tool.started event.
type Call struct {
	// ID is Pablo's own ID of the call ("call_T_I"), the one the ledger,
	// tool.output, tool.finished and approvals name it by; never the
	// provider's.
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	// Sandbox is the sandbox the call runs in, when it runs in a process
	// (authority.Decision's Sandbox): "off" or "required filesystem=F
	// network=N".
	Sandbox string `json:"sandbox,omitempty"`
}

// DeploymentRef identifies the deployment a task runs under.
type DeploymentRef struct {
	SchemaVersion    int    `json:"schema_version"`
	ContractRevision string `json:"contract_revision"`
	Fingerprint      string `json:"fingerprint"`
	// SnapshotDigest is the digest of the agent's dispatch snapshot
	// (ledger.Snapshot, recorded before its first event): what it was
	// admitted to use when it started. The runtime sets it on each
	// run.started; a host leaves it empty in RuntimeOptions.Deployment.
	SnapshotDigest string `json:"snapshot_digest,omitempty"`
	// Memory is the memory commit the agent reads at (options.memory):
	// the ref and the commit it named when the root task started. A
	// child shares its root's.
	Memory *MemoryPin `json:"memory,omitempty"`
}

// MemoryPin is a memory ref resolved to one commit.
type MemoryPin struct {
	Ref    string `json:"ref"`
	Commit string `json:"commit"`
}

// RemoteTask is the task a remote A2A child's remote bound: the remote's
// name and the IDs it bound the task under (opaque peer values, masked
// like any peer text). A resume follows the task by them with GetTask
// instead of sending the request again.
type RemoteTask struct {
	Remote    string `json:"remote"`
	TaskID    string `json:"task_id"`
	ContextID string `json:"context_id,omitempty"`
}
