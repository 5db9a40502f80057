package engine

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pabloagent/pablo/model"
)

// A tool call has two identities. Pablo's own call ID names it in the
// ledger, the events, the approval requests, the idempotency key and the
// trace: "call_T_I", the I-th call (from 1) of the agent's T-th assistant
// turn (from 1, counting the task's own turns, not those of the
// conversation it continues),
// unique within the agent and the same every time the same task runs, so
// the idempotency key derived from it is stable across restarts. The
// provider's ID is a wire detail: it pairs the assistant message's call
// with the tool message that answers it, and nothing else. Providers write
// what they like there (local servers repeat "call_0" every turn, send
// none, or send the same ID for two parallel calls), so it never keys a
// record.

// maxWireCallIDBytes bounds a provider's call ID that goes back to it
// verbatim; a longer one is replaced (no provider's own IDs come near it).
const maxWireCallIDBytes = 256

// callID is Pablo's ID of the i-th call (from 0) of turn turn.
func callID(turn, i int) string {
	// One allocation, the string: Itoa allocates its own from 100 on.
	var room [48]byte
	b := append(room[:0], "call_"...)
	b = strconv.AppendInt(b, int64(turn), 10)
	b = append(b, '_')
	b = strconv.AppendInt(b, int64(i+1), 10)
	return string(b)
}

// pairCalls returns the calls of turn turn under the IDs they go back to
// the provider with: the provider's own where it is usable (see
// usableWireID) and unique in the conversation, else one made up that is.
// It records each in s.wireIDs. The model's slice is not modified (a
// host's model may hand out the same response twice): it is copied when
// an ID changes.
func (s *step) pairCalls(calls []model.ToolCall, turn int) []model.ToolCall {
	out := calls
	for i := range calls {
		id := calls[i].ID
		if s.wireIDs.Has(id) || !usableWireID(id) {
			if &out[0] == &calls[0] {
				out = slices.Clone(calls)
			}
			id = s.madeUpWireID(turn, i)
			out[i].ID = id
		}
		s.wireIDs.Add(id, 0)
	}
	return out
}

// usableWireID reports whether a provider's call ID can go back to it as
// it is: not empty, at most maxWireCallIDBytes, valid UTF-8 and holding
// no U+FFFD, the mark a JSON decoder leaves where the provider sent a lone
// surrogate (the provider would not get back what it sent).
func usableWireID(id string) bool {
	return id != "" && len(id) <= maxWireCallIDBytes && utf8.ValidString(id) && !strings.ContainsRune(id, utf8.RuneError)
}

// madeUpWireID is a call ID for the wire, unique in the conversation: the
// call's own Pablo ID, or that with a suffix when the provider already
// used it.
func (s *step) madeUpWireID(turn, i int) string {
	base := callID(turn, i)
	id := base
	for n := 2; ; n++ {
		if !s.wireIDs.Has(id) {
			return id
		}
		id = base + "_" + strconv.Itoa(n)
	}
}

// noteWireID records a call ID the conversation holds.
func (s *step) noteWireID(id string) {
	s.wireIDs.Add(id, 0)
}
