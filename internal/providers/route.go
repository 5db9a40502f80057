package providers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/pabloagent/pablo/internal/clock"
	"github.com/pabloagent/pablo/model"
)

// RouteEntry is one flattened entry of a route.
type RouteEntry struct {
	// Name is the options.models name.
	Name     string
	Provider Provider
	// Model is the model ID on the wire.
	Model string
	// Generator serves the entry.
	Generator Model
}

// RouteOptions configure a [Route] (options.routes.NAME, flattened).
type RouteOptions struct {
	Name    string
	Entries []RouteEntry
	// MaxAttempts bounds attempts per operation (default and maximum:
	// len(Entries)).
	MaxAttempts int
	// PerAttemptTimeout bounds each attempt; zero means only the caller's
	// deadline.
	PerAttemptTimeout time.Duration
	// Eligible are the retry classes that fall back. Nil means the default
	// (not_sent, rate_limited, service_unavailable); empty disables
	// fallback.
	Eligible []RetryClass
	// RetryUncertainDelivery must also be set, with transport_uncertain
	// eligible, to continue after a possibly delivered request.
	RetryUncertainDelivery bool
	// Retry retries a failed attempt on the same entry, after a backoff,
	// before the route falls back; the zero value never retries.
	Retry RetryPolicy
	// Clock times the backoff waits (the system clock when nil); a test
	// passes clock.Manual.
	Clock clock.Clock
}

// DefaultEligible are the retry classes a route falls back from by default.
var defaultEligible = []RetryClass{RetryNotSent, RetryRateLimited, RetryServiceUnavailable}

// DefaultEligible returns the default eligible retry classes.
func DefaultEligible() []RetryClass { return slices.Clone(defaultEligible) }

// Route is an ordered list of models with fallback (REFERENCE §1.12):
// eligible failures only, never after a delta or tool-call start escaped,
// no revisiting an entry, sticky within a task. Before it falls back, a
// retryable failure is retried on the same entry after a backoff
// (RouteOptions.Retry, a Go addition).
type Route struct {
	opts RouteOptions
}

// NewRoute checks opts and returns a Route.
func NewRoute(opts RouteOptions) (*Route, error) {
	if len(opts.Entries) == 0 || len(opts.Entries) > 32 {
		return nil, fmt.Errorf("providers: route %q needs 1..32 entries, got %d", opts.Name, len(opts.Entries))
	}
	for i, e := range opts.Entries {
		if e.Generator == nil {
			return nil, fmt.Errorf("providers: route %q entry %d (%q) has no model", opts.Name, i, e.Name)
		}
	}
	if opts.MaxAttempts <= 0 || opts.MaxAttempts > len(opts.Entries) {
		opts.MaxAttempts = len(opts.Entries)
	}
	if opts.Eligible == nil {
		opts.Eligible = DefaultEligible()
	}
	if opts.Retry.MaxAttempts < 0 || opts.Retry.MaxAttempts > 10 || opts.Retry.InitialBackoff < 0 || opts.Retry.MaxBackoff < opts.Retry.InitialBackoff {
		return nil, fmt.Errorf("providers: route %q: retry needs 0..10 attempts and 0 <= initial backoff <= max backoff", opts.Name)
	}
	if opts.Clock == nil {
		opts.Clock = clock.System{}
	}
	return &Route{opts: opts}, nil
}

// Options returns the route's resolved options.
func (r *Route) Options() RouteOptions { return r.opts }

// Selection reasons of an attempt.
const (
	SelectInitial  = "initial"
	SelectSticky   = "sticky"
	SelectFallback = "fallback"
	// SelectComplexity: the route's complexity router chose the entry
	// for the task's first operation.
	SelectComplexity = "complexity"
)

// Attempt describes one attempt of a routed operation: the model_route
// record's facts.
type Attempt struct {
	Route      string
	Entry      string
	EntryIndex int
	Provider   Provider
	Model      string
	// Operation is the 1-based logical operation within the task.
	Operation uint64
	// Number is the 1-based attempt within the operation.
	Number          int
	SelectionReason string
	// Dispatched says the attempt's request was handed to the transport.
	Dispatched bool
	// The outcome, set when the attempt ends.
	Delivery   Delivery
	Failure    Code
	RetryClass RetryClass
	Failed     bool
	// Retried, set on a failed attempt before AttemptHooks.End, says the
	// same entry is tried again (SelectionReason retry) after RetryIn.
	Retried bool
	RetryIn time.Duration
	// Request is what the attempt sends. AttemptHooks.Begin may replace
	// it with a copy whose output allowance is lower (what a ceiling
	// leaves); the entry's model is sent the replacement.
	Request *model.Request
	// Bounder is the entry's model when it attests each call's worst case
	// (model.Bounder); nil when it attests none.
	Bounder model.Bounder
}

// RouteState is one task's use of a route: the sticky entry and the
// operation counter. The zero value starts at entry 0. Create one per task.
type RouteState struct {
	mu        sync.Mutex
	sticky    int
	moved     bool
	operation uint64
	// reason is why the first operation starts at sticky, when something
	// other than the route's order chose it (SelectComplexity).
	reason string
}

// Select makes the task's first operation start at entry index, selected
// for reason (SelectComplexity): the router's choice. It must be called
// before the first operation; later operations stay sticky to it.
func (s *RouteState) Select(index int, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sticky, s.reason = index, reason
}

// AttemptHooks let the caller account for each attempt separately: a
// ledger reservation before, a settlement after.
type AttemptHooks struct {
	// Begin runs before an attempt is dispatched; an error stops the
	// route and is returned as is (a ceiling, a cancelled task, ...).
	Begin func(ctx context.Context, a *Attempt) error
	// End runs after each attempt, with its response or error.
	End func(ctx context.Context, a *Attempt, resp *model.Response, err error)
	// NoFallback runs the operation on the sticky entry alone: one
	// attempt, whatever its failure.
	NoFallback bool
}

// ErrRouteExhausted wraps the last attempt's error when every allowed
// attempt failed eligibly.
var ErrRouteExhausted = errors.New("providers: every route attempt failed")

// RouteError is a routed operation's failure: every attempt and the final
// error (an *Error, or a hook's error).
type RouteError struct {
	Attempts []Attempt
	Err      error
}

func (e *RouteError) Error() string {
	return fmt.Sprintf("providers: route failed after %d attempt(s): %v", len(e.Attempts), e.Err)
}

// Unwrap returns the final error.
func (e *RouteError) Unwrap() error { return e.Err }

// Generate runs one operation over the route: it starts at the task's
// sticky entry and moves forward only after an eligible failure that let
// nothing escape. state may be nil (no stickiness across calls).
func (r *Route) Generate(ctx context.Context, state *RouteState, hooks AttemptHooks, req *model.Request, emit func(string) error) (*model.Response, []Attempt, error) {
	if state == nil {
		state = &RouteState{}
	}
	state.mu.Lock()
	defer state.mu.Unlock()
	state.operation++
	var attempts []Attempt
	start := state.sticky
	if start >= len(r.opts.Entries) {
		start = 0
	}
	most := r.opts.MaxAttempts
	if hooks.NoFallback {
		most = 1
	}
	idx, tried, tries := start, 1, 1
	for n := 1; ; n++ {
		e := r.opts.Entries[idx]
		a := Attempt{Route: r.opts.Name, Entry: e.Name, EntryIndex: idx, Provider: e.Provider, Model: e.Model,
			Operation: state.operation, Number: n, SelectionReason: SelectInitial}
		switch {
		case tries > 1:
			a.SelectionReason = SelectRetry
		case tried > 1:
			a.SelectionReason = SelectFallback
		case state.reason != "" && state.operation == 1:
			a.SelectionReason = state.reason
		case state.moved || state.operation > 1:
			a.SelectionReason = SelectSticky
		}
		a.Request = req
		if bd, ok := e.Generator.(model.Bounder); ok {
			a.Bounder = bd
		}
		if hooks.Begin != nil {
			if err := hooks.Begin(ctx, &a); err != nil {
				return nil, attempts, &RouteError{Attempts: attempts, Err: err}
			}
		}
		a.Dispatched = true
		escaped := false
		resp, err := r.attempt(ctx, e.Generator, a.Request, func(d string) error {
			escaped = true
			return emit(d)
		})
		state.sticky = idx
		if err == nil {
			a.Delivery = ResponseReceived
			attempts = append(attempts, a)
			if hooks.End != nil {
				hooks.End(ctx, &a, resp, nil)
			}
			return resp, attempts, nil
		}
		a.Failed = true
		var pe *Error
		if errors.As(err, &pe) {
			a.Delivery, a.Failure, a.RetryClass = pe.Delivery, pe.Code, pe.RetryClass
		} else {
			a.Delivery, a.Failure = MayHaveBeenSent, CodeTransport
		}
		if !escaped {
			a.RetryIn, a.Retried = r.opts.Retry.Wait(ctx, tries, err, r.opts.Clock.Now())
		}
		attempts = append(attempts, a)
		if hooks.End != nil {
			hooks.End(ctx, &a, nil, err)
		}
		if a.Retried {
			if serr := Sleep(ctx, r.opts.Clock, a.RetryIn); serr != nil {
				return nil, attempts, &RouteError{Attempts: attempts, Err: err}
			}
			tries++
			continue
		}
		if escaped || !r.eligible(ctx, pe) || tried >= most || idx+1 >= len(r.opts.Entries) {
			return nil, attempts, &RouteError{Attempts: attempts, Err: err}
		}
		idx, tried, tries = idx+1, tried+1, 1
		state.sticky, state.moved = idx, true
	}
}

// attempt runs one entry under the per-attempt deadline. A lapse of that
// deadline (not the caller's) is model_attempt_timed_out with uncertain
// delivery.
func (r *Route) attempt(ctx context.Context, m Model, req *model.Request, emit func(string) error) (*model.Response, error) {
	if r.opts.PerAttemptTimeout <= 0 {
		return m.Generate(ctx, req, emit)
	}
	actx, cancel := context.WithTimeoutCause(ctx, r.opts.PerAttemptTimeout, ErrAttemptTimedOut)
	defer cancel()
	resp, err := m.Generate(actx, req, emit)
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(actx), ErrAttemptTimedOut) {
		var pe *Error
		escaped := errors.As(err, &pe) && pe.Escaped
		delivery := MayHaveBeenSent
		if escaped || (pe != nil && pe.Delivery == ResponseReceived) {
			delivery = ResponseReceived
		}
		return nil, &Error{Code: CodeAttemptTimedOut, Delivery: delivery, RetryClass: RetryTransportUncertain, Escaped: escaped,
			Reason: "the attempt ran out of its per-attempt deadline", Err: ErrAttemptTimedOut}
	}
	return resp, err
}

// eligible applies §1.12: only listed retry classes, never after anything
// escaped, never when the caller is done, and uncertain delivery only with
// both opt-ins.
func (r *Route) eligible(ctx context.Context, e *Error) bool {
	if e == nil || e.Escaped || e.RetryClass == "" || ctx.Err() != nil {
		return false
	}
	if !slices.Contains(r.opts.Eligible, e.RetryClass) {
		return false
	}
	if e.RetryClass == RetryTransportUncertain || e.Delivery == MayHaveBeenSent {
		return r.opts.RetryUncertainDelivery && slices.Contains(r.opts.Eligible, RetryTransportUncertain)
	}
	return true
}
