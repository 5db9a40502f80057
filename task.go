package pablo

import (
	"encoding/json"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/internal/textx"
	"github.com/pabloagent/pablo/ledger"
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
