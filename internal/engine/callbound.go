package engine

import (
	"errors"
	"math/big"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/ledger/outcome"
	"github.com/pabloagent/pablo/model"
)

// MinCappedOutput is the smallest output allowance a ceiling may cut a
// call down to (or the call's own allowance, when that is smaller): a
// call that would get less is refused instead, because an answer cut
// that short spends the budget and ends at the length limit.
const MinCappedOutput = 1024

// capRounds bounds how often a reservation is retried with a lower
// allowance: each refusal names one ceiling of one agent, and a call
// checks two (tokens, cost) on the agent and its parent.
const capRounds = 4

// reserve reserves a model call for req on the ledger, with the worst case
// bd attests for it (none when bd is nil or attests none, so a hard
// ceiling refuses the call). When a total_tokens or cost ceiling leaves
// less than that worst case, the request's output allowance is lowered
// to what the ceiling leaves, at most MinCappedOutput below, and the
// reservation tried again; the ledger decides each time, so concurrent
// callers (a parent's children) never overshoot together. It returns the
// call's ID and the request to send: req, or a copy with the lower
// allowance.
func (s *step) reserve(provider, mdl string, route *event.RouteAttempt, req *model.Request, bd model.Bounder) (string, *model.Request, *event.Outcome) {
	mc := s.modelCallRecord(provider, mdl, route, req)
	var (
		b        model.Bound
		bounded  bool
		boundErr error
	)
	if bd != nil {
		if b, boundErr = bd.Bound(req); boundErr == nil {
			bounded = true
			setBound(&mc, b)
		}
	}
	floor := min(uint64(MinCappedOutput), b.OutputTokens)
	for round := 0; ; round++ {
		id, err := s.t.root.ReserveModelCall(s.ctx, s.agent, mc)
		if err == nil {
			return id, req, nil
		}
		var le *ledger.LimitError
		if !errors.As(err, &le) || (le.Kind != outcome.LimitTotalTokens && le.Kind != outcome.LimitCost) {
			return "", nil, s.ledgerOutcome(err)
		}
		if le.NoBound {
			o := s.ledgerOutcome(err)
			if boundErr != nil {
				o.Reason = s.reason("model %s/%s: %v; the %s ceiling of agent %s needs one", provider, mdl, boundErr, le.Kind, le.AgentID)
			}
			return "", nil, o
		}
		if !bounded {
			return "", nil, s.ledgerOutcome(err)
		}
		// The task's outcome says which ceiling refused (limit_exceeded
		// carries its kind and nothing else, as the reference's task
		// object); the call's bound is on the ledger's record.
		want, ok := outputWithin(b, le)
		if round == capRounds || !ok || want < floor {
			return "", nil, s.ledgerOutcome(err)
		}
		capped, nb, ok := lowerAllowance(req, bd, b, want)
		if !ok {
			return "", nil, s.ledgerOutcome(err)
		}
		req, b = capped, nb
		setBound(&mc, b)
	}
}

// setBound puts the attested bound b on the ledger's record of a call.
func setBound(mc *ledger.ModelCall, b model.Bound) {
	mc.TokenBound = ledger.Max(b.Tokens())
	if c, ok := b.CostMicroUSD(); ok {
		mc.CostBound = ledger.Max(c)
	}
}

// outputWithin is the largest output bound that fits what the ceiling le
// reported leaves, given b's input; ok is false when nothing does.
func outputWithin(b model.Bound, le *ledger.LimitError) (uint64, bool) {
	left := le.Limit - min(le.Limit, le.Used)
	switch le.Kind {
	case outcome.LimitTotalTokens:
		if left <= b.InputTokens {
			return 0, false
		}
		return left - b.InputTokens, true
	case outcome.LimitCost:
		if !b.Priced || b.OutputPrice == 0 || left <= b.InputCostMicroUSD {
			return 0, false
		}
		// The cost bound rounds the output's cost up, so the largest n
		// with ceil(n*price/1e6) <= left-input is floor(that*1e6/price).
		n := new(big.Int).Mul(new(big.Int).SetUint64(left-b.InputCostMicroUSD), big.NewInt(1_000_000))
		n.Quo(n, new(big.Int).SetUint64(b.OutputPrice))
		if !n.IsUint64() {
			return b.OutputTokens, true
		}
		return n.Uint64(), true
	}
	return 0, false
}

// lowerAllowance returns a copy of req whose output bound, as bd attests
// it, is at most want, and that bound; ok is false when bd cannot attest
// one that low (an allowance under an adapter's minimum, a thinking
// budget that no longer fits).
func lowerAllowance(req *model.Request, bd model.Bounder, b model.Bound, want uint64) (*model.Request, model.Bound, bool) {
	c := *req
	// The output bound grows with the allowance, by a constant an
	// adapter may add (a thinking budget); lowering the allowance by the
	// excess converges in a round or two.
	for range capRounds {
		if b.OutputTokens <= want {
			return &c, b, true
		}
		cur := b.OutputTokens
		if c.MaxOutputTokens > 0 {
			cur = min(cur, uint64(c.MaxOutputTokens))
		}
		excess := b.OutputTokens - want
		if cur <= excess {
			return nil, b, false
		}
		c.MaxOutputTokens = int64(cur - excess)
		nb, err := bd.Bound(&c)
		if err != nil || nb.OutputTokens >= b.OutputTokens {
			return nil, b, false
		}
		b = nb
	}
	return &c, b, b.OutputTokens <= want
}
