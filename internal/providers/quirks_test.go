package providers

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pabloagent/pablo/internal/providertest"
	"github.com/pabloagent/pablo/model"
)

// The outcomes a quirk may have, as the issue states them.
type quirkOutcome int

const (
	// completed: the call returns the scripted turn.
	completed quirkOutcome = iota
	// recovered: the call returns the turn, with call IDs the run loop
	// replaces (empty, or not unique in the conversation).
	recovered
	// retried: the call fails before anything escaped, with a retry class
	// a route retries and falls back from.
	retried
	// failedWithReason: the call fails with a reason that names the cause.
	failedWithReason
)

func (o quirkOutcome) String() string {
	return [...]string{"completed", "recovered", "retried", "failed with a reason"}[o]
}

// quirkCase is one row of the corpus: what the quirk must end as, and for
// a failure the code and the words its reason must hold.
type quirkCase struct {
	outcome quirkOutcome
	code    Code
	retry   RetryClass
	words   []string
}

var quirkCases = map[providertest.Quirk]quirkCase{
	providertest.EmptyCallID:             {outcome: recovered},
	providertest.MissingCallID:           {outcome: recovered},
	providertest.CallIDReusedAcrossTurns: {outcome: recovered},
	providertest.CallIDReusedInResponse:  {outcome: recovered},
	providertest.ArgsOneCharAtATime:      {outcome: completed},
	providertest.ArgsOneChunk:            {outcome: completed},
	providertest.ArgsSplitUTF8:           {outcome: completed},
	providertest.ParallelInterleaved:     {outcome: completed},
	providertest.ReasoningDeltas:         {outcome: completed},
	providertest.UsageEveryChunk:         {outcome: completed},
	providertest.UsageAbsent:             {outcome: completed},
	providertest.NoDone:                  {outcome: completed},
	providertest.KeepAliveComments:       {outcome: completed},
	providertest.CRLF:                    {outcome: completed},
	providertest.LengthHalfToolCall:      {outcome: failedWithReason, code: CodeMalformed, words: []string{"output limit", "max_output_tokens", "fs_read"}},
	providertest.ContentFilter:           {outcome: failedWithReason, code: CodeRejected, words: []string{"content filter"}},
	providertest.ErrorEventMidStream:     {outcome: failedWithReason, code: CodeRejected, words: []string{providertest.MessageMidStream}},
	providertest.JSONErrorBody200:        {outcome: failedWithReason, code: CodeRejected, words: []string{providertest.MessageJSONError}},
	providertest.NeverEnds:               {outcome: failedWithReason, code: CodeAttemptTimedOut, retry: RetryTransportUncertain, words: []string{"stream idle timeout"}},
	providertest.ModelNotFound:           {outcome: failedWithReason, code: CodeRejected, words: []string{"HTTP 400", providertest.MessageModelNotFound}},
	providertest.Unauthorized:            {outcome: failedWithReason, code: CodeRejected, words: []string{"HTTP 401", "authentication failed", providertest.MessageUnauthorized}},
	providertest.OverloadedEvent:         {outcome: retried, code: CodeRejected, retry: RetryServiceUnavailable, words: []string{providertest.MessageOverloaded}},
	providertest.RateLimited:             {outcome: retried, code: CodeRejected, retry: RetryRateLimited, words: []string{"HTTP 429", providertest.MessageRateLimited}},
	providertest.ServiceUnavailable:      {outcome: retried, code: CodeRejected, retry: RetryServiceUnavailable, words: []string{"HTTP 503", providertest.MessageUnavailable}},
	providertest.Overloaded529:           {outcome: retried, code: CodeRejected, retry: RetryServiceUnavailable, words: []string{"HTTP 529", providertest.MessageOverloaded}},
}

// The corpus's turn: text, then two calls whose arguments hold a
// multi-byte character.
var quirkTurn = providertest.Turn{
	Text: "Reading both files.",
	Calls: []providertest.Call{
		{Name: "fs_read", Args: `{"path":"café.md"}`},
		{Name: "fs_read", Args: `{"path":"naïve/b.md"}`},
	},
}

// wireOf is the corpus wire an adapter speaks.
func wireOf(a adapter) providertest.Wire {
	switch a.name {
	case OpenResponses, OpenAI:
		return providertest.Responses
	case Anthropic:
		return providertest.Anthropic
	case Gemini:
		return providertest.Gemini
	}
	return providertest.Chat
}

// signalTimer is an idle timer a test fires by hand once the call has
// its response (the timer was re-armed after the headers).
type signalTimer struct {
	mu     sync.Mutex
	f      func()
	resets chan struct{}
}

func (t *signalTimer) Reset(time.Duration) bool {
	select {
	case t.resets <- struct{}{}:
	default:
	}
	return true
}
func (t *signalTimer) Stop() bool { return true }

// TestQuirkCorpus runs every HTTP adapter through every quirk of the
// corpus and asserts the quirk's stated outcome: completed (the turn comes
// back whole), recovered (the turn comes back; its call IDs are the run
// loop's to replace), retried (a failure before any output with the retry
// class a route retries) or failed with a reason that names the cause.
// None ends in a silent failure: every failure carries a reason, and no
// reason holds the credential.
func TestQuirkCorpus(t *testing.T) {
	t.Parallel()
	if len(quirkCases) != len(providertest.Quirks()) {
		t.Fatalf("the corpus has %d quirks, the table %d", len(providertest.Quirks()), len(quirkCases))
	}
	for _, a := range adapters() {
		for _, q := range providertest.Quirks() {
			want, ok := quirkCases[q]
			if !ok {
				t.Fatalf("quirk %s has no stated outcome", q)
			}
			t.Run(string(a.name)+"/"+string(q), func(t *testing.T) {
				t.Parallel()
				srv := providertest.New(providertest.Options{Wire: wireOf(a), Quirk: q, Turns: []providertest.Turn{quirkTurn, quirkTurn}})
				defer srv.Close()
				timer := &signalTimer{resets: make(chan struct{}, 1)}
				opts := ClientOptions{}
				if q == providertest.NeverEnds {
					opts.AfterFunc = func(_ time.Duration, f func()) IdleTimer {
						timer.mu.Lock()
						timer.f = f
						timer.mu.Unlock()
						return timer
					}
				}
				m := a.build(NewClient(opts), srv.Endpoint())
				var resp *model.Response
				var deltas []string
				var err error
				if q == providertest.NeverEnds {
					done := make(chan struct{})
					go func() {
						defer close(done)
						resp, deltas, err = generate(t, m)
					}()
					<-timer.resets // the response headers arrived
					timer.mu.Lock()
					timer.f()
					timer.mu.Unlock()
					<-done
				} else {
					resp, deltas, err = generate(t, m)
					if q == providertest.CallIDReusedAcrossTurns && err == nil {
						resp, deltas, err = generate(t, m)
					}
				}
				checkQuirk(t, q, want, resp, deltas, err)
			})
		}
	}
}

func checkQuirk(t *testing.T, q providertest.Quirk, want quirkCase, resp *model.Response, deltas []string, err error) {
	t.Helper()
	switch want.outcome {
	case completed, recovered:
		if err != nil {
			t.Fatalf("want %s, got %v", want.outcome, err)
		}
		if resp.Text != quirkTurn.Text || strings.Join(deltas, "") != quirkTurn.Text {
			t.Fatalf("text %q deltas %q", resp.Text, deltas)
		}
		if resp.FinishReason != model.FinishToolCalls || len(resp.ToolCalls) != len(quirkTurn.Calls) {
			t.Fatalf("finish %s, %d calls: %+v", resp.FinishReason, len(resp.ToolCalls), resp.ToolCalls)
		}
		ids := map[string]bool{}
		for i, c := range resp.ToolCalls {
			if c.Name != quirkTurn.Calls[i].Name || string(c.Arguments) != quirkTurn.Calls[i].Args {
				t.Fatalf("call %d: %s %s", i, c.Name, c.Arguments)
			}
			ids[c.ID] = true
		}
		switch q {
		case providertest.CallIDReusedInResponse:
			if len(ids) != 1 {
				t.Fatalf("the response's IDs were not passed through for the run loop to pair: %v", ids)
			}
		case providertest.CallIDReusedAcrossTurns:
			if resp.ToolCalls[0].ID != "call_1" {
				t.Fatalf("the second turn's ID: %q", resp.ToolCalls[0].ID)
			}
		case providertest.EmptyCallID, providertest.MissingCallID:
			// Empty, or one the adapter made up: the run loop replaces
			// either with one unique in the conversation.
		default:
			if len(ids) != len(resp.ToolCalls) {
				t.Fatalf("IDs not unique: %v", ids)
			}
		}
		switch q {
		case providertest.UsageAbsent:
			if resp.UsageReported {
				t.Fatalf("usage reported: %+v", resp.Usage)
			}
		case providertest.UsageEveryChunk:
			if !resp.UsageReported || *resp.Usage.OutputTokens != 7 {
				t.Fatalf("the last usage must win: %+v", resp.Usage)
			}
		default:
			if !resp.UsageReported || *resp.Usage.InputTokens != 11 {
				t.Fatalf("usage: %+v", resp.Usage)
			}
		}
	case retried, failedWithReason:
		if resp != nil {
			t.Fatalf("want %s, the call completed: %+v", want.outcome, resp)
		}
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("want *Error, got %v", err)
		}
		if e.Code != want.code || e.RetryClass != want.retry {
			t.Fatalf("want %s/%q, got %s/%q: %v", want.code, want.retry, e.Code, e.RetryClass, e)
		}
		if want.outcome == retried && (e.Escaped || len(deltas) > 0) {
			t.Fatalf("a retried failure let output escape: %v", e)
		}
		if e.Reason == "" {
			t.Fatalf("a silent failure: %v", e)
		}
		for _, w := range want.words {
			if !strings.Contains(e.Error(), w) {
				t.Fatalf("the reason does not say %q: %v", w, e)
			}
		}
		if q == providertest.RateLimited && e.RetryAfter != time.Second {
			t.Fatalf("Retry-After: %v", e.RetryAfter)
		}
	}
}

// TestConnectionRefusedNamesTheEndpoint: a refused connection says so and
// names the endpoint it was refused to (scheme, host and path, never the
// query), with the not_sent retry class.
func TestConnectionRefusedNamesTheEndpoint(t *testing.T) {
	srv := providertest.New(providertest.Options{})
	endpoint := srv.Endpoint()
	srv.Close()
	for _, a := range adapters() {
		t.Run(string(a.name), func(t *testing.T) {
			_, _, err := generate(t, a.build(NewClient(ClientOptions{}), endpoint+"?key="+testSecret))
			e := wantError(t, err, CodeTransport, NotSent, RetryNotSent)
			if !strings.Contains(e.Reason, "connection refused to "+endpoint) || strings.Contains(e.Reason, "key=") {
				t.Fatalf("reason %q", e.Reason)
			}
		})
	}
}

// TestProviderMessageIsMaskedAndBounded: the provider's words an error
// keeps never hold the call's credential, hold no control characters and
// are at most MaxProviderMessageBytes, whatever the error body sent.
func TestProviderMessageIsMaskedAndBounded(t *testing.T) {
	long := strings.Repeat("x", 4*MaxProviderMessageBytes)
	for _, body := range []string{
		`{"error":{"message":"bad key ` + testSecret + `\nretry"}}`,
		`{"error":"` + long + `"}`,
		`{"detail":"` + testSecret + `"}`,
	} {
		pe, ok := parseProviderError([]byte(body))
		if !ok {
			t.Fatalf("not read: %s", body)
		}
		got := said(pe.message, testSecret)
		if strings.Contains(got, testSecret) || strings.ContainsAny(got, "\n\r") || len(got) > MaxProviderMessageBytes || got == "" {
			t.Fatalf("%q", got)
		}
	}
}

// TestRetriedQuirksCompleteOnARoute: each quirk whose stated outcome is
// "retried", answered once, is retried on the same entry by a route with a
// retry policy, and the second attempt completes, for every adapter.
func TestRetriedQuirksCompleteOnARoute(t *testing.T) {
	t.Parallel()
	for _, a := range adapters() {
		for _, q := range providertest.Quirks() {
			if quirkCases[q].outcome != retried {
				continue
			}
			t.Run(string(a.name)+"/"+string(q), func(t *testing.T) {
				t.Parallel()
				srv := providertest.New(providertest.Options{Wire: wireOf(a), Quirk: q, Faults: 1, RetryAfter: "-", Turns: []providertest.Turn{quirkTurn}})
				defer srv.Close()
				r, err := NewRoute(RouteOptions{Name: "r", Entries: []RouteEntry{{Name: "e", Provider: a.name, Model: "test/model", Generator: a.build(NewClient(ClientOptions{}), srv.Endpoint())}},
					Retry: RetryPolicy{MaxAttempts: 2, Jitter: noJitter}})
				if err != nil {
					t.Fatal(err)
				}
				resp, attempts, err := r.Generate(context.Background(), nil, AttemptHooks{}, testRequest, func(string) error { return nil })
				if err != nil || resp.Text != quirkTurn.Text || len(attempts) != 2 || attempts[1].SelectionReason != SelectRetry || srv.Requests() != 2 {
					t.Fatalf("%v %+v", err, attempts)
				}
			})
		}
	}
}
