package pablo

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/internal/providers"
	"github.com/pabloagent/pablo/model"
)

// routeSession is one task's use of a routed model: it keeps the sticky
// selection across the task's model turns and lets the engine account for
// each attempt as its own model call. The zero value is ready; use one per
// task.
type routeSession struct {
	// BeginAttempt, when set, runs before each attempt is dispatched (the
	// engine reserves a model call and emits model.started with the
	// record). An error stops the route and is returned as is.
	BeginAttempt func(ctx context.Context, a event.RouteAttempt) error
	// EndAttempt, when set, runs after each attempt with its response or
	// error (the engine settles that call and emits model.finished).
	EndAttempt func(ctx context.Context, a event.RouteAttempt, resp *model.Response, err error)
	// NoFallback, when set, runs the next operations on the currently
	// selected entry alone (a compaction's summary call): a failure there
	// is the operation's, never a reason to move on.
	NoFallback bool

	state providers.RouteState
}

// Router is an optional capability of a Model, named as http.Flusher is:
// the model serves a configured route (a deployment's model_route, as
// [Deployment.NewRuntime] and [Deployment.FixtureModel] build it), which
// falls back across ordered entries. The runtime drives a route itself: it
// keeps a task's selection sticky across turns, accounts for each attempt
// as its own model call, classifies the first request, narrows the route
// for a child that names entries, and lists the entries in the dispatch
// snapshot. Only Pablo builds routes, so the interface is sealed; a host
// that wraps a route embeds the Router it wraps (struct{ pablo.Router }),
// which forwards the capability, and the runtime sees the route through
// the wrapper.
type Router interface {
	model.Model
	route() *routeModel
}

// routeOf is the route m serves, when m is a [Router].
func routeOf(m model.Model) (*routeModel, bool) {
	r, ok := m.(Router)
	if !ok {
		return nil, false
	}
	return r.route(), true
}

// routeError is a routed call's failure: every attempt, and the final
// error (a *model.Error, or a hook's error) in the chain.
type routeError struct {
	Attempts []event.RouteAttempt
	Err      error
}

func (e *routeError) Error() string {
	return fmt.Sprintf("pablo: route failed after %d attempt(s): %v", len(e.Attempts), e.Err)
}

// Unwrap returns the final error.
func (e *routeError) Unwrap() error { return e.Err }

// routeModel serves a configured route.
type routeModel struct {
	name string
	r    *providers.Route
	// classifier is the route's complexity router, or nil.
	classifier *routeClassifier
}

func (m *routeModel) route() *routeModel { return m }

func (m *routeModel) Info() model.Info {
	// Each attempt names its own provider and model; the route attests no
	// bound, like its entries.
	return model.Info{Provider: "route", Model: m.name}
}

func (m *routeModel) Generate(ctx context.Context, req *model.Request, emit func(string) error) (*model.Response, error) {
	return m.GenerateRouted(ctx, &routeSession{}, req, emit)
}

func (m *routeModel) GenerateRouted(ctx context.Context, s *routeSession, req *model.Request, emit func(string) error) (*model.Response, error) {
	hooks := providers.AttemptHooks{}
	if s.BeginAttempt != nil {
		hooks.Begin = func(ctx context.Context, a *providers.Attempt) error {
			return s.BeginAttempt(ctx, routeAttempt(a, "started"))
		}
	}
	if s.EndAttempt != nil {
		hooks.End = func(ctx context.Context, a *providers.Attempt, resp *model.Response, err error) {
			if err != nil {
				err = toModelError(err)
			}
			s.EndAttempt(ctx, routeAttempt(a, "finished"), resp, err)
		}
	}
	hooks.NoFallback = s.NoFallback
	resp, attempts, err := m.r.Generate(ctx, &s.state, hooks, req, emit)
	if err != nil {
		re := &routeError{Err: err}
		var pre *providers.RouteError
		if errors.As(err, &pre) {
			re.Err = pre.Err
		}
		var pe *providers.Error
		if errors.As(re.Err, &pe) {
			re.Err = toModelError(re.Err)
		}
		for i := range attempts {
			re.Attempts = append(re.Attempts, routeAttempt(&attempts[i], "finished"))
		}
		return nil, re
	}
	return resp, nil
}

func routeAttempt(a *providers.Attempt, phase string) event.RouteAttempt {
	str := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	out := event.RouteAttempt{SchemaVersion: event.RouteSchemaVersion, Route: a.Route, Entry: a.Entry, EntryIndex: a.EntryIndex,
		Provider: string(a.Provider), Model: a.Model, Operation: strconv.FormatUint(a.Operation, 10), Attempt: a.Number,
		SelectionReason: a.SelectionReason, Phase: phase, Dispatched: phase == "finished" && a.Dispatched}
	if phase == "finished" {
		out.Delivery = str(string(a.Delivery))
		status := string(event.StatusCompleted)
		if a.Failed {
			status = string(event.StatusFailed)
			out.FailureCode, out.RetryClass = str(string(a.Failure)), str(string(a.RetryClass))
		}
		out.Status = &status
	}
	return out
}
