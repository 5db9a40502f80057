package engine

import (
	"context"
	"errors"

	"github.com/pabloagent/pablo/ledger/outcome"
	"github.com/pabloagent/pablo/model"

	"github.com/pabloagent/pablo/internal/providers"
)

// providerModel is an HTTP provider model as a Model: the provider takes
// and returns the engine's own request and response, so all it adds is the
// model's info and its failures as a *model.Error.
// NewProviderModel is the HTTP provider model m as a model.Model, with
// its info.
func NewProviderModel(info model.Info, m providers.Model) model.Model {
	return &providerModel{info: info, m: m}
}

type providerModel struct {
	info model.Info
	m    providers.Model
}

func (p *providerModel) Info() model.Info { return p.info }

func (p *providerModel) Generate(ctx context.Context, req *model.Request, emit func(string) error) (*model.Response, error) {
	resp, err := p.m.Generate(ctx, req, emit)
	if err != nil {
		return nil, toModelError(err)
	}
	return resp, nil
}

// toModelError maps a provider failure to a *model.Error, keeping the
// provider error (and its cause) in the chain.
func toModelError(err error) error {
	var me *model.Error
	if errors.As(err, &me) {
		return err
	}
	var pe *providers.Error
	if errors.As(err, &pe) {
		return &model.Error{Code: outcome.FailureCode(pe.Code), Delivery: outcome.Delivery(pe.Delivery), RetryClass: string(pe.RetryClass), Err: err}
	}
	return &model.Error{Code: outcome.FailProviderTransport, Delivery: outcome.MayHaveBeenSent, Err: err}
}
