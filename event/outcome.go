package event

import (
	"github.com/pabloagent/pablo/ledger/outcome"
	"github.com/pabloagent/pablo/model"
)

// Outcome is how a task ended, tagged by Status: completed, cancelled,
// timed_out, policy_denied (with Rule), limit_exceeded (with Limit) or failed
// (with Code and Delivery). Its vocabulary is the ledger's: the same
// statuses, limit kinds, failure codes and delivery certainties.
type Outcome struct {
	Status outcome.Status `json:"status"`
	Output *string        `json:"output,omitempty"`
	// Masked counts the secrets masked in Output (absent when none): the
	// output is validated as the model wrote it, then recorded and
	// returned masked.
	Masked       int                `json:"masked,omitempty"`
	FinishReason model.FinishReason `json:"finish_reason,omitempty"`
	Usage        *OutcomeUsage      `json:"usage,omitempty"`
	// Rule is a mandatory rule name ("workspace", "symlink",
	// "tool_unavailable", "environment", "unsupported_platform") or
	// {"configured": {"id": RULE}}.
	Rule     any                 `json:"rule,omitempty"`
	Limit    outcome.LimitKind   `json:"limit,omitempty"`
	Code     outcome.FailureCode `json:"code,omitempty"`
	Delivery outcome.Delivery    `json:"delivery,omitempty"`
	// Reason says why a failed task failed where Code alone does not (the
	// MCP server that did not start, and how), or who cancelled a
	// cancelled one (the host's shutdown of the runtime); masked, at most
	// 2,048 bytes. A Go extension of the reference's outcome.
	Reason string `json:"reason,omitempty"`
}

// OutcomeUsage is the usage of a completed task as JSON integers or null.
type OutcomeUsage struct {
	InputTokens      *uint64 `json:"input_tokens"`
	OutputTokens     *uint64 `json:"output_tokens"`
	CacheReadTokens  *uint64 `json:"cache_read_input_tokens"`
	CacheWriteTokens *uint64 `json:"cache_write_input_tokens"`
}

// The outcome statuses: the ledger's.
const (
	StatusCompleted     = outcome.Completed
	StatusCancelled     = outcome.Cancelled
	StatusTimedOut      = outcome.TimedOut
	StatusPolicyDenied  = outcome.PolicyDenied
	StatusLimitExceeded = outcome.LimitExceeded
	StatusFailed        = outcome.Failed
)
