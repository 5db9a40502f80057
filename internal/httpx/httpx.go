// Package httpx builds the one kind of HTTP client Pablo sends with to a
// remote endpoint: a model provider, an MCP server over Streamable HTTP, an
// OTLP collector (and A2A remotes next). Every such client
//
//   - never reads a proxy from the environment (HTTP_PROXY and friends), so
//     a credential never travels through a proxy nobody configured;
//   - never follows a redirect, which would carry the request and its
//     credentials somewhere the host did not configure;
//   - bounds the response headers and reads every response body through one
//     bounded reader ([LimitBody]), which fails past its bound instead of
//     growing without end.
//
// What differs between endpoints (timeouts, HTTP/2, idle pools, what a
// redirect becomes) is an [Options] field; the policy above is not.
package httpx

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"time"
)

// Default bounds, taken when an Options field is zero.
const (
	// DefaultMaxHeaderBytes bounds a response's headers (10 MiB, the
	// standard library transport's own bound).
	DefaultMaxHeaderBytes = 10 << 20
	// DefaultMaxBodyBytes bounds a response's body (128 MiB, the
	// reference's shared transport bound).
	DefaultMaxBodyBytes = 128 << 20
	// DefaultHandshakeTimeout bounds the TLS handshake when no
	// ConnectTimeout is set.
	DefaultHandshakeTimeout = 10 * time.Second
)

// ErrBodyTooLarge is what a read past a body's bound fails with when the
// caller names no error of its own (Options.TooLarge).
var ErrBodyTooLarge = errors.New("httpx: the response body exceeds its bound")

// Options configure a client from [New]. The zero value is a usable
// HTTP/1.1 client with the default bounds.
type Options struct {
	// ConnectTimeout bounds dialing and the TLS handshake. Zero leaves
	// dialing to the request's context and the handshake at
	// DefaultHandshakeTimeout.
	ConnectTimeout time.Duration
	// TLSConfig, when set, is used for https endpoints (tests pass an
	// httptest server's client configuration).
	TLSConfig *tls.Config
	// HTTP2 lets the client speak HTTP/2 with a server that offers it;
	// without it the client speaks HTTP/1.1 only.
	HTTP2 bool
	// Compression lets the transport ask for gzip and decompress the
	// answer (the body bound applies to the decompressed bytes).
	Compression bool
	// MaxIdleConns and MaxIdleConnsPerHost bound the idle pool (zero: no
	// total bound; the standard library's 2 per host).
	MaxIdleConns        int
	MaxIdleConnsPerHost int
	// IdleConnTimeout closes an idle connection after this long (zero:
	// 90 s).
	IdleConnTimeout time.Duration
	// MaxHeaderBytes bounds a response's headers (zero:
	// DefaultMaxHeaderBytes).
	MaxHeaderBytes int64
	// MaxBodyBytes bounds every response body (zero: DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// TooLarge is the error a read past MaxBodyBytes fails with (nil:
	// ErrBodyTooLarge), so each caller keeps its own error kind.
	TooLarge error
	// Timeout bounds a whole exchange, body included (zero: none, which
	// an event stream needs; each request then carries its own deadline).
	Timeout time.Duration
	// Redirect decides what a redirect becomes: its error (given the
	// request the redirect asked for) ends the call. Nil returns the 3xx
	// response itself to the caller. Either way nothing is followed.
	Redirect func(req *http.Request) error
	// Wrap, when set, wraps the bounded transport (to add headers, to
	// check a response before it is read); the client sends through what
	// it returns.
	Wrap func(http.RoundTripper) http.RoundTripper
}

// New returns a client that follows the package's policy with opts'
// settings. Its CloseIdleConnections reaches the transport through a Wrap
// only if the wrapper forwards it.
func New(opts Options) *http.Client {
	connect := opts.ConnectTimeout
	handshake := connect
	if handshake <= 0 {
		handshake = DefaultHandshakeTimeout
	}
	headers := opts.MaxHeaderBytes
	if headers <= 0 {
		headers = DefaultMaxHeaderBytes
	}
	idle := opts.IdleConnTimeout
	if idle <= 0 {
		idle = 90 * time.Second
	}
	dialer := &net.Dialer{Timeout: connect, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		// Proxy is nil: no ambient proxy is ever honoured.
		Proxy:                  nil,
		DialContext:            dialer.DialContext,
		TLSHandshakeTimeout:    handshake,
		TLSClientConfig:        opts.TLSConfig,
		ForceAttemptHTTP2:      opts.HTTP2,
		MaxIdleConns:           opts.MaxIdleConns,
		MaxIdleConnsPerHost:    opts.MaxIdleConnsPerHost,
		IdleConnTimeout:        idle,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: headers,
		DisableCompression:     !opts.Compression,
	}
	if !opts.HTTP2 {
		// An empty (not nil) map turns HTTP/2 off for good.
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	var rt http.RoundTripper = &boundedTransport{base: tr, limit: bodyLimit(opts.MaxBodyBytes), tooLarge: opts.TooLarge}
	if opts.Wrap != nil {
		rt = opts.Wrap(rt)
	}
	redirect := opts.Redirect
	return &http.Client{
		Transport: rt,
		Timeout:   opts.Timeout,
		CheckRedirect: func(req *http.Request, _ []*http.Request) error {
			if redirect == nil {
				return http.ErrUseLastResponse
			}
			return redirect(req)
		},
	}
}

func bodyLimit(n int64) int64 {
	if n <= 0 {
		return DefaultMaxBodyBytes
	}
	return n
}

// boundedTransport bounds every response body it returns.
type boundedTransport struct {
	base     *http.Transport
	limit    int64
	tooLarge error
}

func (t *boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = LimitBody(resp.Body, t.limit, t.tooLarge)
	return resp, nil
}

// CloseIdleConnections closes the transport's idle connections.
func (t *boundedTransport) CloseIdleConnections() { t.base.CloseIdleConnections() }

// LimitBody returns rc bounded to limit bytes: a read past the bound fails
// with tooLarge (ErrBodyTooLarge when nil). A body of exactly limit bytes
// is within it: the bound is only crossed once a further byte arrives.
func LimitBody(rc io.ReadCloser, limit int64, tooLarge error) io.ReadCloser {
	if tooLarge == nil {
		tooLarge = ErrBodyTooLarge
	}
	return &boundedBody{rc: rc, left: limit, tooLarge: tooLarge}
}

type boundedBody struct {
	rc       io.ReadCloser
	left     int64
	tooLarge error
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// Peek one byte: a body that ends exactly at the bound is fine.
		var probe [1]byte
		if n, err := b.rc.Read(probe[:]); n == 0 {
			return 0, err
		}
		return 0, b.tooLarge
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }

// Drain reads at most n more bytes of resp's body and closes it, so the
// connection can be reused without reading an endless body.
func Drain(resp *http.Response, n int64) {
	_, _ = io.CopyN(io.Discard, resp.Body, n)
	resp.Body.Close()
}
