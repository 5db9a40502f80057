package mcp

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
)

// httpConn is a Streamable HTTP session: mcp-go's transport over an
// http.Client of ours.
type httpConn struct {
	tr   *transport.StreamableHTTP
	gov  *governedTransport
	base *http.Transport
}

// dialHTTP builds the transport for one server. Nothing is sent yet.
func dialHTTP(srv *Server, headers map[string]string, allowLoopback bool) (*httpConn, error) {
	if err := checkEndpoint(srv.URL, allowLoopback); err != nil {
		return nil, err
	}
	base := &http.Transport{
		// No proxy: credentials go to the configured server only.
		Proxy:                 nil,
		ForceAttemptHTTP2:     true,
		MaxIdleConnsPerHost:   2,
		IdleConnTimeout:       30 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	gov := &governedTransport{base: base, headers: headers}
	client := &http.Client{
		Transport: gov,
		// Never follow a redirect: it would carry the request (and its
		// credentials) somewhere the host did not configure.
		CheckRedirect: func(req *http.Request, _ []*http.Request) error {
			return fmt.Errorf("%w: the server answered with a redirect to %s; configure the final URL instead", ErrRedirect, truncate(req.URL.Redacted(), 300))
		},
		// No client-wide Timeout: it would cut SSE streams. Every request
		// carries its own deadline.
	}
	tr, err := transport.NewStreamableHTTP(srv.URL,
		transport.WithHTTPBasicClient(client),
		transport.WithHTTPLogger(slog.New(slog.DiscardHandler)),
	)
	if err != nil {
		return nil, err
	}
	return &httpConn{tr: tr, gov: gov, base: base}, nil
}

func (c *httpConn) sent() uint64 { return c.gov.writes.Load() }

// close ends the session with a DELETE (which carries the credential
// headers too, since it goes through the same client) and drops idle
// connections.
func (c *httpConn) close() error {
	err := c.tr.Close()
	c.base.CloseIdleConnections()
	return err
}

// governedTransport adds the server's credential headers to every request
// (the closing DELETE included), counts requests fully written (so a lost
// response can be told apart from a request that never left), and bounds
// every response body and session ID.
type governedTransport struct {
	base    http.RoundTripper
	headers map[string]string
	writes  atomic.Uint64
}

func (g *governedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	for k, v := range g.headers {
		// Names were checked: none is a protocol or routing header, so
		// nothing mcp-go set is overwritten.
		r.Header.Set(k, v)
	}
	trace := &httptrace.ClientTrace{WroteRequest: func(info httptrace.WroteRequestInfo) {
		if info.Err == nil {
			g.writes.Add(1)
		}
	}}
	r = r.WithContext(httptrace.WithClientTrace(r.Context(), trace))
	resp, err := g.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	if sid := resp.Header.Get("Mcp-Session-Id"); !validSessionID(sid) {
		resp.Body.Close()
		return nil, fmt.Errorf("%w: the server sent an Mcp-Session-Id that is not 1..%d visible ASCII bytes", ErrProtocol, MaxSessionIDBytes)
	}
	resp.Body = &boundedBody{rc: resp.Body, left: MaxHTTPStreamBytes}
	return resp, nil
}

func validSessionID(s string) bool {
	if s == "" {
		return true
	}
	if len(s) > MaxSessionIDBytes {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// boundedBody ends a response stream with an error past its bound.
type boundedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, fmt.Errorf("%w: a response stream is longer than %d bytes", ErrBound, MaxHTTPStreamBytes)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }
