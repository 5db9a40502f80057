package compaction

// Trigger says why a compaction started: the request was due before it
// was sent (threshold), or the provider refused it with an explicit
// context-overflow code (overflow).
type Trigger string

// The triggers of the compaction-v1 record.
const (
	TriggerThreshold Trigger = "threshold"
	TriggerOverflow  Trigger = "overflow"
)

// Reason says why a compaction did not complete: the compaction-v1
// record's reason (null when it completed).
type Reason string

// The reasons of the compaction-v1 record, every value of the reference.
// docs/compaction.md says which test produces each, and why the two that
// cannot arise in Pablo cannot.
const (
	// ReasonSummaryUnavailable: the summary call failed at the provider
	// (refused, broken, unsupported content) or its text is not UTF-8.
	ReasonSummaryUnavailable Reason = "summary_unavailable_or_invalid"
	// The summary call ended as the task would: cancelled, timed out, a
	// ledger failure, a ceiling, a denial.
	ReasonCancelled     Reason = "cancelled"
	ReasonTimedOut      Reason = "timed_out"
	ReasonFailed        Reason = "failed"
	ReasonLimitExceeded Reason = "limit_exceeded"
	ReasonPolicyDenied  Reason = "policy_denied"
	// ReasonNoHistory: nothing lies between the pinned prefix and the
	// turns kept verbatim.
	ReasonNoHistory Reason = "no_history"
	// ReasonSummaryInputTooLarge: the summary request itself would be due
	// (over the byte ceiling or the window, minus the margin).
	ReasonSummaryInputTooLarge Reason = "summary_input_too_large"
	// ReasonEmptySummary: the summary is empty or white space.
	ReasonEmptySummary Reason = "empty_summary"
	// ReasonNotSmaller: the summary is over max_summary_bytes, was cut at
	// max_summary_tokens, or is not strictly smaller than what it
	// replaces.
	ReasonNotSmaller Reason = "summary_not_smaller_or_too_large"
	// ReasonModelUnsupported: the reference's separate summary model
	// cannot serve; Pablo summarizes on the task's own selected entry.
	ReasonModelUnsupported Reason = "summary_model_unsupported"
	// ReasonBoundsUnsupported: max_summary_tokens or max_summary_bytes,
	// clamped to the profile and root bounds, fell below its minimum.
	ReasonBoundsUnsupported Reason = "summary_bounds_unsupported"
	// ReasonEventDeliveryFailed: the ledger or the host's sink refused a
	// compaction event.
	ReasonEventDeliveryFailed Reason = "event_delivery_failed"
	// ReasonToolCallDuringSummary: the summary call proposed a tool call
	// (it is offered none).
	ReasonToolCallDuringSummary Reason = "tool_call_during_summary"
	// ReasonReasoningUnsupported: mentioned by the reference's reasoning
	// document; Pablo sends a summary request no reasoning setting.
	ReasonReasoningUnsupported Reason = "summary_reasoning_unsupported"
)

// Reasons lists every reason, in the reference's order.
func Reasons() []Reason {
	return []Reason{ReasonSummaryUnavailable, ReasonCancelled, ReasonTimedOut, ReasonFailed, ReasonLimitExceeded,
		ReasonPolicyDenied, ReasonNoHistory, ReasonSummaryInputTooLarge, ReasonEmptySummary, ReasonNotSmaller,
		ReasonModelUnsupported, ReasonBoundsUnsupported, ReasonEventDeliveryFailed, ReasonToolCallDuringSummary,
		ReasonReasoningUnsupported}
}
