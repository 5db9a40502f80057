package ledger

import "strconv"

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

func (d Delivery) valid() bool {
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

func (s ToolStatus) valid() bool {
	switch s {
	case ToolAdmissionFailed, ToolCompleted, ToolRecoverableError, ToolWorkLimit, ToolCancelled,
		ToolTimedOut, ToolOutputLimit, ToolInvalidArguments, ToolPolicyDenied, ToolSpawnFailed,
		ToolIOFailed, ToolCleanupFailed, ToolEventSinkFailed:
		return true
	}
	return false
}

// OutcomeStatus tags an [Outcome].
type OutcomeStatus string

// Outcome statuses (reference §3.1).
const (
	OutcomeCompleted     OutcomeStatus = "completed"
	OutcomeCancelled     OutcomeStatus = "cancelled"
	OutcomeTimedOut      OutcomeStatus = "timed_out"
	OutcomePolicyDenied  OutcomeStatus = "policy_denied"
	OutcomeLimitExceeded OutcomeStatus = "limit_exceeded"
	OutcomeFailed        OutcomeStatus = "failed"
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

// Outcome is the terminal outcome of an agent; the root agent's outcome is the
// task's. Only the fields of its Status are set:
//   - policy_denied: Rule (a reference rule enum or a configured rule ID);
//   - limit_exceeded: Limit;
//   - failed: Code and Delivery;
//   - completed: optionally Result, a reference to the stored output.
type Outcome struct {
	Status   OutcomeStatus `json:"status"`
	Rule     string        `json:"rule,omitempty"`
	Limit    LimitKind     `json:"limit,omitempty"`
	Code     FailureCode   `json:"code,omitempty"`
	Delivery Delivery      `json:"delivery,omitempty"`
	Result   ResultRef     `json:"result,omitempty"`
	// Reason says why a failed task failed where its code alone does not
	// (which server did not start, and how): masked and bounded by the
	// engine to MaxReasonBytes.
	Reason string `json:"reason,omitempty"`
}

// MaxReasonBytes bounds Outcome.Reason.
const MaxReasonBytes = 2048

func (o Outcome) validate() error {
	bad := func(reason string) error {
		return &InvalidError{Field: "outcome", Reason: reason}
	}
	extra := o.Rule != "" && o.Status != OutcomePolicyDenied ||
		o.Limit != "" && o.Status != OutcomeLimitExceeded ||
		(o.Code != "" || o.Delivery != "" || o.Reason != "") && o.Status != OutcomeFailed ||
		o.Result != "" && o.Status != OutcomeCompleted
	if extra {
		return bad("status " + strconv.Quote(string(o.Status)) + " carries a field that belongs to another status")
	}
	switch o.Status {
	case OutcomeCompleted, OutcomeCancelled, OutcomeTimedOut:
	case OutcomePolicyDenied:
		if o.Rule == "" {
			return bad("policy_denied needs the deciding Rule")
		}
	case OutcomeLimitExceeded:
		if o.Limit == "" {
			return bad("limit_exceeded needs the Limit kind")
		}
	case OutcomeFailed:
		if o.Code == "" || !o.Delivery.valid() {
			return bad("failed needs a Code and a Delivery of not_sent, may_have_been_sent or response_received")
		}
		if len(o.Reason) > MaxReasonBytes {
			return bad("a Reason is at most 2048 bytes")
		}
	default:
		return bad("unknown status " + strconv.Quote(string(o.Status)))
	}
	return nil
}
