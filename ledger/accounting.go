package ledger

import (
	"strconv"
)

// Count is a counter that is either known or unknown. The zero value is a known
// zero. It marshals as a canonical decimal string, or null when unknown, the
// reference's accounting encoding (so values above 2^53 survive JSON).
type Count struct {
	N       uint64
	Unknown bool
}

// known returns the known count n.
func known(n uint64) Count { return Count{N: n} }

// unknownCount returns an unknown count.
func unknownCount() Count { return Count{Unknown: true} }

// add returns c+o; unknown is absorbing. Overflow saturates, which no real
// usage reaches.
func (c Count) add(o Count) Count {
	if c.Unknown || o.Unknown {
		return Count{Unknown: true}
	}
	s := c.N + o.N
	if s < c.N {
		s = ^uint64(0)
	}
	return Count{N: s}
}

// MarshalJSON writes "123" or null.
func (c Count) MarshalJSON() ([]byte, error) {
	if c.Unknown {
		return []byte("null"), nil
	}
	b := make([]byte, 0, 22)
	b = append(b, '"')
	b = strconv.AppendUint(b, c.N, 10)
	return append(b, '"'), nil
}

// UnmarshalJSON reads a canonical decimal string or null.
func (c *Count) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*c = Count{Unknown: true}
		return nil
	}
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return &InvalidError{Field: "count", Reason: "want a decimal string or null, got " + string(b)}
	}
	n, ok := parseCanonicalUint(string(b[1 : len(b)-1]))
	if !ok {
		return &InvalidError{Field: "count", Reason: "not a canonical decimal: " + string(b)}
	}
	*c = Count{N: n}
	return nil
}

// String returns the decimal or "unknown".
func (c Count) String() string {
	if c.Unknown {
		return "unknown"
	}
	return strconv.FormatUint(c.N, 10)
}

// Usage is what a provider reported for one model call, or the aggregate of
// many. Cache fields are subsets of InputTokens and are never added to charges.
type Usage struct {
	InputTokens      Count `json:"input_tokens"`
	OutputTokens     Count `json:"output_tokens"`
	CacheReadTokens  Count `json:"cache_read_input_tokens"`
	CacheWriteTokens Count `json:"cache_write_input_tokens"`
}

func (u Usage) add(o Usage) Usage {
	return Usage{
		InputTokens:      u.InputTokens.add(o.InputTokens),
		OutputTokens:     u.OutputTokens.add(o.OutputTokens),
		CacheReadTokens:  u.CacheReadTokens.add(o.CacheReadTokens),
		CacheWriteTokens: u.CacheWriteTokens.add(o.CacheWriteTokens),
	}
}

// Charge returns the token charge of u: input + output, unknown when either is.
func (u Usage) Charge() Count { return u.InputTokens.add(u.OutputTokens) }

// Accounting is a snapshot of one agent's counters, covering its own work and
// that of its descendants (so the root's Accounting is the task aggregate).
// It marshals like the reference's accounting object.
type Accounting struct {
	// ModelCalls and ToolCalls count dispatched calls; a call rejected or
	// abandoned before dispatch counts nothing.
	ModelCalls Count `json:"model_calls"`
	ToolCalls  Count `json:"tool_calls"`
	// Usage sums reported usage; a dispatched call with missing usage makes a
	// field unknown. A proven not_sent call adds a known zero.
	Usage        Usage `json:"usage"`
	CostMicroUSD Count `json:"cost_microusd"`
	// ChargedTokens and ChargedCostMicroUSD are what settled calls charged
	// against the ceilings: the actual when known, the reservation kept when
	// the actual is unknown or delivery uncertain, zero for proven not_sent.
	// Unknown when a call had neither an actual nor a bound.
	ChargedTokens       Count `json:"charged_tokens"`
	ChargedCostMicroUSD Count `json:"charged_cost_microusd"`
	// Reserved is what admitted or dispatched but unsettled calls hold.
	ReservedTokens       uint64 `json:"-"`
	ReservedCostMicroUSD uint64 `json:"-"`
	// Events counts appended events, the terminal one included.
	Events uint64 `json:"-"`
}

// counters is the mutable state behind an Accounting, guarded by Root.mu.
type counters struct {
	modelCalls, modelRes uint64 // dispatched; admitted but not dispatched
	toolCalls, toolRes   uint64
	tokens, tokensRes    uint64 // charged (known part) and reserved
	cost, costRes        uint64
	tokensUnknown        bool // a charge without actual or bound
	costUnknown          bool
	events, eventsRes    uint64 // appended; reserved terminal slots
	usage                Usage
	costActual           Count
}

func (c *counters) snapshot() Accounting {
	return Accounting{
		ModelCalls:           known(c.modelCalls),
		ToolCalls:            known(c.toolCalls),
		Usage:                c.usage,
		CostMicroUSD:         c.costActual,
		ChargedTokens:        Count{N: c.tokens, Unknown: c.tokensUnknown},
		ChargedCostMicroUSD:  Count{N: c.cost, Unknown: c.costUnknown},
		ReservedTokens:       c.tokensRes,
		ReservedCostMicroUSD: c.costRes,
		Events:               c.events,
	}
}
