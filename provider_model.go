package pablo

import (
	"context"
	"errors"

	"github.com/pabloagent/pablo/ledger/outcome"

	"github.com/pabloagent/pablo/internal/providers"
)

// providerModel is an HTTP provider model as a Model: the provider takes
// and returns the engine's own request and response, so all it adds is the
// model's info and its failures as a *ModelError.
type providerModel struct {
	info ModelInfo
	m    providers.Model
}

func (p *providerModel) Info() ModelInfo { return p.info }

func (p *providerModel) Generate(ctx context.Context, req *ModelRequest, emit func(string) error) (*ModelResponse, error) {
	resp, err := p.m.Generate(ctx, req, emit)
	if err != nil {
		return nil, toModelError(err)
	}
	return resp, nil
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
		return &ModelError{Code: outcome.FailureCode(pe.Code), Delivery: outcome.Delivery(pe.Delivery), RetryClass: string(pe.RetryClass), Err: err}
	}
	return &ModelError{Code: outcome.FailProviderTransport, Delivery: outcome.MayHaveBeenSent, Err: err}
}
