package pablo

import (
	"encoding/json"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/internal/textx"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/model"
)

// TaskObject is a settled task, as the reference's task envelope: either
// an admitted task (IDs, outcome and accounting set, Error nil) or a
// pre-admission failure (those null and Error set).
type TaskObject struct {
	SchemaVersion string             `json:"schema_version"`
	RunID         *string            `json:"run_id"`
	SessionID     *string            `json:"session_id"`
	TraceID       *string            `json:"trace_id"`
	Outcome       *event.Outcome     `json:"outcome"`
	Accounting    *ledger.Accounting `json:"accounting"`
	Error         *TaskError         `json:"error"`
	// OutputValidation is the output-validation-v1 record, present when an
	// output schema was used.
	OutputValidation json.RawMessage `json:"output_validation,omitempty"`
	// OutputRepair is the output-repair-v1 record, present when repair is
	// enabled.
	OutputRepair *OutputRepair `json:"output_repair,omitempty"`
	// SnapshotDigest is the digest of the root agent's dispatch snapshot
	// (the ledger's snapshot record, taken when the task started): what
	// it was admitted to use. Empty when the task settled before its
	// catalogs opened.
	SnapshotDigest string `json:"snapshot_digest,omitempty"`
	// Resume, on a task a host resumed ([Runtime.Resume]), says how it
	// continued: the deployment fingerprint it started and resumed under
	// (resumed_under), the downtime, and its calls by class.
	Resume *event.Resume `json:"resume,omitempty"`
}

// TaskError is a pre-admission failure.
type TaskError struct {
	// Code is invalid_arguments, invalid_configuration,
	// credential_unavailable or trace_setup_failed.
	Code string `json:"code"`
	// Message says why, bounded to MaxErrorMessage bytes. It names
	// credentials, bindings and options, never their values.
	Message string `json:"message,omitempty"`
}

// MaxErrorMessage bounds TaskError.Message.
const MaxErrorMessage = 2048

// PreAdmissionFailure returns the envelope of a task that was never
// admitted.
func PreAdmissionFailure(code, message string) *TaskObject {
	return &TaskObject{SchemaVersion: event.SchemaVersion, Error: &TaskError{Code: code, Message: textx.Shorten(message, MaxErrorMessage)}}
}

// TaskRequest is everything a host gives one root task. [Runtime.Start] is
// StartTask with the input alone.
type TaskRequest struct {
	// Input is the task's prompt.
	Input string
	// History is the conversation this task continues, placed before
	// Input: user and assistant messages, and tool results each answering
	// a call of the assistant message before it (a session carries its
	// earlier turns as the messages they were). It grants nothing: a call
	// in it is history, never run again.
	History []model.Message
	// SessionID names the conversation the task belongs to: its events'
	// session_id and the ledger's link from task to session. Empty means
	// the task is its own session (its run ID).
	SessionID string
	// Workspace is recorded with the session link, so a session can be
	// listed by the workspace it ran in. Empty records none.
	Workspace string
	// MCPServers, when not nil, selects the configured MCP servers this
	// task may open, by name: an exact subset of the deployment's. Nil
	// means every configured server.
	MCPServers []string
	// Roles are the roles the host gives the task: a capability whose
	// rule or configuration requires a role the task does not hold is
	// denied, the decision naming the role. The runtime's Authority must
	// be an [authority.RoleBinder] (a deployment's is) when Roles is not
	// empty. A child holds its parent's roles and never gains one.
	Roles []string
	// Kind is the task's kind (`pablo run --kind`): the task activates,
	// and skill.read reads, only the Skills whose task-kinds list it or
	// list none. Empty keeps every activated Skill.
	Kind string
	// Approver answers the approval requests of this task's calls. Nil
	// means none can be asked: a call that needs approval is denied.
	Approver Approver

	turn    uint64                             // the prompt's number in its session, from Sessions
	settled func(*TaskObject, []model.Message) // called once the task settled, before Done closes, with its transcript
}
