package event

import "encoding/json"

// CompactionSchemaVersion is the schema of a Compaction record.
const CompactionSchemaVersion = "compaction-v1"

// The compaction event kinds: one context compaction's start and end.
const (
	CompactionStarted  Type = "context.compaction.started"
	CompactionFinished Type = "context.compaction.finished"
)

// Compaction is the compaction-v1 record of the context.compaction.*
// events: which compaction, why it started, how it ended, and the sizes
// before and after, every counter a decimal string. It never holds the
// summary or any message: the summary text is content.
type Compaction struct {
	SchemaVersion string `json:"schema_version"`
	ID            string `json:"id"`
	// Trigger is threshold or overflow.
	Trigger string `json:"trigger"`
	// Status is running on the started event, then completed, cancelled,
	// timed_out, failed, limit_exceeded or policy_denied.
	Status                string  `json:"status"`
	BeforeBytes           string  `json:"before_bytes"`
	AfterBytes            *string `json:"after_bytes"`
	BeforeEstimatedTokens string  `json:"before_estimated_tokens"`
	AfterEstimatedTokens  *string `json:"after_estimated_tokens"`
	WindowTokens          *string `json:"window_tokens"`
	// RemovedTurns counts the turns the summary replaced (zero unless
	// completed).
	RemovedTurns string `json:"removed_turns"`
	// ReplacedHistorySHA256 digests the messages the summary replaces (or
	// would have).
	ReplacedHistorySHA256 string `json:"replaced_history_sha256"`
	// Reason is null unless the compaction did not complete.
	Reason *string `json:"reason"`
}

// NullSummary returns the summary member every compaction event carries:
// null, as the summary is content and no event carries content.
func NullSummary() json.RawMessage { return json.RawMessage("null") }
