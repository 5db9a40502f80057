package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptrace"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pabloagent/pablo/internal/httpx"
	"github.com/pabloagent/pablo/internal/redact"
	"github.com/pabloagent/pablo/internal/sse"
	"github.com/pabloagent/pablo/internal/textx"
)

// Streamable HTTP constants.
const (
	headerSession = "Mcp-Session-Id"
	headerVersion = "Mcp-Protocol-Version"
	// closeAllowance bounds the closing DELETE.
	closeAllowance = 5 * time.Second
	// defaultRetry is the wait before resuming an event stream when the
	// server named none; minRetry the shortest wait taken from a server.
	defaultRetry = time.Second
	minRetry     = 10 * time.Millisecond
	// maxResumes bounds how often one request's event stream is resumed.
	maxResumes = 100
	// maxSnippet bounds the part of an error response quoted in an error.
	maxSnippet = 200
	// maxResponseHeaderBytes bounds a response's status line and headers.
	maxResponseHeaderBytes = 64 << 10
)

// errStreamBound is how a response stream past MaxHTTPStreamBytes fails.
var errStreamBound = fmt.Errorf("%w: a response stream is longer than %d bytes", ErrBound, MaxHTTPStreamBytes)

// httpConn is a Streamable HTTP session: one POST per message, the answer
// a JSON body or an event stream, over an http.Client of ours. No GET
// stream is opened to listen for server messages outside a request: this
// client declares no capability a server could use one for, and the
// catalog ignores list_changed.
type httpConn struct {
	endpoint string
	client   *http.Client
	gov      *governedTransport
	onNote   func(method string, params json.RawMessage)
	// onRequest, when set, answers the server's requests other than ping.
	onRequest requestHandler
	// auth, when set, is the server's OAuth client: every request carries
	// its access token, and a 401 or a 403 insufficient_scope is answered
	// with a grant and the request sent again.
	auth *oauthClient
	// maskKnown masks the catalog's known secrets (OAuth tokens included).
	maskKnown func(string) string

	// closing cancels requests in flight when the connection closes.
	closing context.Context
	stop    context.CancelFunc
	// listening joins the listening stream's goroutine.
	listening sync.WaitGroup

	mu      sync.Mutex
	session string // Mcp-Session-Id from initialize; "" when none
	version string // negotiated protocol version, sent once known
	ended   bool   // the server answered 404 for the session
}

// sessionID is the Mcp-Session-Id the server gave, "" when none.
func (c *httpConn) sessionID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session
}

// dialHTTP builds the connection to one server. Nothing is sent yet.
func dialHTTP(srv *Server, headers map[string]string, allowLoopback bool, onNote func(string, json.RawMessage), onRequest requestHandler, auth *oauthClient, maskKnown func(string) string) (*httpConn, error) {
	if err := checkEndpoint(srv.URL, allowLoopback); err != nil {
		return nil, err
	}
	gov := &governedTransport{headers: headers}
	client := httpx.New(httpx.Options{
		HTTP2:               true,
		Compression:         true,
		MaxIdleConnsPerHost: 2,
		IdleConnTimeout:     30 * time.Second,
		MaxHeaderBytes:      maxResponseHeaderBytes,
		MaxBodyBytes:        MaxHTTPStreamBytes,
		TooLarge:            errStreamBound,
		// Never follow a redirect: it would carry the request (and its
		// credentials) somewhere the host did not configure.
		Redirect: func(req *http.Request) error {
			// The target is named without its query, which may carry a
			// token: shortened, a token cut in two would escape the mask.
			target := *req.URL
			more := ""
			if target.RawQuery != "" || target.Fragment != "" {
				more = " (query left out)"
			}
			target.RawQuery, target.ForceQuery, target.Fragment, target.RawFragment = "", false, "", ""
			return fmt.Errorf("%w: the server answered with a redirect to %s%s; configure the final URL instead", ErrRedirect, textx.Shorten(target.Redacted(), 300), more)
		},
		Wrap: func(rt http.RoundTripper) http.RoundTripper { gov.base = rt; return gov },
		// No client-wide Timeout: it would cut event streams. Every request
		// carries its own deadline.
	})
	closing, stop := context.WithCancel(context.Background())
	return &httpConn{endpoint: srv.URL, client: client, gov: gov, onNote: onNote, onRequest: onRequest, auth: auth, maskKnown: maskKnown, closing: closing, stop: stop}, nil
}

// negotiated implements rpcConn: every later request carries the version.
func (c *httpConn) negotiated(version string) {
	c.mu.Lock()
	c.version = version
	c.mu.Unlock()
}

// errSessionNotFound is the server answering 404 for our session: it has
// forgotten or ended it, and a fresh task is needed.
var errSessionNotFound = fmt.Errorf("%w: the server answered 404 Not Found for the session", ErrSessionEnded)

// send sends one HTTP request with the protocol headers. wrote, when not
// nil, is set once the request has been fully written.
func (c *httpConn) send(ctx context.Context, verb string, body []byte, accept string, extra http.Header, wrote *atomic.Bool) (*http.Response, string, error) {
	c.mu.Lock()
	session, version, ended := c.session, c.version, c.ended
	c.mu.Unlock()
	if ended {
		return nil, session, errSessionNotFound
	}
	if wrote != nil {
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(info httptrace.WroteRequestInfo) {
			if info.Err == nil {
				wrote.Store(true)
			}
		}})
	}
	for attempt := 0; ; attempt++ {
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(body)
		}
		req, err := http.NewRequestWithContext(ctx, verb, c.endpoint, rd)
		if err != nil {
			return nil, session, err
		}
		for k, v := range extra {
			req.Header[k] = v
		}
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		req.Header.Set("Accept", accept)
		if session != "" {
			req.Header.Set(headerSession, session)
		}
		if version != "" {
			req.Header.Set(headerVersion, version)
		}
		var sent string
		if c.auth != nil {
			if sent, err = c.auth.token(ctx); err != nil {
				return nil, session, err
			}
			if sent != "" {
				req.Header.Set("Authorization", "Bearer "+sent)
			}
		}
		resp, err := c.client.Do(req)
		if err != nil {
			return nil, session, err
		}
		if c.auth != nil && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) {
			ch, _ := parseBearerChallenge(resp.Header.Values("WWW-Authenticate"))
			if resp.StatusCode == http.StatusUnauthorized || ch.err == "insufficient_scope" {
				// The server refused the request before acting on it: it
				// is sent again once a grant answers the challenge.
				drain(resp)
				if err := c.auth.challenged(ctx, resp.StatusCode, ch, sent, attempt); err != nil {
					return nil, session, err
				}
				continue
			}
		}
		if resp.StatusCode == http.StatusNotFound && session != "" {
			drain(resp)
			c.mu.Lock()
			c.ended = true
			c.mu.Unlock()
			return nil, session, errSessionNotFound
		}
		return resp, session, nil
	}
}

// bind ties ctx to the connection's lifetime.
func (c *httpConn) bind(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(c.closing, func() { cancel(errors.New("the connection was closed")) })
	return ctx, func() { stop(); cancel(nil) }
}

// call implements rpcConn.
func (c *httpConn) call(ctx context.Context, id int64, method string, params json.RawMessage) (reply, bool, error) {
	ctx, unbind := c.bind(ctx)
	defer unbind()
	var wrote atomic.Bool
	resp, session, err := c.send(ctx, http.MethodPost, appendRequest(nil, id, method, params), "application/json, text/event-stream", nil, &wrote)
	if err != nil {
		if errors.Is(err, errSessionNotFound) {
			return reply{}, false, err
		}
		if ctx.Err() != nil {
			err = context.Cause(ctx)
		}
		return reply{}, wrote.Load(), err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return reply{}, true, c.statusError(method, resp)
	}
	if method == "initialize" && session == "" {
		// Validated by governedTransport; an empty ID means no session.
		if sid := resp.Header.Get(headerSession); sid != "" {
			c.mu.Lock()
			c.session = sid
			c.mu.Unlock()
		}
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	var r reply
	switch {
	case mt == "application/json":
		r, err = c.readJSON(ctx, resp.Body, id)
	case mt == "text/event-stream":
		r, err = c.readStream(ctx, resp.Body, id)
	case resp.StatusCode == http.StatusAccepted || resp.StatusCode == http.StatusNoContent:
		err = &peerError{kind: ErrUnknownOutcome, msg: fmt.Sprintf("the server accepted %s (HTTP %d) without answering it", method, resp.StatusCode)}
	default:
		err = &peerError{kind: ErrProtocol, msg: fmt.Sprintf("the server answered %s with content type %q; want application/json or text/event-stream", method, textx.Shorten(resp.Header.Get("Content-Type"), 64))}
	}
	if err != nil && ctx.Err() != nil {
		err = context.Cause(ctx)
	}
	return r, true, err
}

// readJSON reads a single JSON response, which must answer request id.
func (c *httpConn) readJSON(ctx context.Context, body io.Reader, id int64) (reply, error) {
	data, err := io.ReadAll(body)
	if err != nil {
		return reply{}, err
	}
	if _, ok, _ := batchOf(data); ok {
		// A batch answer: our response is one of its messages, the rest
		// are handled as an event stream's would be.
		r, found, err := c.handleEvent(ctx, data, id)
		if err != nil {
			return reply{}, &peerError{answered: true, kind: ErrProtocol, msg: err.Error()}
		}
		if found {
			return r, nil
		}
		return reply{}, &peerError{answered: true, kind: ErrProtocol, msg: fmt.Sprintf("the batch answer holds no response to request %d", id)}
	}
	msg, err := decodeMessage(data)
	if err != nil {
		// The body is the answer to this request: it settles the outcome.
		return reply{}, &peerError{answered: true, kind: ErrProtocol, msg: err.Error()}
	}
	if got, ok := msg.idNumber(); msg.Method != nil || !ok || got != id {
		return reply{}, &peerError{answered: true, kind: ErrProtocol, msg: fmt.Sprintf("the response's ID %s does not match request ID %d", textx.Shorten(string(msg.ID), 40), id)}
	}
	return reply{result: msg.Result, err: msg.Error}, nil
}

// readStream reads an event stream until the response to request id
// arrives, delivering notifications and answering the server's requests on
// the way. A stream the server ends after naming an event ID is resumed
// with a GET carrying Last-Event-ID, after the wait the server asked for
// (SEP-1699, as MCP 2025-11-25 specifies); one that breaks off, or ends
// without an ID to resume from, leaves the outcome unknown.
func (c *httpConn) readStream(ctx context.Context, body io.Reader, id int64) (reply, error) {
	events := newSSEReader(body, maxEventLine, MaxFrameBytes, lineBuffer)
	// resumed is the body of the current resumed stream; the caller closes
	// the first.
	var resumed io.Closer
	defer func() {
		if resumed != nil {
			resumed.Close()
		}
	}()
	for resumes := 0; ; resumes++ {
		var ended error
		for {
			_, data, err := events.next()
			if errors.Is(err, io.EOF) || errors.Is(err, sse.ErrUnterminated) {
				// A stream cut inside an event ended as one ended at a
				// boundary does: the cut event is not delivered, and
				// resuming replays it.
				ended = err
				break
			}
			if err != nil {
				return reply{}, err
			}
			r, ok, err := c.handleEvent(ctx, data, id)
			if err != nil {
				// An event that is not a JSON-RPC message breaks the
				// stream; the server may have acted on the request.
				return reply{}, err
			}
			if ok {
				return r, nil
			}
		}
		if events.lastID == "" {
			how := "ended"
			if errors.Is(ended, sse.ErrUnterminated) {
				how = "ended inside an event"
			}
			return reply{}, fmt.Errorf("%w: the event stream %s without the response and without an event ID to resume from", errStreamEnded, how)
		}
		if resumes == maxResumes {
			return reply{}, fmt.Errorf("%w: the event stream was resumed %d times without the response", ErrBound, maxResumes)
		}
		wait := defaultRetry
		if events.hasRetry {
			wait = max(events.retry, minRetry)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return reply{}, context.Cause(ctx)
		case <-t.C:
		}
		if resumed != nil {
			resumed.Close()
			resumed = nil
		}
		resp, err := c.resumeStream(ctx, events.lastID)
		if err != nil {
			return reply{}, err
		}
		resumed = resp.Body
		events.resume(resp.Body)
	}
}

// resumeStream opens the GET that resumes a stream after lastID.
func (c *httpConn) resumeStream(ctx context.Context, lastID string) (*http.Response, error) {
	resp, _, err := c.send(ctx, http.MethodGet, nil, "text/event-stream", http.Header{"Last-Event-Id": {lastID}}, nil)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, c.statusError("resuming the event stream", resp)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		drain(resp)
		return nil, &peerError{kind: ErrUnknownOutcome, msg: fmt.Sprintf("the server resumed the event stream with content type %q", textx.Shorten(resp.Header.Get("Content-Type"), 64))}
	}
	return resp, nil
}

// handleEvent handles one event's message and reports the response to
// request id when that is what it holds. Responses to other requests are
// ignored; an event that is not a JSON-RPC object is a framingError.
func (c *httpConn) handleEvent(ctx context.Context, data []byte, id int64) (r reply, found bool, err error) {
	err = route(data, c.onNote, func(reqID json.RawMessage, method string, params json.RawMessage) {
		c.answer(ctx, reqID, method, params)
	}, func(got int64, mr reply) {
		if got == id && !found {
			r, found = mr, true
		}
	})
	return r, found, err
}

// answer POSTs this client's answer to a server's request, best effort and
// bounded. The request is handled on the goroutine reading the stream, under
// the context of the call it arrived with.
func (c *httpConn) answer(ctx context.Context, id json.RawMessage, method string, params json.RawMessage) {
	body := appendAnswer(nil, id, method)
	if c.onRequest != nil && method != "ping" {
		res, e := c.onRequest(ctx, method, params)
		body = appendResponse(nil, id, res, e)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), answerAllowance)
	defer cancel()
	resp, _, err := c.send(ctx, http.MethodPost, body, "application/json, text/event-stream", nil, nil)
	if err == nil {
		drain(resp)
	}
}

// notify implements rpcConn: the server acknowledges with 202 (200 and 204
// are tolerated).
func (c *httpConn) notify(ctx context.Context, method string, params json.RawMessage) error {
	ctx, unbind := c.bind(ctx)
	defer unbind()
	resp, _, err := c.send(ctx, http.MethodPost, appendNotification(nil, method, params), "application/json, text/event-stream", nil, nil)
	if err != nil {
		return err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		return c.statusError(method, resp)
	}
	drain(resp)
	return nil
}

// maxListens bounds how often the listening stream is opened in one
// session.
const maxListens = 32

// listen opens the stream on which the server sends what is not an answer
// to one of our requests (MCP's GET stream): elicitations and roots/list
// requests it makes while a tool runs, list_changed notifications. The
// first GET is answered before listen returns (within ctx), so the stream
// is there before any tool is called; reading it runs on a goroutine until
// the connection closes, which joins it. A server that offers no such
// stream (405) is left alone; one that ends it is asked again after the
// wait it named, a bounded number of times.
func (c *httpConn) listen(ctx context.Context) {
	open := func(ctx context.Context, lastID string) *http.Response {
		extra := http.Header{}
		if lastID != "" {
			extra.Set("Last-Event-Id", lastID)
		}
		resp, _, err := c.send(ctx, http.MethodGet, nil, "text/event-stream", extra, nil)
		if err != nil {
			return nil
		}
		if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); resp.StatusCode != http.StatusOK || mt != "text/event-stream" {
			drain(resp)
			return nil
		}
		return resp
	}
	// The first GET lives as long as the connection, not as ctx: ctx only
	// bounds the wait for its answer.
	first := make(chan *http.Response, 1)
	go func() { first <- open(c.closing, "") }()
	var resp *http.Response
	select {
	case resp = <-first:
	case <-ctx.Done():
		c.listening.Add(1)
		go func() {
			defer c.listening.Done()
			if r := <-first; r != nil {
				r.Body.Close()
			}
		}()
		return
	}
	if resp == nil {
		return
	}
	c.listening.Add(1)
	go func() {
		defer c.listening.Done()
		life := c.closing
		for n := 0; resp != nil; n++ {
			events := newSSEReader(resp.Body, maxEventLine, MaxFrameBytes, lineBuffer)
			for {
				_, data, err := events.next()
				if err != nil {
					break
				}
				// Responses on this stream answer nothing of ours.
				if c.handleEventOn(life, data) != nil {
					resp.Body.Close()
					return
				}
			}
			resp.Body.Close()
			if n+1 == maxListens {
				return
			}
			wait := defaultRetry
			if events.hasRetry {
				wait = max(events.retry, minRetry)
			}
			t := time.NewTimer(wait)
			select {
			case <-life.Done():
				t.Stop()
				return
			case <-t.C:
			}
			resp = open(life, events.lastID)
		}
	}()
}

// handleEventOn handles one event of the listening stream.
func (c *httpConn) handleEventOn(ctx context.Context, data []byte) error {
	return route(data, c.onNote, func(reqID json.RawMessage, method string, params json.RawMessage) {
		c.answer(ctx, reqID, method, params)
	}, func(int64, reply) {})
}

// close ends the session with a DELETE carrying the session ID (and the
// credential headers, as every request through the client does), cancels
// requests in flight and drops idle connections. The DELETE is best
// effort: a server that does not allow it (405) or is gone changes
// nothing for us.
func (c *httpConn) close() error {
	c.stop()
	c.listening.Wait()
	c.mu.Lock()
	session, ended := c.session, c.ended
	c.mu.Unlock()
	if session != "" && !ended {
		ctx, cancel := context.WithTimeout(context.Background(), closeAllowance)
		if resp, _, err := c.send(ctx, http.MethodDelete, nil, "application/json, text/event-stream", nil, nil); err == nil {
			drain(resp)
		}
		cancel()
	}
	c.client.CloseIdleConnections()
	return nil
}

// statusError describes a non-2xx answer with a bounded snippet of its
// body, masked of the credential headers' values. A 4xx refused the
// request; a 5xx may have come after the server acted. A 404 or 405 to
// initialize is how a server that speaks only the deprecated HTTP+SSE
// transport answers.
func (c *httpConn) statusError(what string, resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4*maxSnippet))
	// Masked before it is shortened: a suspected secret cut in two
	// would escape the mask.
	var builtins redact.Set
	text := c.gov.mask(string(b))
	if c.maskKnown != nil {
		text = c.maskKnown(text)
	}
	snippet := printable(builtins.String(text))
	msg := fmt.Sprintf("the server answered %s with HTTP %s", what, resp.Status)
	if snippet != "" {
		msg += ": " + textx.Shorten(snippet, maxSnippet)
	}
	if resp.StatusCode == http.StatusUnauthorized && c.auth == nil {
		msg += "; the server asks for authorization: configure oauth for it (or a credential header it accepts)"
	}
	if what == "initialize" && (resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed) {
		msg += "; the endpoint may speak only the deprecated HTTP+SSE transport, which this client does not: configure a Streamable HTTP endpoint"
	}
	if resp.StatusCode >= 500 {
		return &peerError{kind: ErrUnknownOutcome, msg: msg}
	}
	return &peerError{answered: true, kind: ErrProtocol, msg: msg}
}

// printable keeps the visible ASCII of s, with runs of anything else
// folded into one space.
func printable(s string) string {
	var sb strings.Builder
	for _, c := range []byte(s) {
		if c < 0x20 || c > 0x7e {
			c = ' '
		}
		sb.WriteByte(c)
	}
	return strings.Join(strings.Fields(sb.String()), " ")
}

// drain reads a little of a body so the connection can be reused, and
// closes it.
func drain(resp *http.Response) { httpx.Drain(resp, 4096) }

// governedTransport adds the server's credential headers to every request
// (the closing DELETE included) and bounds every session ID; the client
// under it bounds every response body.
type governedTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (g *governedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	for k, v := range g.headers {
		// Names were checked: none is a protocol or routing header, so
		// nothing the connection set is overwritten.
		r.Header.Set(k, v)
	}
	resp, err := g.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	if sid := resp.Header.Get(headerSession); !validSessionID(sid) {
		resp.Body.Close()
		return nil, fmt.Errorf("%w: the server sent an Mcp-Session-Id that is not 1..%d visible ASCII bytes", ErrProtocol, MaxSessionIDBytes)
	}
	return resp, nil
}

// CloseIdleConnections closes the idle connections of the transport
// under g, so the client's CloseIdleConnections reaches them.
func (g *governedTransport) CloseIdleConnections() {
	if c, ok := g.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// mask replaces the credential headers' values in s, a prefix of a body,
// and drops a tail that could be the start of one cut off by the prefix.
func (g *governedTransport) mask(s string) string {
	for _, hv := range g.headers {
		// The whole value first, then its token alone ("Bearer X" → X).
		parts := redact.Parts(hv)
		slices.Reverse(parts)
		for _, v := range parts {
			s = strings.ReplaceAll(s, v, "[redacted]")
			for k := min(len(v)-1, len(s)); k > 0; k-- {
				if strings.HasSuffix(s, v[:k]) {
					s = s[:len(s)-k]
					break
				}
			}
		}
	}
	return s
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
