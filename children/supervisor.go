package children

import (
	"context"
	"encoding/json"
	"time"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger"
)

// Supervisor is what the subagent tool drives: spawn, spawn_remote,
// inspect, wait and stop, for the children of one root. A host can wrap
// it (to log, to refuse more); [New] returns the runtime's implementation.
// Every method returns an [*Error] for a refused request.
type Supervisor interface {
	// Spawn admits a local child: it narrows the request against the
	// parent, resolves its handoffs, reserves capacity and queues the child
	// (or starts it when a slot is free). It returns the child's snapshot
	// at admission; it never waits for the child.
	Spawn(ctx context.Context, req Request) (Snapshot, error)
	// SpawnRemote admits a remote child; the same capacity applies.
	SpawnRemote(ctx context.Context, req RemoteRequest) (Snapshot, error)
	// Inspect returns a child's current snapshot.
	Inspect(ctx context.Context, agentID string) (Snapshot, error)
	// Wait waits until any or all of the named children settled, or the
	// timeout passes, or ctx ends; it never cancels a child.
	Wait(ctx context.Context, req WaitRequest) (WaitResult, error)
	// Stop ends one child (a queued one settles cancelled without running)
	// and returns its settled snapshot; its siblings and the parent are
	// untouched.
	Stop(ctx context.Context, agentID string) (Snapshot, error)
}

// Request is a spawn request, the subagent tool's request object.
type Request struct {
	// Input is the child's task, 1..1,048,576 bytes.
	Input string `json:"input"`
	// Overlay is the child's task overlay; empty means none.
	Overlay string `json:"overlay,omitempty"`
	// Context holds explicit context strings for the child.
	Context []string `json:"context,omitempty"`
	// Handoffs name settled children's results to pass (at most 16).
	Handoffs []Handoff `json:"handoffs,omitempty"`
	// Capabilities narrow the parent's; a nil list inherits.
	Capabilities Capabilities `json:"capabilities"`
	// Ceilings narrow the parent's; a ceiling not set inherits.
	Ceilings Ceilings `json:"ceilings"`
	// OutputSchema is the JSON Schema of the child's final answer; nil
	// means none.
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
}

// Kind is an agent's kind.
type Kind string

// The agent kinds of a supervised tree.
const (
	KindRoot   Kind = "root"
	KindLocal  Kind = "local_acp_temporary"
	KindRemote Kind = "remote_a2a"
)

// State is a child's lifecycle state.
type State string

// The lifecycle states, in order.
const (
	StateQueued   State = "queued"
	StateStarting State = "starting"
	StateRunning  State = "running"
	StateStopping State = "stopping"
	StateSettled  State = "settled"
)

// Snapshot is a bounded receipt of one child: its identity and state and,
// once settled, its outcome, accounting, result ID and validation. It
// never holds a transcript; Output is the returned result only, within
// the per-child and per-root result bounds.
type Snapshot struct {
	AgentID       string `json:"agent_id"`
	ParentAgentID string `json:"parent_agent_id"`
	Kind          Kind   `json:"kind"`
	Depth         int    `json:"depth"`
	State         State  `json:"state"`
	// Outcome is the typed terminal outcome, once settled.
	Outcome *event.Outcome `json:"outcome,omitempty"`
	// Accounting is the child's own work, once settled.
	Accounting *ledger.Accounting `json:"accounting,omitempty"`
	// ResultID is the stable result UUID of a completed child.
	ResultID string `json:"result_id,omitempty"`
	// Output is the child's returned result text, when retained.
	Output *string `json:"output,omitempty"`
	// OutputBytes is the size of the child's result, retained or not.
	OutputBytes int `json:"output_bytes,omitempty"`
	// OutputOmitted says why a completed child's result was not retained:
	// "result_bytes" (over the per-child bound) or "retained_bytes" (over
	// the per-root bound). Such a result cannot be handed off.
	OutputOmitted string `json:"output_omitted,omitempty"`
	// StructuredOutput is the child's structured answer, when retained.
	StructuredOutput json.RawMessage `json:"structured_output,omitempty"`
	// Validation and Repair are the output-validation-v1 and
	// output-repair-v1 receipts.
	Validation json.RawMessage `json:"output_validation,omitempty"`
	Repair     json.RawMessage `json:"output_repair,omitempty"`
	// Artifact is the file the child's result names, if any.
	Artifact *Artifact `json:"artifact,omitempty"`
	TraceID  string    `json:"trace_id,omitempty"`
}

// WaitMode is whether a wait returns on the first settled child or on all.
type WaitMode string

// The wait modes.
const (
	WaitAny WaitMode = "any"
	WaitAll WaitMode = "all"
)

// WaitRequest names 1..16 distinct children, a mode and a timeout
// (0..900,000 ms, cut to what remains of the root's deadline; zero polls).
type WaitRequest struct {
	AgentIDs []string      `json:"agent_ids"`
	Mode     WaitMode      `json:"mode"`
	Timeout  time.Duration `json:"-"`
}

// WaitResult is what a wait saw when it returned: the settled children's
// snapshots and the IDs of those still unsettled, both in request order.
type WaitResult struct {
	Settled   []Snapshot `json:"settled"`
	Remaining []string   `json:"remaining"`
}
