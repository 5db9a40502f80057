// Package outcome is the vocabulary every settled piece of work is told in:
// a task's terminal [Status], a tool call's [ToolStatus], the [FailureCode]
// and [Delivery] certainty of a failure, the [LimitKind] of the ceiling that
// stopped work, and the [Class] recovery sorts a call into.
//
// The words are the reference's (its task object, §3.1, and tool results,
// §4.1), spelled as its JSON spells them, so a value here is also what the
// ledger stores, the task object prints and an ACP or A2A peer reads. The
// package holds words only: the ledger (package ledger) records and checks
// them, the runtime (package pablo) ends tasks with them.
//
// Delivery is the certainty that matters most: work whose delivery is
// [MayHaveBeenSent] has an unknown outcome and is never replayed
// automatically.
package outcome

// Delivery is the certainty that a request reached its peer.
type Delivery string

// Delivery certainties, as in the reference. Work whose delivery is
// [MayHaveBeenSent] has an unknown outcome and is never replayed automatically.
const (
	// NotSent: there is evidence the request was not delivered.
	NotSent Delivery = "not_sent"
	// MayHaveBeenSent: delivery cannot be proven either way.
	MayHaveBeenSent Delivery = "may_have_been_sent"
	// ResponseReceived: the peer responded or streaming began.
	ResponseReceived Delivery = "response_received"
)

// Valid reports whether d is one of the three certainties.
func (d Delivery) Valid() bool {
	return d == NotSent || d == MayHaveBeenSent || d == ResponseReceived
}

// ToolStatus is the status of a settled tool call (reference §4.1).
type ToolStatus string

// Tool statuses.
const (
	ToolAdmissionFailed  ToolStatus = "admission_failed"
	ToolCompleted        ToolStatus = "completed"
	ToolRecoverableError ToolStatus = "recoverable_error"
	ToolWorkLimit        ToolStatus = "work_limit"
	ToolCancelled        ToolStatus = "cancelled"
	ToolTimedOut         ToolStatus = "timed_out"
	ToolOutputLimit      ToolStatus = "output_limit"
	ToolInvalidArguments ToolStatus = "invalid_arguments"
	ToolPolicyDenied     ToolStatus = "policy_denied"
	ToolSpawnFailed      ToolStatus = "spawn_failed"
	ToolIOFailed         ToolStatus = "io_failed"
	ToolCleanupFailed    ToolStatus = "cleanup_failed"
	ToolEventSinkFailed  ToolStatus = "event_sink_failed"
)

// Valid reports whether s is one of the tool statuses.
func (s ToolStatus) Valid() bool {
	switch s {
	case ToolAdmissionFailed, ToolCompleted, ToolRecoverableError, ToolWorkLimit, ToolCancelled,
		ToolTimedOut, ToolOutputLimit, ToolInvalidArguments, ToolPolicyDenied, ToolSpawnFailed,
		ToolIOFailed, ToolCleanupFailed, ToolEventSinkFailed:
		return true
	}
	return false
}

// Status is a task's or an agent's terminal status (the status of
// ledger.Outcome and of the task object's outcome).
type Status string

// Statuses (reference §3.1).
const (
	Completed     Status = "completed"
	Cancelled     Status = "cancelled"
	TimedOut      Status = "timed_out"
	PolicyDenied  Status = "policy_denied"
	LimitExceeded Status = "limit_exceeded"
	Failed        Status = "failed"
)

// FailureCode says why a task or call failed.
type FailureCode string

// Failure codes: the reference's ACP v2 list plus the two members the Rust
// enum has and its schema omits (model_attempt_timed_out,
// continuation_incompatible).
const (
	FailProviderRejected           FailureCode = "provider_rejected"
	FailProviderTransport          FailureCode = "provider_transport"
	FailMalformedStream            FailureCode = "malformed_stream"
	FailUnsupportedProviderContent FailureCode = "unsupported_provider_content"
	FailEventSinkIO                FailureCode = "event_sink_io"
	FailInvalidToolArguments       FailureCode = "invalid_tool_arguments"
	FailToolExecution              FailureCode = "tool_execution"
	FailToolCleanup                FailureCode = "tool_cleanup"
	FailAccountingBoundViolated    FailureCode = "accounting_bound_violated"
	FailChildAdmission             FailureCode = "child_admission"
	FailRemoteTask                 FailureCode = "remote_task"
	FailContextOverflow            FailureCode = "context_overflow"
	FailCompactionFailed           FailureCode = "compaction_failed"
	FailOutputValidationFailed     FailureCode = "output_validation_failed"
	FailModelAttemptTimedOut       FailureCode = "model_attempt_timed_out"
	FailContinuationIncompatible   FailureCode = "continuation_incompatible"
	// FailToolStartup: a required tool catalog (an MCP server the
	// deployment requires) could not start, so no tool was offered. A Go
	// extension of the reference's codes.
	FailToolStartup FailureCode = "tool_startup"
)

// LimitKind names the ceiling that stopped work, spelled as the reference's
// LimitKind (the `limit` of a limit_exceeded outcome).
type LimitKind string

// The reference's limit kinds, plus [LimitDuration].
const (
	LimitInputBytes      LimitKind = "input_bytes"
	LimitOutputBytes     LimitKind = "output_bytes"
	LimitOutputTokens    LimitKind = "output_tokens"
	LimitModelCalls      LimitKind = "model_calls"
	LimitEvents          LimitKind = "events"
	LimitTraceBytes      LimitKind = "trace_bytes"
	LimitToolCalls       LimitKind = "tool_calls"
	LimitToolInputBytes  LimitKind = "tool_input_bytes"
	LimitToolOutputBytes LimitKind = "tool_output_bytes"
	LimitContextBytes    LimitKind = "context_bytes"
	LimitFilesystemWork  LimitKind = "filesystem_work"
	LimitTotalTokens     LimitKind = "total_tokens"
	LimitCost            LimitKind = "cost"
	// LimitDuration is not a reference LimitKind: a passed deadline ends a task
	// as timed_out, not limit_exceeded. A ledger LimitError of this kind also
	// matches ledger.ErrDeadline.
	LimitDuration LimitKind = "duration"
)

// Class sorts a recovered call by what a host may do with it.
type Class string

// Classes of recovered calls.
const (
	// ClassCompleted: the call settled with a certain delivery; its recorded
	// status and result are final.
	ClassCompleted Class = "completed"
	// ClassUnknown: the call was dispatched and never settled, or settled with
	// delivery may_have_been_sent. It may have taken effect. Never replay it
	// automatically; reconcile with the peer or ask a human.
	ClassUnknown Class = "unknown"
	// ClassRetryable: the call was admitted and provably never dispatched. It
	// had no effect and may be retried after re-checking authority.
	ClassRetryable Class = "retryable"
)
