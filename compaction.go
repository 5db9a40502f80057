package pablo

import (
	"errors"
)

// CompactionOptions turn on context compaction (REFERENCE §5.6,
// options.context): before a model turn whose request is due (its bytes
// at the agent's context ceiling minus the margin, or its estimated tokens
// plus the output allowance at the declared window minus the margin), and
// once after a provider refuses a request with an explicit
// context-overflow code, the loop asks the model for a summary of the
// history between the pinned prefix (the conversation before the task, the
// task, activated Skills' instructions) and the last KeepRecentTurns
// turns, and replaces that part with the summary as one user-role
// "derived history summary" message. A zero field takes its default.
type CompactionOptions struct {
	// SafetyMarginPercent is the margin kept below the ceiling and the
	// window, 1..50 (default 10).
	SafetyMarginPercent int
	// MaxSummaryTokens bounds the summary's output tokens, 16..65536
	// (default 1024), clamped to Options.MaxOutputTokens.
	MaxSummaryTokens int64
	// MaxSummaryBytes bounds the summary's bytes, 256..1,048,576 (default
	// 16384), clamped to the root's output_bytes ceiling.
	MaxSummaryBytes int64
	// KeepRecentTurns is how many of the last turns stay verbatim, 0..32
	// (default 0).
	KeepRecentTurns int
	// ContextWindowTokens is the model's declared context window
	// (model.context_window_tokens); zero means unknown, and only the
	// byte ceiling triggers a compaction. It is never guessed.
	ContextWindowTokens uint64
	// MaxCompactions bounds the compactions of one agent's loop,
	// 1..MaxCompactionsPerTask (default MaxCompactionsPerTask).
	MaxCompactions int
}

// MaxCompactionsPerTask is the most compactions one agent's loop starts.
// The reference summarizes once per task; a long Pablo task compacts
// again each time its context fills, each summary replacing the previous
// one and the turns since, up to this many times (docs/differences.md).
const MaxCompactionsPerTask = 32

// ErrCompactionOptions is the kind of an invalid CompactionOptions.
var ErrCompactionOptions = errors.New("pablo: invalid compaction options")
