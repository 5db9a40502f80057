package model

import (
	"errors"
	"math"
	"math/bits"
)

// Bound is the worst case of one model call, which its adapter attests
// before the request is sent: the call cannot use more tokens, or cost
// more, than the bound says. The runtime reserves it against the
// total_tokens and cost ceilings and charges the actual when the call
// settles; an actual above its bound fails the task
// accounting_bound_violated, so a wrong attestation is never silent.
type Bound struct {
	// InputTokens bounds the request's input tokens, the tokens read from
	// or written to a prompt cache included.
	InputTokens uint64
	// OutputTokens bounds the answer's tokens, reasoning included: the
	// output allowance the request carries on the wire.
	OutputTokens uint64
	// Priced says the model has prices, so the cost fields mean something.
	Priced bool
	// InputCostMicroUSD bounds the cost of InputTokens at the dearest
	// input price (plain, cache read or cache write).
	InputCostMicroUSD uint64
	// OutputPrice is the price of a million output tokens, in micro-USD.
	OutputPrice uint64
}

// Tokens is the call's token bound, InputTokens plus OutputTokens, or
// math.MaxUint64 when the sum overflows.
func (b Bound) Tokens() uint64 {
	s, carry := bits.Add64(b.InputTokens, b.OutputTokens, 0)
	if carry != 0 {
		return math.MaxUint64
	}
	return s
}

// CostMicroUSD is the call's cost bound in micro-USD, rounded up; ok is
// false when the model has no prices or the bound overflows.
func (b Bound) CostMicroUSD() (cost uint64, ok bool) {
	if !b.Priced {
		return 0, false
	}
	hi, lo := bits.Mul64(b.OutputTokens, b.OutputPrice)
	if hi >= 1_000_000 {
		return 0, false
	}
	q, r := bits.Div64(hi, lo, 1_000_000)
	if r > 0 {
		if q == math.MaxUint64 {
			return 0, false
		}
		q++
	}
	s, carry := bits.Add64(q, b.InputCostMicroUSD, 0)
	if carry != 0 {
		return 0, false
	}
	return s, true
}

// ErrUnbounded is what Bounder.Bound returns when it can attest no bound
// for the request (an adapter that sends no output allowance, a model
// whose wire carries none).
var ErrUnbounded = errors.New("model: the call has no attested bound")

// Bounder is implemented by a [Model] whose adapter attests each call's
// worst case from the request it is about to send. It is optional, like
// http.Flusher: a Model without it has only the static bounds of its
// [Info], and a hard total_tokens or cost ceiling refuses its calls. A
// wrapper that forwards Generate should forward Bound too.
//
// The run loop may lower a request's MaxOutputTokens to fit what a
// ceiling leaves and ask again, so Bound must read the request it is
// given, and Generate must honour that allowance.
type Bounder interface {
	// Bound returns the worst case of sending req, or an error wrapping
	// ErrUnbounded when there is none (or the request cannot be sent).
	Bound(req *Request) (Bound, error)
}
