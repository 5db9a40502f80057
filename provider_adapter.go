package pablo

import (
	"context"
	"errors"

	"github.com/pabloagent/pablo/internal/providers"
	"github.com/pabloagent/pablo/ledger"
)

// providerModel adapts an HTTP provider model to Model.
type providerModel struct {
	info ModelInfo
	m    providers.Model
}

func (p *providerModel) Info() ModelInfo { return p.info }

func (p *providerModel) Generate(ctx context.Context, req *ModelRequest, emit func(string) error) (*ModelResponse, error) {
	resp, err := p.m.Generate(ctx, toProviderRequest(req), emit)
	if err != nil {
		return nil, toModelError(err)
	}
	return fromProviderResponse(resp), nil
}

func toProviderRequest(req *ModelRequest) *providers.Request {
	out := &providers.Request{Instructions: req.Instructions, MaxOutputTokens: req.MaxOutputTokens,
		Messages: make([]providers.Message, len(req.Messages)), Tools: make([]providers.ToolDef, len(req.Tools))}
	for i, m := range req.Messages {
		pm := providers.Message{Role: providers.Role(m.Role), Content: m.Content, ToolCallID: m.ToolCallID}
		for _, c := range m.ToolCalls {
			pm.ToolCalls = append(pm.ToolCalls, providers.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
		}
		out.Messages[i] = pm
	}
	for i, t := range req.Tools {
		out.Tools[i] = providers.ToolDef{Name: t.Name, Description: t.Description, Parameters: t.Parameters}
	}
	return out
}

func fromProviderResponse(resp *providers.Response) *ModelResponse {
	out := &ModelResponse{Text: resp.Text, FinishReason: FinishReason(resp.Finish), UsageReported: resp.UsageReported}
	for _, c := range resp.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
	}
	u := resp.Usage
	out.Usage = ModelUsage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadTokens: u.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens, CostMicroUSD: u.CostMicroUSD}
	return out
}

// toModelError maps a provider failure to a *ModelError, keeping the
// provider error (and its cause) in the chain.
func toModelError(err error) error {
	var me *ModelError
	if errors.As(err, &me) {
		return err
	}
	var pe *providers.Error
	if errors.As(err, &pe) {
		return &ModelError{Code: ledger.FailureCode(pe.Code), Delivery: ledger.Delivery(pe.Delivery), RetryClass: string(pe.RetryClass), Err: err}
	}
	return &ModelError{Code: ledger.FailProviderTransport, Delivery: ledger.MayHaveBeenSent, Err: err}
}
