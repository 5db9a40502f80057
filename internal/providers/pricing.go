package providers

import (
	"context"
	"math/big"

	"github.com/pabloagent/pablo/model"
)

// Pricing is a model's prices in micro-USD per million tokens. A nil cache
// price is the input price.
type Pricing struct {
	Input, Output         uint64
	CacheRead, CacheWrite *uint64
}

// Cost is the call's cost in micro-USD for usage, rounded up; ok is false
// when the usage lacks input or output tokens. cacheInInput says the
// provider's input count includes its cache-read tokens (OpenAI, Gemini,
// Chat Completions); Anthropic's input_tokens excludes both cache counts.
func (p Pricing) Cost(u model.Usage, cacheInInput bool) (uint64, bool) {
	if u.InputTokens == nil || u.OutputTokens == nil {
		return 0, false
	}
	in := *u.InputTokens
	var read, write uint64
	if u.CacheReadTokens != nil {
		read = *u.CacheReadTokens
	}
	if u.CacheWriteTokens != nil {
		write = *u.CacheWriteTokens
	}
	if cacheInInput {
		in -= min(in, read)
	}
	cr, cw := p.Input, p.Input
	if p.CacheRead != nil {
		cr = *p.CacheRead
	}
	if p.CacheWrite != nil {
		cw = *p.CacheWrite
	}
	total := new(big.Int)
	for _, t := range [][2]uint64{{in, p.Input}, {*u.OutputTokens, p.Output}, {read, cr}, {write, cw}} {
		total.Add(total, new(big.Int).Mul(new(big.Int).SetUint64(t[0]), new(big.Int).SetUint64(t[1])))
	}
	q, r := new(big.Int).QuoRem(total, big.NewInt(1_000_000), new(big.Int))
	if r.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsUint64() {
		return 0, false
	}
	return q.Uint64(), true
}

// Priced wraps m so that a response whose provider reported no cost gets
// one computed from its usage and prices; a gateway's reported cost is
// kept.
func Priced(m Model, p Pricing, cacheInInput bool) Model {
	return priced{m: m, p: p, cacheInInput: cacheInInput}
}

type priced struct {
	m            Model
	p            Pricing
	cacheInInput bool
}

func (w priced) Generate(ctx context.Context, req *model.Request, emit func(string) error) (*model.Response, error) {
	resp, err := w.m.Generate(ctx, req, emit)
	if err == nil && resp.UsageReported && resp.Usage.CostMicroUSD == nil {
		if c, ok := w.p.Cost(resp.Usage, w.cacheInInput); ok {
			resp.Usage.CostMicroUSD = &c
		}
	}
	return resp, err
}
