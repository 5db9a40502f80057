package providers

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/pabloagent/pablo/internal/clock"
)

// RetryPolicy is options.model.retry: how a failed model call is retried
// on the same entry before the route falls back. A call is retried only
// when it failed before any of its output reached the caller and with a
// retry class that proves or strongly suggests nothing was generated:
// not_sent (the request never left), rate_limited (429, a rate-limit
// event) or service_unavailable (502, 503, 504, 529, an overloaded
// event). A possibly delivered request (transport_uncertain) is never
// retried here.
type RetryPolicy struct {
	// MaxAttempts is the attempts on one entry, the first included; 0 or
	// 1 turns retries off.
	MaxAttempts int
	// InitialBackoff is the wait before the first retry; each further
	// retry doubles it, up to MaxBackoff, and a random jitter takes up to
	// half of it off.
	InitialBackoff time.Duration
	// MaxBackoff caps every wait. A Retry-After longer than the cap is
	// not waited for: the route falls back (or fails) at once.
	MaxBackoff time.Duration
	// Jitter shortens each backoff wait at random (nil: takes up to half
	// off); a test passes one that returns its argument.
	Jitter func(time.Duration) time.Duration
}

// The defaults of options.model.retry.
const (
	DefaultRetryAttempts       = 3
	DefaultRetryInitialBackoff = 500 * time.Millisecond
	DefaultRetryMaxBackoff     = 30 * time.Second
)

// DefaultRetryPolicy is the policy of a deployment that sets no
// options.model.retry.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{MaxAttempts: DefaultRetryAttempts, InitialBackoff: DefaultRetryInitialBackoff, MaxBackoff: DefaultRetryMaxBackoff}
}

// SelectRetry is the selection reason of an attempt that retries the
// previous attempt's entry after a wait.
const SelectRetry = "retry"

// retryable reports whether e may be retried on the same entry.
func retryable(ctx context.Context, e *Error) bool {
	if e == nil || e.Escaped || ctx.Err() != nil {
		return false
	}
	switch e.RetryClass {
	case RetryNotSent, RetryRateLimited, RetryServiceUnavailable:
		return true
	}
	return false
}

// Wait says whether the n-th attempt (1-based) on an entry, which failed
// with err, is retried, and after how long: the exponential backoff with
// jitter, or the provider's Retry-After when longer, never past MaxBackoff
// and never past ctx's deadline (as now reads the clock). Only an *Error
// in err's chain that let nothing escape, with retry class not_sent,
// rate_limited or service_unavailable, is retried.
func (p RetryPolicy) Wait(ctx context.Context, n int, err error, now time.Time) (time.Duration, bool) {
	var e *Error
	if !errors.As(err, &e) || n >= p.MaxAttempts || !retryable(ctx, e) {
		return 0, false
	}
	jitter := p.Jitter
	if jitter == nil {
		jitter = equalJitter
	}
	d := p.InitialBackoff
	for i := 1; i < n && d < p.MaxBackoff; i++ {
		d *= 2
	}
	d = jitter(min(d, p.MaxBackoff))
	if e.RetryAfter > 0 {
		if e.RetryAfter > p.MaxBackoff {
			return 0, false
		}
		d = max(d, e.RetryAfter)
	}
	if dl, ok := ctx.Deadline(); ok && !now.Add(d).Before(dl) {
		return 0, false
	}
	return d, true
}

// equalJitter takes a random amount of up to half of d off, so retries of
// many callers spread out.
func equalJitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	half := d / 2
	return half + rand.N(d-half+1)
}

// Sleep waits d on c, or until ctx is done (and returns its error).
func Sleep(ctx context.Context, c clock.Clock, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	done := make(chan struct{})
	t := c.AfterFunc(d, func() { close(done) })
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		t.Stop()
		return ctx.Err()
	}
}
