package engine

import (
	"context"
	"errors"
	"strconv"

	"github.com/pabloagent/pablo/ledger/outcome"
	"github.com/pabloagent/pablo/model"

	"github.com/pabloagent/pablo/internal/clock"
	"github.com/pabloagent/pablo/internal/providers"
)

// providerModel is an HTTP provider model as a Model: the provider takes
// and returns the engine's own request and response, so all it adds is the
// model's info and its failures as a *model.Error.
// NewProviderModel is the HTTP provider model m as a model.Model, with
// its info, whose failed calls the run loop retries under retry, waiting
// on clk (the system clock when nil).
func NewProviderModel(info model.Info, m providers.Model, retry providers.RetryPolicy, clk clock.Clock) model.Model {
	if clk == nil {
		clk = clock.System{}
	}
	return &providerModel{info: info, m: m, retry: retry, clock: clk}
}

type providerModel struct {
	info  model.Info
	m     providers.Model
	retry providers.RetryPolicy
	clock clock.Clock
}

// retrier is a model whose failed calls the run loop retries on it, each
// attempt its own ledger model call: the HTTP provider models the
// deployment builds. A route retries inside itself instead.
type retrier interface {
	retryPolicy() (providers.RetryPolicy, clock.Clock)
}

func (p *providerModel) retryPolicy() (providers.RetryPolicy, clock.Clock) { return p.retry, p.clock }

func (p *providerModel) Info() model.Info { return p.info }

// Bound implements [model.Bounder]: the adapter's attested worst case,
// or model.ErrUnbounded when its adapter attests none.
func (p *providerModel) Bound(req *model.Request) (model.Bound, error) {
	if bd, ok := p.m.(model.Bounder); ok {
		return bd.Bound(req)
	}
	return model.Bound{}, model.ErrUnbounded
}

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
		reason := pe.Reason
		if pe.Status != 0 {
			reason = "HTTP " + strconv.Itoa(pe.Status) + ": " + reason
		}
		return &model.Error{Code: outcome.FailureCode(pe.Code), Delivery: outcome.Delivery(pe.Delivery), RetryClass: string(pe.RetryClass),
			RetryAfter: pe.RetryAfter, Reason: reason, Err: err}
	}
	return &model.Error{Code: outcome.FailProviderTransport, Delivery: outcome.MayHaveBeenSent, Err: err}
}
