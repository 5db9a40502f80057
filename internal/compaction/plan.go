package compaction

import "github.com/pabloagent/pablo/model"

// MaxPerTask is the most compactions one agent's loop starts (threshold
// and overflow together). The reference summarizes once per task; Pablo
// compacts again when a long task fills its context again, each summary
// replacing the previous one and the turns since, up to this many times.
// Past it the loop sends what it has, and a request over the ceiling ends
// the task limit_exceeded/context_bytes as without compaction.
const MaxPerTask = 32

// MaxKeepRecentTurns is the most turns context.keep_recent_turns keeps.
const MaxKeepRecentTurns = 32

// Span is the part of a history a summary replaces: messages [From, To).
// Everything before From (the pinned prefix: the conversation before the
// task, the original task, activated Skills' instructions) and from To on
// (the turns kept verbatim) stays as it is.
type Span struct {
	From, To int
	// Turns counts the assistant messages the span holds.
	Turns int
}

// Empty reports whether the span replaces no turn (at most a previous
// summary): there is no history to summarize.
func (s Span) Empty() bool { return s.Turns == 0 }

// Choose picks the span a summary replaces in history: from pinned (the
// number of leading messages that are never summarized; a previous
// summary sits right after them and is replaced with the turns since) to
// the start of the keep-th last turn. A turn starts at an assistant
// message and holds the tool results that answer it, so no kept tool
// result is ever parted from the call it answers.
func Choose(history []model.Message, pinned, keep int) Span {
	pinned = min(max(pinned, 0), len(history))
	to := len(history)
	if keep > 0 {
		seen := 0
		to = pinned
		for i := len(history) - 1; i >= pinned; i-- {
			if history[i].Role == model.RoleAssistant {
				seen++
				if seen == keep {
					to = i
					break
				}
			}
		}
	}
	sp := Span{From: pinned, To: max(to, pinned)}
	for _, m := range history[sp.From:sp.To] {
		if m.Role == model.RoleAssistant {
			sp.Turns++
		}
	}
	return sp
}

// Replace returns a new history in which span is replaced by summary;
// history itself is not modified, so a failed compaction keeps it whole
// and a completed one swaps it at once.
func Replace(history []model.Message, span Span, summary model.Message) []model.Message {
	out := make([]model.Message, 0, len(history)-(span.To-span.From)+1)
	out = append(out, history[:span.From]...)
	out = append(out, summary)
	return append(out, history[span.To:]...)
}

// Halve returns the span of the first half of sp's turns (rounded down,
// at least one), for a summary request that would itself be too large:
// the later turns then stay verbatim. ok is false when sp holds one turn
// or fewer and cannot be halved.
func Halve(history []model.Message, sp Span) (Span, bool) {
	if sp.Turns <= 1 {
		return sp, false
	}
	keep := sp.Turns / 2
	seen := 0
	for i := sp.From; i < sp.To; i++ {
		if history[i].Role != model.RoleAssistant {
			continue
		}
		if seen == keep {
			return Span{From: sp.From, To: i, Turns: keep}, true
		}
		seen++
	}
	return sp, false
}
