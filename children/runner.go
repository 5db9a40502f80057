package children

import (
	"context"
	"encoding/json"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger"
)

// Runner starts local children: the root implements it over its session
// handler. Start is called with no lock of the supervisor held, once per
// admitted child, when a slot is free. It returns once the child is
// started (or failed to start); ctx ends when the child is stopped or the
// tree closes, and a Runner honours it while starting.
type Runner interface {
	Start(ctx context.Context, spec Spec) (Handle, error)
}

// Handle is one started child. Done is closed once the child settled and
// everything it owned is joined; Result is its terminal result, valid
// after Done. Cancel asks the child to stop; it returns at once, may be
// called any number of times and from any goroutine, and Done still closes
// only after the child is joined.
type Handle interface {
	Done() <-chan struct{}
	Result() Result
	Cancel()
}

// Spec is a child request as the supervisor admitted it: validated,
// narrowed against the parent, its handoffs resolved. A Runner runs
// exactly this and nothing of the parent's transcript.
type Spec struct {
	// AgentID is the child's agent ID, assigned by the supervisor.
	AgentID string
	// ParentID is the agent ID of the parent (the root).
	ParentID string
	// Input is the child's task, 1..1,048,576 bytes.
	Input string
	// Overlay is the child's task overlay; empty means none.
	Overlay string
	// Context holds the explicit context strings of the request.
	Context []string
	// Handoffs are the resolved handoffs, in the request's order.
	Handoffs []ResolvedHandoff
	// Capabilities are the child's effective capabilities: every list is
	// non-nil and a subset of the parent's (see [Narrow]).
	Capabilities Capabilities
	// Ceilings are the child's effective ceilings: each at most the
	// parent's.
	Ceilings Ceilings
	// OutputSchema is the JSON Schema the child's final answer must
	// validate against; nil means none. It compiled in the bounded subset.
	OutputSchema json.RawMessage
}

// InputBytes is what the spec counts against the per-child and queued
// input ceilings: the input, the overlay, the context strings and the
// inline handoffs' outputs.
func (s Spec) InputBytes() int64 {
	n := int64(len(s.Input) + len(s.Overlay))
	for _, c := range s.Context {
		n += int64(len(c))
	}
	for _, h := range s.Handoffs {
		if h.Inline != nil {
			n += int64(len(h.Inline.Output))
		}
	}
	return n
}

// Result is a child's terminal result, as its Handle reports it.
type Result struct {
	// Outcome is the typed terminal outcome (completed, cancelled,
	// timed_out, policy_denied, limit_exceeded, failed).
	Outcome event.Outcome
	// Accounting is the child's own work, counted once.
	Accounting ledger.Accounting
	// Output is the child's final answer text.
	Output string
	// StructuredOutput is the final answer as JSON when the child had an
	// output schema and the answer parsed; nil otherwise.
	StructuredOutput json.RawMessage
	// Validation is the output-validation-v1 record; nil when the child
	// had no output schema.
	Validation json.RawMessage
	// Repair is the output-repair-v1 record; nil when repair was not
	// enabled.
	Repair json.RawMessage
	// Artifact is the workspace file the child's result names, if any: what
	// an artifact handoff of this result passes.
	Artifact *Artifact
	// TraceID is the child's trace ID.
	TraceID string
	// SessionID is the child's session ID, if it had one.
	SessionID string
}

// HandoffKind is how a handoff passes a result: inline or artifact.
type HandoffKind string

// The handoff kinds.
const (
	// HandoffInline passes the schema-valid structured output with its
	// receipts.
	HandoffInline HandoffKind = "inline"
	// HandoffArtifact passes a workspace file {path, revision}, verified
	// right before the downstream child starts.
	HandoffArtifact HandoffKind = "artifact"
)

// Handoff names a settled child's result to pass to a new child.
type Handoff struct {
	SourceAgentID string      `json:"source_agent_id"`
	ResultID      string      `json:"result_id"`
	Kind          HandoffKind `json:"kind"`
}

// ResolvedHandoff is a handoff the supervisor checked: exactly one of
// Inline and Artifact is set, by Kind.
type ResolvedHandoff struct {
	Handoff
	Inline   *InlineHandoff `json:"inline,omitempty"`
	Artifact *Artifact      `json:"artifact,omitempty"`
}

// InlineHandoff is a completed child's schema-valid structured output and
// its receipts.
type InlineHandoff struct {
	Output     json.RawMessage   `json:"output"`
	Validation json.RawMessage   `json:"output_validation"`
	Repair     json.RawMessage   `json:"output_repair,omitempty"`
	Accounting ledger.Accounting `json:"accounting"`
	TraceID    string            `json:"trace_id"`
}

// Artifact is a workspace file at a revision: a workspace-relative path
// and the lowercase hex SHA-256 of its content (fs.read's revision).
type Artifact struct {
	Path     string `json:"path"`
	Revision string `json:"revision"`
}

// ArtifactVerifier re-checks an artifact right before the child that
// receives it starts: the file must still be readable under the child's
// narrowed authority (spec is the child about to start) and have the
// revision. An error fails the child before the Runner is called, with
// zero model calls. [RootVerifier] is one.
type ArtifactVerifier interface {
	VerifyArtifact(ctx context.Context, spec Spec, a Artifact) error
}
