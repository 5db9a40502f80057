package compaction

// Bounds are what a request must fit: the agent's context byte ceiling,
// the model's declared window and the output allowance each request
// reserves in it, and the safety margin kept below both.
type Bounds struct {
	// ContextBytes is the byte ceiling of one request (the agent's
	// context_bytes limit); zero means none.
	ContextBytes uint64
	// WindowTokens is the model's declared context window
	// (model.context_window_tokens); zero means unknown, and the token
	// trigger then never fires (the window is never guessed).
	WindowTokens uint64
	// MaxOutputTokens is the output allowance of a normal request.
	MaxOutputTokens uint64
	// MarginPercent is context.safety_margin_percent (1..50).
	MarginPercent uint64
}

// Measure is one request's size: its bytes (instructions, messages and
// tool descriptors) and its estimated input tokens.
type Measure struct {
	Bytes  uint64
	Tokens uint64
}

// ByteThreshold is the byte count at and above which a request is due for
// compaction: the ceiling minus the margin (ceiling × margin% / 100,
// rounded down). It is zero when there is no ceiling.
func (b Bounds) ByteThreshold() uint64 {
	if b.ContextBytes == 0 {
		return 0
	}
	return b.ContextBytes - margin(b.ContextBytes, b.MarginPercent)
}

// TokenThreshold is the estimated input plus output allowance at and
// above which a request is due: the window minus the margin. It is zero
// when the window is unknown.
func (b Bounds) TokenThreshold() uint64 {
	if b.WindowTokens == 0 {
		return 0
	}
	return b.WindowTokens - margin(b.WindowTokens, b.MarginPercent)
}

// Due reports whether a request of measure m is due for compaction before
// it is sent (REFERENCE §5.6): raw bytes ≥ byte ceiling − margin, or, when
// the window is known, estimated input + max output ≥ window − margin.
func (b Bounds) Due(m Measure) bool {
	if t := b.ByteThreshold(); t > 0 && m.Bytes >= t {
		return true
	}
	if t := b.TokenThreshold(); t > 0 && satAdd(m.Tokens, b.MaxOutputTokens) >= t {
		return true
	}
	return false
}

// Fits reports whether a request of measure m can be sent at all: within
// the byte ceiling and, when the window is known, with its output
// allowance within the window. A request that is due but still fits may
// go on with its history when a compaction fails.
func (b Bounds) Fits(m Measure) bool {
	if b.ContextBytes > 0 && m.Bytes > b.ContextBytes {
		return false
	}
	if b.WindowTokens > 0 && satAdd(m.Tokens, b.MaxOutputTokens) > b.WindowTokens {
		return false
	}
	return true
}

func margin(n, percent uint64) uint64 {
	percent = min(percent, 100)
	hi := n / 100 * percent
	return hi + n%100*percent/100
}
