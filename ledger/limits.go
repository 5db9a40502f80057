package ledger

import "github.com/pabloagent/pablo/ledger/ceiling"

// Limit is one ceiling: not set (the zero value), a finite uint64, or
// unlimited. [Max] makes a finite ceiling (Max(0) allows nothing) and
// [Unlimited] one that bounds nothing. A Limit that is not set takes its
// reader's default: a root's unset ceiling bounds nothing (NewRoot records
// it as unlimited), a child's inherits its parent's (see [Limits.Narrow]),
// and a model call without an attested bound has none. A Limit marshals as
// "unlimited", a canonical decimal string, or null when not set.
type Limit = ceiling.Limit

// Max returns the finite ceiling n.
func Max(n uint64) Limit { return ceiling.Max(n) }

// Unlimited returns the ceiling that bounds nothing.
func Unlimited() Limit { return ceiling.Unlimited() }

func parseCanonicalUint(s string) (uint64, bool) { return ceiling.ParseCanonicalUint(s) }

// Limits are the ceilings of one agent. The zero value sets none: a root
// with it is unlimited in every dimension, a child inherits every ceiling
// of its parent.
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

// Narrow returns the child ceilings l under parent: a field of l that is not
// set or unlimited inherits the parent's value, a finite one must be at most
// the parent's. It fails with an [*InvalidError] naming the first field that
// would be higher.
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

// orUnlimited returns l with every field that is not set made unlimited: a
// root's ceilings as it records and enforces them.
func (l Limits) orUnlimited() Limits {
	for _, f := range l.fields() {
		*f.limit = f.limit.Or(Unlimited())
	}
	return l
}
