package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/internal/providers"
	"github.com/pabloagent/pablo/model"
)

// RouteSession is one task's use of a routed model: it keeps the sticky
// selection across the task's model turns and lets the engine account for
// each attempt as its own model call. The zero value is ready; use one per
// task.
type RouteSession struct {
	// BeginAttempt, when set, runs before each attempt is dispatched (the
	// engine reserves a model call and emits model.started with the
	// record). It gets the request the attempt would send and the
	// entry's model when that attests bounds (nil when not), and returns
	// the request to send: req, or a copy with a lower output allowance.
	// An error stops the route and is returned as is.
	BeginAttempt func(ctx context.Context, a event.RouteAttempt, req *model.Request, bd model.Bounder) (*model.Request, error)
	// EndAttempt, when set, runs after each attempt with its response or
	// error (the engine settles that call and emits model.finished).
	EndAttempt func(ctx context.Context, a event.RouteAttempt, resp *model.Response, err error)
	// NoFallback, when set, runs the next operations on the currently
	// selected entry alone (a compaction's summary call): a failure there
	// is the operation's, never a reason to move on.
	NoFallback bool

	state providers.RouteState
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

// Route serves a configured route: a model.Model that falls back across
// ordered entries. The root's sealed Router hands it to the engine, which
// drives it itself (sticky selection, each attempt its own model call).
type Route struct {
	name string
	r    *providers.Route
	// classifier is the route's complexity router, or nil.
	classifier *Classifier
}

// NewRoute is route r, named name, with its complexity router c (nil for
// none).
func NewRoute(name string, r *providers.Route, c *Classifier) *Route {
	return &Route{name: name, r: r, classifier: c}
}

// EntryNames are the names of the route's entries, in order.
func (m *Route) EntryNames() []string {
	var names []string
	for _, e := range m.r.Options().Entries {
		names = append(names, e.Name)
	}
	return names
}

func (m *Route) Info() model.Info {
	// Each attempt names its own provider and model, and its entry
	// attests that attempt's bound (RouteSession.BeginAttempt).
	return model.Info{Provider: "route", Model: m.name}
}

func (m *Route) Generate(ctx context.Context, req *model.Request, emit func(string) error) (*model.Response, error) {
	return m.GenerateRouted(ctx, &RouteSession{}, req, emit)
}

func (m *Route) GenerateRouted(ctx context.Context, s *RouteSession, req *model.Request, emit func(string) error) (*model.Response, error) {
	hooks := providers.AttemptHooks{}
	if s.BeginAttempt != nil {
		hooks.Begin = func(ctx context.Context, a *providers.Attempt) error {
			req, err := s.BeginAttempt(ctx, routeAttempt(a, "started"), a.Request, a.Bounder)
			if err == nil {
				a.Request = req
			}
			return err
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
		if a.Retried {
			ms := a.RetryIn.Milliseconds()
			out.RetryInMS = &ms
		}
		out.Status = &status
	}
	return out
}
