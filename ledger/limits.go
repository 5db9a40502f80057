package ledger

import (
	"strconv"
)

// Limit is one ceiling: either a finite uint64 or unlimited.
//
// The zero value, Limit{}, is unlimited; [Max] makes a finite ceiling (Max(0)
// allows nothing). A Limit marshals as text: "unlimited" or a canonical decimal
// string, matching the deployment file's spelling.
type Limit struct {
	n      uint64
	finite bool
}

// Max returns the finite ceiling n.
func Max(n uint64) Limit { return Limit{n: n, finite: true} }

// Unlimited returns the unlimited ceiling, the same as Limit{}.
func Unlimited() Limit { return Limit{} }

// Value returns the ceiling and true when it is finite, or 0 and false when it
// is unlimited.
func (l Limit) Value() (uint64, bool) { return l.n, l.finite }

// IsFinite reports whether l is a finite ceiling.
func (l Limit) IsFinite() bool { return l.finite }

// Allows reports whether a total of used+more stays within l, without overflow.
func (l Limit) Allows(used, more uint64) bool {
	if !l.finite {
		return true
	}
	return used <= l.n && more <= l.n-used
}

// AtMost reports whether l is no larger than other (unlimited is the largest).
func (l Limit) AtMost(other Limit) bool {
	if !other.finite {
		return true
	}
	return l.finite && l.n <= other.n
}

// Min returns the smaller of l and other.
func (l Limit) Min(other Limit) Limit {
	if l.AtMost(other) {
		return l
	}
	return other
}

// String returns "unlimited" or the decimal ceiling.
func (l Limit) String() string {
	if !l.finite {
		return "unlimited"
	}
	return strconv.FormatUint(l.n, 10)
}

// MarshalText implements encoding.TextMarshaler.
func (l Limit) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// UnmarshalText accepts "unlimited" or a canonical decimal uint64 (no sign, no
// leading zeros, no spaces), the same grammar the reference uses for counters.
func (l *Limit) UnmarshalText(b []byte) error {
	v, err := ParseLimit(string(b))
	if err != nil {
		return err
	}
	*l = v
	return nil
}

// ParseLimit parses "unlimited" or a canonical decimal uint64.
func ParseLimit(s string) (Limit, error) {
	if s == "unlimited" {
		return Limit{}, nil
	}
	n, ok := parseCanonicalUint(s)
	if !ok {
		return Limit{}, &InvalidError{Field: "limit", Reason: strconv.Quote(s) + " is neither \"unlimited\" nor a canonical decimal from 0 to 18446744073709551615"}
	}
	return Max(n), nil
}

func parseCanonicalUint(s string) (uint64, bool) {
	if s == "" || len(s) > 20 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

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
	// as timed_out, not limit_exceeded. Errors of this kind also match
	// [ErrDeadline].
	LimitDuration LimitKind = "duration"
)

// Limits are the ceilings of one agent. The zero value is unlimited in every
// dimension.
//
// Three families behave differently:
//   - Cumulative ceilings (ModelCalls, ToolCalls, TotalTokens, CostMicroUSD,
//     Events) are charged by every action of the agent and its descendants and
//     are checked and reserved before admission.
//   - Per-item bounds (ContextBytes per model request, InputBytes for the task
//     input, OutputBytes for the final output, ToolInputBytes per call's
//     arguments, ToolOutputBytes per call's serialized result) are checked
//     against one item at a time.
//   - Duration is a deadline in milliseconds from the agent's start.
//
// A child's Limits may only be lower than or equal to its parent's, field by
// field; they apply in addition to every ancestor's.
type Limits struct {
	ModelCalls      Limit `json:"model_calls"`
	ToolCalls       Limit `json:"tool_calls"`
	TotalTokens     Limit `json:"total_tokens"`
	CostMicroUSD    Limit `json:"cost_microusd"`
	Events          Limit `json:"events"`
	DurationMillis  Limit `json:"duration_ms"`
	ContextBytes    Limit `json:"context_bytes"`
	InputBytes      Limit `json:"input_bytes"`
	OutputBytes     Limit `json:"output_bytes"`
	ToolInputBytes  Limit `json:"tool_input_bytes"`
	ToolOutputBytes Limit `json:"tool_output_bytes"`
}

type namedLimit struct {
	name  string
	limit *Limit
}

// fields lists every ceiling once, in declaration order.
func (l *Limits) fields() [11]namedLimit {
	return [...]namedLimit{
		{"model_calls", &l.ModelCalls},
		{"tool_calls", &l.ToolCalls},
		{"total_tokens", &l.TotalTokens},
		{"cost_microusd", &l.CostMicroUSD},
		{"events", &l.Events},
		{"duration_ms", &l.DurationMillis},
		{"context_bytes", &l.ContextBytes},
		{"input_bytes", &l.InputBytes},
		{"output_bytes", &l.OutputBytes},
		{"tool_input_bytes", &l.ToolInputBytes},
		{"tool_output_bytes", &l.ToolOutputBytes},
	}
}

// Narrow returns the child ceilings l under parent: an unlimited field of l
// inherits the parent's value, a finite one must be at most the parent's. It
// fails with an [*InvalidError] naming the first field that would be higher.
func (l Limits) Narrow(parent Limits) (Limits, error) {
	mine, theirs := l.fields(), parent.fields()
	for i := range mine {
		m, p := mine[i].limit, theirs[i].limit
		switch {
		case !m.IsFinite():
			*m = *p
		case !m.AtMost(*p):
			return Limits{}, &InvalidError{Field: "AgentSpec.Limits." + mine[i].name,
				Reason: "a child ceiling can only be lower than or equal to its parent's " + p.String() + ", got " + m.String()}
		}
	}
	return l, nil
}
