package providers

import (
	"errors"
	"fmt"
	"math/big"

	"github.com/pabloagent/pablo/model"
)

// The input bound. Every tokenizer the native providers use (byte-level
// BPE for OpenAI and Anthropic, SentencePiece with byte fallback for
// Gemini) spends at least one byte of text per token, and a request's
// JSON body holds all of its text plus the body's own syntax, so the
// body's length in bytes bounds the tokens its text costs. What the body
// does not carry is framing the provider adds: turn markers (fewer than
// the JSON bytes of each message) and, for tool use, a system prompt of a
// few hundred tokens (Anthropic documents 313 to 346); BoundOverheadTokens
// covers both. Replayed reasoning is opaque: a provider may count the
// thinking it stands for rather than its bytes, so its bytes count
// ReasoningFactor times. An actual above the bound is never silent: the
// ledger fails the task accounting_bound_violated.
const (
	BoundOverheadTokens = 1024
	ReasoningFactor     = 4
)

// allowance is the output allowance a request to a model capped at most
// carries: the smaller of the request's and the model's, zero when
// neither sets one.
func allowance(req *model.Request, most int64) int64 {
	n := req.MaxOutputTokens
	if most > 0 && (n == 0 || most < n) {
		n = most
	}
	return n
}

// inputBound bounds the input tokens of a request to provider p whose
// wire body is body.
func inputBound(p Provider, body []byte, req *model.Request) uint64 {
	n := uint64(len(body)) + BoundOverheadTokens
	for i := range req.Messages {
		for _, r := range req.Messages[i].Reasoning {
			if r.Provider == string(p) {
				n += (ReasoningFactor - 1) * uint64(len(r.Data))
			}
		}
	}
	return n
}

// unbounded is Bound's error for a request that cannot be bounded.
func unbounded(p Provider, why string) error {
	return fmt.Errorf("%w: %s %s", model.ErrUnbounded, p, why)
}

// bodyUnbounded is Bound's error for a request whose body cannot be
// built: the same request would fail not_sent.
func bodyUnbounded(p Provider, err error) error {
	var pe *Error
	if errors.As(err, &pe) && pe.Reason != "" {
		return unbounded(p, "request cannot be sent: "+pe.Reason)
	}
	return unbounded(p, "request cannot be sent: "+err.Error())
}

// Bound implements [model.Bounder]: input from the request body's size,
// output from max_tokens (which budget_tokens fits under).
func (m *AnthropicModel) Bound(req *model.Request) (model.Bound, error) {
	body, err := m.body(req)
	if err != nil {
		return model.Bound{}, bodyUnbounded(Anthropic, err)
	}
	return model.Bound{InputTokens: inputBound(Anthropic, body, req), OutputTokens: uint64(m.MaxTokens(req))}, nil
}

// Bound implements [model.Bounder] for the OpenAI Responses API alone:
// input from the request body's size, output from max_output_tokens
// (which counts reasoning). An open_responses server's tokenizer is not
// known, so it attests nothing, like the reference's.
func (m *ResponsesModel) Bound(req *model.Request) (model.Bound, error) {
	if m.opts.Provider != OpenAI {
		return model.Bound{}, unbounded(m.opts.Provider, "attests no bound: its server's tokenizer is unknown")
	}
	out := allowance(req, m.opts.MaxOutputTokens)
	if out <= 0 {
		return model.Bound{}, unbounded(OpenAI, "request carries no max_output_tokens")
	}
	body, err := m.body(req)
	if err != nil {
		return model.Bound{}, bodyUnbounded(OpenAI, err)
	}
	return model.Bound{InputTokens: inputBound(OpenAI, body, req), OutputTokens: uint64(out)}, nil
}

// Bound implements [model.Bounder]: input from the request body's size,
// output from maxOutputTokens plus the thinking budget. Gemini documents
// thinking apart from maxOutputTokens but has been seen counting it
// inside; the sum holds either way.
func (m *GeminiModel) Bound(req *model.Request) (model.Bound, error) {
	out := allowance(req, m.opts.MaxOutputTokens)
	if out <= 0 {
		return model.Bound{}, unbounded(Gemini, "request carries no maxOutputTokens")
	}
	body, err := m.body(req)
	if err != nil {
		return model.Bound{}, bodyUnbounded(Gemini, err)
	}
	return model.Bound{InputTokens: inputBound(Gemini, body, req), OutputTokens: uint64(out) + m.opts.ThinkingBudget}, nil
}

// Bound implements [model.Bounder]: the wrapped model's token bound,
// priced. Input tokens are priced at the dearest input price, so however
// the provider splits them between plain input and cache reads and
// writes, their cost stays under the bound.
func (w priced) Bound(req *model.Request) (model.Bound, error) {
	bd, ok := w.m.(model.Bounder)
	if !ok {
		return model.Bound{}, model.ErrUnbounded
	}
	b, err := bd.Bound(req)
	if err != nil {
		return b, err
	}
	dearest := w.p.Input
	for _, p := range []*uint64{w.p.CacheRead, w.p.CacheWrite} {
		if p != nil && *p > dearest {
			dearest = *p
		}
	}
	c := new(big.Int).Mul(new(big.Int).SetUint64(b.InputTokens), new(big.Int).SetUint64(dearest))
	q, r := c.QuoRem(c, big.NewInt(1_000_000), new(big.Int))
	if r.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsUint64() {
		return model.Bound{}, unbounded("priced", "input cost bound overflows")
	}
	b.Priced, b.InputCostMicroUSD, b.OutputPrice = true, q.Uint64(), w.p.Output
	return b, nil
}
