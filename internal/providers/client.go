package providers

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pabloagent/pablo/internal/httpx"
)

// Limits bound what one call may send and receive. A zero field takes the
// default shown.
type Limits struct {
	// MaxRequestBytes bounds the request body (128 MiB).
	MaxRequestBytes int64
	// MaxResponseBytes bounds the response body (128 MiB).
	MaxResponseBytes int64
	// MaxFrameBytes bounds one SSE frame (32 MiB).
	MaxFrameBytes int
	// MaxFrames bounds the number of SSE frames (1,000,000).
	MaxFrames int
}

// The default limits (the reference's shared transport bounds).
const (
	DefaultMaxRequestBytes  = 128 << 20
	DefaultMaxResponseBytes = 128 << 20
	DefaultMaxFrameBytes    = 32 << 20
	DefaultMaxFrames        = 1_000_000
)

func (l Limits) withDefaults() Limits {
	if l.MaxRequestBytes <= 0 {
		l.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if l.MaxResponseBytes <= 0 {
		l.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if l.MaxFrameBytes <= 0 {
		l.MaxFrameBytes = DefaultMaxFrameBytes
	}
	if l.MaxFrames <= 0 {
		l.MaxFrames = DefaultMaxFrames
	}
	return l
}

// ClientOptions configure a [Client].
type ClientOptions struct {
	Limits Limits
	// ConnectTimeout bounds dialing and the TLS handshake (60 s).
	ConnectTimeout time.Duration
	// TLSConfig, when set, is used for https endpoints (tests pass an
	// httptest server's client config).
	TLSConfig *tls.Config
	// AfterFunc arms the stream idle timer (time.AfterFunc when nil); a
	// test passes a fake clock's.
	AfterFunc func(d time.Duration, f func()) IdleTimer
}

// IdleTimer is what ClientOptions.AfterFunc returns; *time.Timer is one.
type IdleTimer interface {
	Reset(d time.Duration) bool
	Stop() bool
}

// DefaultStreamIdleTimeout is how long a call waits for the next byte of
// a provider's answer (its response headers, then each read of the event
// stream) when the model sets no stream idle timeout. Providers send
// keep-alive comments far more often; a stream silent this long has
// stalled.
const DefaultStreamIdleTimeout = 5 * time.Minute

// Client is the one HTTP client every adapter shares. It never follows a
// redirect, never reads a proxy from the environment and speaks HTTP/1.1.
// It is safe for concurrent use.
type Client struct {
	hc        *http.Client
	limits    Limits
	afterFunc func(d time.Duration, f func()) IdleTimer
}

// NewClient returns a Client.
func NewClient(opts ClientOptions) *Client {
	connect := opts.ConnectTimeout
	if connect <= 0 {
		connect = 60 * time.Second
	}
	limits := opts.Limits.withDefaults()
	return &Client{
		// HTTP/1.1 only, no compression, no redirect followed (a 3xx
		// answer is a status error), no ambient proxy, the response bound
		// from the limits. ResponseHeaderTimeout stays unset: the caller's
		// deadline and the idle timer bound the wait.
		hc: httpx.New(httpx.Options{
			ConnectTimeout:      connect,
			TLSConfig:           opts.TLSConfig,
			MaxIdleConns:        64,
			MaxIdleConnsPerHost: 16,
			IdleConnTimeout:     90 * time.Second,
			MaxBodyBytes:        limits.MaxResponseBytes,
		}),
		limits:    limits,
		afterFunc: opts.AfterFunc,
	}
}

// Limits returns the client's bounds.
func (c *Client) Limits() Limits { return c.limits }

// CloseIdle closes idle connections.
func (c *Client) CloseIdle() { c.hc.CloseIdleConnections() }

// post sends body to endpoint and returns the open event stream. Only a
// 2xx answer with an event-stream body is returned; every other outcome is
// an *Error with its delivery certainty. When nothing arrives for idle
// (DefaultStreamIdleTimeout when zero) the call ends as
// model_attempt_timed_out: before the response, delivery may have happened
// (or not, without a connection); after it, the provider had the request.
//
// secret is the call's credential, masked out of any provider words an
// error keeps.
func (c *Client) post(ctx context.Context, endpoint, secret string, header http.Header, body []byte, idle time.Duration) (*http.Response, error) {
	if int64(len(body)) > c.limits.MaxRequestBytes {
		return nil, &Error{Code: CodeContextTooLarge, Delivery: NotSent,
			Reason: "the request body exceeds the " + strconv.FormatInt(c.limits.MaxRequestBytes, 10) + "-byte bound"}
	}
	if idle <= 0 {
		idle = DefaultStreamIdleTimeout
	}
	var connected atomic.Bool
	trace := &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { connected.Store(true) }}
	rctx, cancel := context.WithCancelCause(ctx)
	w := &idleWatch{d: idle, cancel: cancel}
	after := c.afterFunc
	if after == nil {
		after = func(d time.Duration, f func()) IdleTimer { return time.AfterFunc(d, f) }
	}
	w.timer = after(idle, w.fire)
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(rctx, trace), http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		w.close()
		return nil, &Error{Code: CodeTransport, Delivery: NotSent, Reason: "the endpoint is not a valid URL"}
	}
	req.Header = header
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.hc.Do(req)
	if err != nil {
		w.close()
		if w.fired.Load() && ctx.Err() == nil {
			e := w.timedOut(MayHaveBeenSent)
			if !connected.Load() {
				e.Delivery = NotSent
			}
			return nil, e
		}
		return nil, transportError(ctx, err, connected.Load(), endpoint)
	}
	w.timer.Reset(idle)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// An error body is read up to MaxOverflowBodyBytes for two
		// things: the explicit context-overflow code, and the provider's
		// message, kept masked (the call's credential) and bounded. The
		// body itself is never kept or logged: it may echo the request.
		buf := readErrorBody(resp.Body)
		resp.Body.Close()
		w.close()
		if (resp.StatusCode == 400 || resp.StatusCode == 413) && OverflowCode(buf) {
			return nil, overflowError(resp.StatusCode)
		}
		var message string
		if len(buf) <= MaxOverflowBodyBytes {
			if pe, ok := parseProviderError(buf); ok {
				message = said(pe.message, secret)
			}
		}
		e := statusError(resp.StatusCode, message)
		if e.RetryClass != "" {
			e.RetryAfter = retryAfter(resp.Header, time.Now())
		}
		return nil, e
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt != "text/event-stream" {
		// Some servers answer 200 with a JSON error document instead of
		// a stream: say what they said.
		buf := readErrorBody(resp.Body)
		resp.Body.Close()
		w.close()
		if pe, ok := parseProviderError(buf); ok && len(buf) <= MaxOverflowBodyBytes {
			return nil, &Error{Code: CodeRejected, Delivery: ResponseReceived, Status: resp.StatusCode,
				Reason: withSaid("the provider answered with an error document instead of an event stream", said(pe.message, secret))}
		}
		return nil, &Error{Code: CodeMalformed, Delivery: ResponseReceived, Status: resp.StatusCode,
			Reason: "the response is not an event stream (Content-Type must be text/event-stream)"}
	}
	resp.Body = &idleBody{r: resp.Body, w: w}
	return resp, nil
}

// ErrStreamIdle is the cause of a call that waited longer than its stream
// idle timeout for the provider's next byte.
var ErrStreamIdle = errors.New("providers: the provider's stream was idle past its timeout")

// idleWatch ends a call (cancelling its request) when its timer fires.
type idleWatch struct {
	d      time.Duration
	timer  IdleTimer
	cancel context.CancelCauseFunc
	fired  atomic.Bool
}

func (w *idleWatch) fire() {
	w.fired.Store(true)
	w.cancel(ErrStreamIdle)
}

// close stops the timer and releases the request's context.
func (w *idleWatch) close() {
	w.timer.Stop()
	w.cancel(context.Canceled)
}

func (w *idleWatch) timedOut(d Delivery) *Error {
	return &Error{Code: CodeAttemptTimedOut, Delivery: d, RetryClass: RetryTransportUncertain,
		Reason: "the provider sent nothing for " + w.d.String() + " (stream idle timeout)", Err: ErrStreamIdle}
}

// idleBody rearms the idle timer on every read that brings bytes; once it
// has fired, a read fails as model_attempt_timed_out with the response
// received.
type idleBody struct {
	r io.ReadCloser
	w *idleWatch
}

func (b *idleBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if b.w.fired.Load() {
		return 0, b.w.timedOut(ResponseReceived)
	}
	if n > 0 {
		b.w.timer.Reset(b.w.d)
	}
	return n, err
}

func (b *idleBody) Close() error {
	b.w.close()
	return b.r.Close()
}

// transportError classifies a failure below HTTP. Without a connection the
// request cannot have left; with one, it may have. The message names a
// category and the endpoint (scheme, host and path: never its query or
// userinfo), never the library's text.
func transportError(ctx context.Context, err error, connected bool, endpoint string) *Error {
	e := &Error{Code: CodeTransport, Delivery: MayHaveBeenSent, RetryClass: RetryTransportUncertain}
	if !connected {
		e.Delivery, e.RetryClass = NotSent, RetryNotSent
	}
	if cerr := ctx.Err(); cerr != nil {
		e.Err, e.Reason, e.RetryClass = cerr, "the call was cancelled or ran out of time", ""
		return e
	}
	var dnsErr *net.DNSError
	var opErr *net.OpError
	var tlsErr *tls.RecordHeaderError
	var certErr *tls.CertificateVerificationError
	to := " to " + endpointName(endpoint)
	switch {
	case errors.As(err, &dnsErr):
		e.Reason = "the host name did not resolve" + to
	case errors.As(err, &certErr), errors.As(err, &tlsErr):
		e.Reason = "the TLS handshake failed" + to
	case errors.Is(err, syscall.ECONNREFUSED):
		e.Reason = "connection refused" + to
	case errors.Is(err, syscall.ECONNRESET):
		e.Reason = "connection reset" + to
	case errors.As(err, &opErr) && opErr.Op == "dial":
		e.Reason = "the connection could not be made" + to
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		e.Reason = "the connection closed before a response arrived" + to
	default:
		e.Reason = "the request failed below HTTP" + to
	}
	return e
}

// authHeader builds the credential header: Authorization with a bearer
// prefix by default.
func authHeader(name, scheme, secret string) http.Header {
	h := http.Header{}
	if secret == "" {
		return h
	}
	if name == "" {
		name = "Authorization"
	}
	v := secret
	if scheme == "" || strings.EqualFold(scheme, "bearer") {
		v = "Bearer " + secret
	}
	h.Set(name, v)
	return h
}
