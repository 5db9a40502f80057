package providers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Code is a failure code; the values are the ledger's failure codes.
type Code string

// The failure codes a provider call can end with.
const (
	CodeRejected         Code = "provider_rejected"
	CodeTransport        Code = "provider_transport"
	CodeMalformed        Code = "malformed_stream"
	CodeUnsupported      Code = "unsupported_provider_content"
	CodeAttemptTimedOut  Code = "model_attempt_timed_out"
	CodeEventSink        Code = "event_sink_io"
	CodeContextTooLarge  Code = "context_overflow"
	CodeInvalidArguments Code = "invalid_tool_arguments"
)

// Delivery says how certain it is that a request reached the provider.
type Delivery string

// The delivery certainties.
const (
	// NotSent: there is evidence the request was not delivered (no
	// connection was ever obtained, or the request was refused locally).
	NotSent Delivery = "not_sent"
	// MayHaveBeenSent: a connection carried the request, but no response
	// arrived.
	MayHaveBeenSent Delivery = "may_have_been_sent"
	// ResponseReceived: a status line arrived.
	ResponseReceived Delivery = "response_received"
)

// RetryClass names the failures a route may fall back from.
type RetryClass string

// The retry classes.
const (
	RetryNotSent            RetryClass = "not_sent"
	RetryRateLimited        RetryClass = "rate_limited"
	RetryServiceUnavailable RetryClass = "service_unavailable"
	RetryTransportUncertain RetryClass = "transport_uncertain"
)

// Sentinel kinds, usable with errors.Is on any [*Error].
var (
	// ErrRejected: the provider answered with a non-success status or an
	// in-stream error.
	ErrRejected = errors.New("providers: provider rejected the request")
	// ErrTransport: the request failed below HTTP.
	ErrTransport = errors.New("providers: transport failure")
	// ErrMalformed: the response broke the wire format or a bound.
	ErrMalformed = errors.New("providers: malformed stream")
	// ErrUnsupported: the response held content this adapter does not
	// represent (a refusal, images, audio, hosted tools, ...).
	ErrUnsupported = errors.New("providers: unsupported provider content")
	// ErrAttemptTimedOut: a route attempt ran out of its own deadline.
	ErrAttemptTimedOut = errors.New("providers: model attempt timed out")
)

// Error is a failed model call. Its message never holds a credential, a
// request body or a response body.
type Error struct {
	Code     Code
	Delivery Delivery
	// RetryClass is set for failures a route may fall back from.
	RetryClass RetryClass
	// Status is the HTTP status, when one arrived.
	Status int
	// RetryAfter is how long the provider asked the caller to wait before
	// retrying (its Retry-After header), zero when it did not say.
	RetryAfter time.Duration
	// Escaped says a text delta or a tool-call start already reached the
	// caller: a route never falls back after that.
	Escaped bool
	// Reason says what happened, in words safe to log.
	Reason string
	// Err is the cause, if any (context.Canceled, an emit error, ...).
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "providers: %s (%s)", e.Code, e.Delivery)
	if e.Status != 0 {
		fmt.Fprintf(&b, ": HTTP %d", e.Status)
	}
	if e.Reason != "" {
		b.WriteString(": ")
		b.WriteString(e.Reason)
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is matches the sentinel of e's code.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrRejected:
		return e.Code == CodeRejected
	case ErrTransport:
		return e.Code == CodeTransport
	case ErrMalformed:
		return e.Code == CodeMalformed
	case ErrUnsupported:
		return e.Code == CodeUnsupported
	case ErrAttemptTimedOut:
		return e.Code == CodeAttemptTimedOut
	}
	return false
}

func malformed(format string, args ...any) *Error {
	return &Error{Code: CodeMalformed, Delivery: ResponseReceived, Reason: fmt.Sprintf(format, args...)}
}

func unsupported(format string, args ...any) *Error {
	return &Error{Code: CodeUnsupported, Delivery: ResponseReceived, Reason: fmt.Sprintf(format, args...)}
}

func rejected(format string, args ...any) *Error {
	return &Error{Code: CodeRejected, Delivery: ResponseReceived, Reason: fmt.Sprintf(format, args...)}
}

// statusError maps a non-success HTTP status, with the provider's own
// words (message, already masked and bounded by said) where its error body
// had them.
func statusError(status int, message string) *Error {
	e := &Error{Code: CodeRejected, Delivery: ResponseReceived, Status: status}
	switch {
	case status == 429:
		e.RetryClass, e.Reason = RetryRateLimited, "rate limited"
	case status == 502 || status == 503 || status == 504:
		e.RetryClass, e.Reason = RetryServiceUnavailable, "service unavailable"
	case status == 529:
		e.RetryClass, e.Reason = RetryServiceUnavailable, "the provider is overloaded"
	case status >= 300 && status < 400:
		e.Reason = "the endpoint answered with a redirect, which is never followed; configure the final URL"
	case status == 401 || status == 403:
		e.Reason = "authentication failed: the provider refused the credential"
	case status == 404:
		e.Reason = "the endpoint or the model was not found"
	default:
		e.Reason = "the provider refused the request"
	}
	e.Reason = withSaid(e.Reason, message)
	return e
}

// streamError is the failure of an in-stream error event: rejected, with
// the provider's words, and — when nothing of the answer reached the
// caller yet — the retry class its type or code names (overloaded or
// unavailable: service_unavailable; a rate limit: rate_limited).
func streamError(what string, pe providerError, secret string, escaped bool) *Error {
	e := rejected("the provider reported %s inside the stream", what)
	e.Reason = withSaid(e.Reason, said(pe.message, secret))
	if escaped {
		return e
	}
	k := pe.kind + " " + strings.ToLower(pe.message)
	switch {
	case strings.Contains(k, "rate_limit") || strings.Contains(k, "rate limit") || strings.Contains(k, "429") || strings.Contains(k, "resource_exhausted"):
		e.RetryClass = RetryRateLimited
	case strings.Contains(k, "overloaded") || strings.Contains(k, "unavailable") || strings.Contains(k, "529") || strings.Contains(k, "503"):
		e.RetryClass = RetryServiceUnavailable
	}
	return e
}

// streamState is what every adapter's stream keeps alike: whether any of
// its output escaped to the task, and how many bytes of the response it
// retains.
type streamState struct {
	escaped  bool
	retained int
}

// fail finishes an error: the escape flag, and the caller's cancellation
// as the cause when it is the reason.
func (s *streamState) fail(ctx context.Context, err error) error {
	var e *Error
	if !errors.As(err, &e) {
		e = &Error{Code: CodeMalformed, Delivery: ResponseReceived, Err: err}
	}
	e.Escaped = e.Escaped || s.escaped
	if cerr := ctx.Err(); cerr != nil && e.Err == nil {
		e.Code, e.Err, e.Reason = CodeTransport, cerr, "the call was cancelled or ran out of time"
	}
	return e
}

// retain counts n more bytes the response keeps against maxRetainedBytes.
func (s *streamState) retain(n int) error {
	s.retained += n
	if s.retained > maxRetainedBytes {
		return malformed("the response's retained state exceeds %d bytes", maxRetainedBytes)
	}
	return nil
}
