package providers

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pabloagent/pablo/internal/clock"
	"github.com/pabloagent/pablo/internal/providertest"
	"github.com/pabloagent/pablo/model"
)

func noJitter(d time.Duration) time.Duration { return d }

// retryRoute is a route over the corpus servers' endpoints, one entry
// each, with policy p on a manual clock.
func retryRoute(t *testing.T, c *clock.Manual, p RetryPolicy, endpoints ...string) *Route {
	t.Helper()
	p.Jitter = noJitter
	opts := RouteOptions{Name: "main", Retry: p, Clock: c}
	for i, ep := range endpoints {
		opts.Entries = append(opts.Entries, chatEntry(t, string(rune('a'+i)), ep))
	}
	r, err := NewRoute(opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

type routed struct {
	resp     *model.Response
	attempts []Attempt
	err      error
}

func runRoute(ctx context.Context, r *Route) <-chan routed {
	out := make(chan routed, 1)
	go func() {
		resp, attempts, err := r.Generate(ctx, nil, AttemptHooks{}, testRequest, func(string) error { return nil })
		out <- routed{resp, attempts, err}
	}()
	return out
}

func reasons(as []Attempt) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.Entry+"/"+a.SelectionReason)
	}
	return out
}

// TestRetryHonoursRetryAfter: a 429 with Retry-After: 1 is retried on the
// same entry after one second (longer than the backoff), and the second
// attempt completes; the first attempt records the wait.
func TestRetryHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	srv := providertest.New(providertest.Options{Quirk: providertest.RateLimited, Faults: 1})
	defer srv.Close()
	c := clock.NewManual(time.Now())
	done := runRoute(context.Background(), retryRoute(t, c, RetryPolicy{MaxAttempts: 3, InitialBackoff: 100 * time.Millisecond, MaxBackoff: 5 * time.Second}, srv.Endpoint()))
	c.WaitPending(time.Second, 1)
	c.Advance(time.Second)
	got := <-done
	if got.err != nil || got.resp.Text != "Paid on time." {
		t.Fatalf("%v %+v", got.err, got.resp)
	}
	if len(got.attempts) != 2 || got.attempts[0].RetryIn != time.Second || got.attempts[1].SelectionReason != SelectRetry || got.attempts[1].EntryIndex != 0 || srv.Requests() != 2 {
		t.Fatalf("attempts %+v, %d requests", got.attempts, srv.Requests())
	}
}

// TestRetryBackoffDoublesUpToTheCap: without Retry-After the waits are the
// initial backoff, then twice it, never past the cap.
func TestRetryBackoffDoublesUpToTheCap(t *testing.T) {
	t.Parallel()
	srv := providertest.New(providertest.Options{Quirk: providertest.ServiceUnavailable, Faults: 2, RetryAfter: "-"})
	defer srv.Close()
	c := clock.NewManual(time.Now())
	done := runRoute(context.Background(), retryRoute(t, c, RetryPolicy{MaxAttempts: 3, InitialBackoff: 100 * time.Millisecond, MaxBackoff: 150 * time.Millisecond}, srv.Endpoint()))
	c.WaitPending(100*time.Millisecond, 1)
	c.Advance(100 * time.Millisecond)
	c.WaitPending(150*time.Millisecond, 1)
	c.Advance(150 * time.Millisecond)
	got := <-done
	if got.err != nil || len(got.attempts) != 3 || got.attempts[1].RetryIn != 150*time.Millisecond || srv.Requests() != 3 {
		t.Fatalf("%v %+v", got.err, got.attempts)
	}
}

// TestRetryAfterPastTheCapFallsBackAtOnce: a Retry-After longer than the
// cap is not waited for; the route falls back to its next entry without
// arming a timer.
func TestRetryAfterPastTheCapFallsBackAtOnce(t *testing.T) {
	t.Parallel()
	slow := providertest.New(providertest.Options{Quirk: providertest.RateLimited, RetryAfter: "120"})
	defer slow.Close()
	ok := providertest.New(providertest.Options{})
	defer ok.Close()
	c := clock.NewManual(time.Now())
	got := <-runRoute(context.Background(), retryRoute(t, c, RetryPolicy{MaxAttempts: 3, InitialBackoff: time.Second, MaxBackoff: 30 * time.Second}, slow.Endpoint(), ok.Endpoint()))
	if got.err != nil || len(got.attempts) != 2 || got.attempts[1].SelectionReason != SelectFallback || slow.Requests() != 1 {
		t.Fatalf("%v %v", got.err, reasons(got.attempts))
	}
}

// TestRetryOnlyBeforeAnyOutput: an overloaded event before the first
// delta is retried; an error event after a delta reached the caller is
// not (one request, the failure is the call's).
func TestRetryOnlyBeforeAnyOutput(t *testing.T) {
	t.Parallel()
	before := providertest.New(providertest.Options{Quirk: providertest.OverloadedEvent, Faults: 1})
	defer before.Close()
	c := clock.NewManual(time.Now())
	done := runRoute(context.Background(), retryRoute(t, c, RetryPolicy{MaxAttempts: 2, InitialBackoff: time.Second, MaxBackoff: time.Second}, before.Endpoint()))
	c.WaitPending(time.Second, 1)
	c.Advance(time.Second)
	if got := <-done; got.err != nil || before.Requests() != 2 {
		t.Fatalf("overloaded before output: %v, %d requests", got.err, before.Requests())
	}
	after := providertest.New(providertest.Options{Quirk: providertest.ErrorEventMidStream, Faults: 1})
	defer after.Close()
	got := <-runRoute(context.Background(), retryRoute(t, c, RetryPolicy{MaxAttempts: 3, InitialBackoff: time.Second, MaxBackoff: time.Second}, after.Endpoint()))
	if got.err == nil || after.Requests() != 1 || len(got.attempts) != 1 {
		t.Fatalf("error after output: %v, %d requests", got.err, after.Requests())
	}
}

// TestRetryNeverWaitsPastTheDeadline: a wait that would end at or after
// the caller's deadline is not started; the call fails at once.
func TestRetryNeverWaitsPastTheDeadline(t *testing.T) {
	t.Parallel()
	srv := providertest.New(providertest.Options{Quirk: providertest.RateLimited})
	defer srv.Close()
	now := time.Now()
	c := clock.NewManual(now)
	ctx, cancel := context.WithDeadline(context.Background(), now.Add(time.Hour))
	defer cancel()
	// Retry-After 1 s, but the manual clock reads 59 min 59.5 s later.
	c.Set(now.Add(time.Hour - 500*time.Millisecond))
	got := <-runRoute(ctx, retryRoute(t, c, RetryPolicy{MaxAttempts: 3, InitialBackoff: 10 * time.Millisecond, MaxBackoff: 5 * time.Second}, srv.Endpoint()))
	var pe *Error
	if !errors.As(got.err, &pe) || pe.Status != 429 || srv.Requests() != 1 {
		t.Fatalf("%v, %d requests", got.err, srv.Requests())
	}
}

// TestRetryOffAndNotSent: max_attempts 0 never retries; with retries on,
// a refused connection (not_sent) is retried until the attempts run out,
// and the last error names the refusal.
func TestRetryOffAndNotSent(t *testing.T) {
	t.Parallel()
	srv := providertest.New(providertest.Options{Quirk: providertest.RateLimited})
	c := clock.NewManual(time.Now())
	got := <-runRoute(context.Background(), retryRoute(t, c, RetryPolicy{}, srv.Endpoint()))
	if got.err == nil || srv.Requests() != 1 {
		t.Fatalf("retries off: %v, %d requests", got.err, srv.Requests())
	}
	endpoint := srv.Endpoint()
	srv.Close()
	done := runRoute(context.Background(), retryRoute(t, c, RetryPolicy{MaxAttempts: 3, InitialBackoff: time.Second, MaxBackoff: time.Minute}, endpoint))
	c.WaitPending(time.Second, 1)
	c.Advance(time.Second)
	c.WaitPending(2*time.Second, 1)
	c.Advance(2 * time.Second)
	got = <-done
	var pe *Error
	if !errors.As(got.err, &pe) || pe.RetryClass != RetryNotSent || len(got.attempts) != 3 || got.attempts[2].RetryIn != 0 {
		t.Fatalf("%v %+v", got.err, got.attempts)
	}
}

// TestNewRouteRejectsBadRetry: a retry policy out of bounds is refused.
func TestNewRouteRejectsBadRetry(t *testing.T) {
	for _, p := range []RetryPolicy{{MaxAttempts: -1}, {MaxAttempts: 11}, {MaxAttempts: 2, InitialBackoff: time.Second, MaxBackoff: time.Millisecond}} {
		if _, err := NewRoute(RouteOptions{Name: "r", Entries: []RouteEntry{chatEntry(t, "a", "http://127.0.0.1:9/v1")}, Retry: p}); err == nil {
			t.Fatalf("%+v accepted", p)
		}
	}
}
