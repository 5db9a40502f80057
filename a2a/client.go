package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/propagation"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/internal/httpx"
	"github.com/pabloagent/pablo/internal/redact"
)

// errRedirect is what any redirect becomes: nothing is followed, same
// origin or not.
var errRedirect = errors.New("a2a: the peer answered with a redirect, which is never followed")

// errTooLarge is a body past its bound.
var errTooLarge = errors.New("a2a: the answer exceeds its bound")

// errCardTimeout is the card fetch's own deadline.
var errCardTimeout = errors.New("a2a: the card fetch took longer than its bound")

// Client fetches and admits the configured remotes' cards and speaks the
// JSON-RPC subset to their endpoints, through one no-redirect bounded HTTP
// client. It is safe for concurrent use.
type Client struct {
	opts    Options
	remotes map[string]Remote
	names   []string
	hc      *http.Client
	redact  Masker
	// targets are the remotes' card URLs and endpoints, parsed once.
	targets map[string]remoteTargets
}

// remoteTargets are one remote's card URL and endpoint, parsed.
type remoteTargets struct{ card, endpoint *target }

// NewClient validates opts and returns a Client over them.
func NewClient(opts Options) (*Client, error) {
	byName, err := opts.check()
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(opts.Remotes))
	for _, r := range opts.Remotes {
		names = append(names, r.Name)
	}
	hc := httpx.New(httpx.Options{
		TLSConfig:    opts.TLSConfig,
		MaxBodyBytes: MaxFrameBytes * 2,
		TooLarge:     errTooLarge,
		Redirect:     func(*http.Request) error { return errRedirect },
	})
	set := opts.Redact
	if set == nil {
		set = new(redact.Set)
	}
	targets := make(map[string]remoteTargets, len(byName))
	for name, r := range byName {
		targets[name] = remoteTargets{card: newTarget(r.CardURL), endpoint: newTarget(r.Endpoint)}
	}
	return &Client{opts: opts, remotes: byName, names: names, hc: hc, redact: set, targets: targets}, nil
}

// Remotes returns the configured remote names, in configuration order.
func (c *Client) Remotes() []string { return append([]string(nil), c.names...) }

// Remote returns the configured remote called name.
func (c *Client) Remote(name string) (Remote, bool) {
	r, ok := c.remotes[name]
	return r, ok
}

// CloseIdleConnections closes the client's idle connections.
func (c *Client) CloseIdleConnections() { c.hc.CloseIdleConnections() }

// FetchCard fetches remote name's card with a public GET (no credential,
// no redirect, at most MaxCardBytes within min(ctx's deadline,
// CardFetchTimeout) on the client's clock) and admits it. A refusal is a
// *CardError.
func (c *Client) FetchCard(ctx context.Context, name string) (*Card, error) {
	r, ok := c.remotes[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownRemote, name)
	}
	data, err := c.getCard(ctx, r)
	if err != nil {
		return nil, err
	}
	return AdmitCard(r, data)
}

func (c *Client) getCard(ctx context.Context, r Remote) ([]byte, error) {
	refuse := func(reason CardReason, format string, args ...any) ([]byte, error) {
		return nil, &CardError{Remote: r.Name, Reason: reason, Detail: fmt.Sprintf(format, args...)}
	}
	// A configured card URL was checked when the client was made.
	prepared := c.targets[r.Name].card
	if prepared == nil || prepared.raw != r.CardURL {
		if err := checkURL(r.CardURL, c.opts.AllowLoopbackHTTP); err != nil {
			return refuse(CardInsecureURL, "card_url %s", err)
		}
	}
	ctx, stop := timerContext(ctx, c.opts.clock(), CardFetchTimeout, errCardTimeout)
	defer stop()
	req, err := c.request(ctx, http.MethodGet, r.CardURL, prepared, nil)
	if err != nil {
		return refuse(CardFetchFailed, "card_url does not make a request")
	}
	// A public GET: no credential of any kind, whatever the remote's
	// bearer says. The version header asks a server that serves both
	// versions for its 1.0 card (one that serves 0.3 alone ignores it).
	req.Header[hdrAccept] = []string{"application/json"}
	req.Header[hdrVersion] = []string{ProtocolVersion}
	resp, err := c.hc.Do(req)
	if err != nil {
		return refuse(fetchReason(ctx, err), "%s", fetchDetail(ctx, err))
	}
	defer httpx.Drain(resp, 4<<10)
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return refuse(CardRedirect, "the card URL answered %d; redirects are never followed", resp.StatusCode)
	}
	if resp.StatusCode != http.StatusOK {
		return refuse(CardHTTPStatus, "the card URL answered HTTP %d", resp.StatusCode)
	}
	data, err := readBounded(resp, MaxCardBytes)
	if err != nil {
		return refuse(fetchReason(ctx, err), "reading the card: %s", fetchDetail(ctx, err))
	}
	if len(data) > MaxCardBytes {
		return refuse(CardTooLarge, "the card has more than %d bytes", MaxCardBytes)
	}
	return data, nil
}

func fetchReason(ctx context.Context, err error) CardReason {
	switch {
	case errors.Is(err, errRedirect):
		return CardRedirect
	case errors.Is(context.Cause(ctx), errCardTimeout):
		return CardTimedOut
	}
	return CardFetchFailed
}

func fetchDetail(ctx context.Context, err error) string {
	switch {
	case errors.Is(err, errRedirect):
		return "the card URL redirected; redirects are never followed"
	case errors.Is(context.Cause(ctx), errCardTimeout):
		return fmt.Sprintf("no card within %s", CardFetchTimeout)
	case ctx.Err() != nil:
		return "the caller's context ended"
	}
	return "the GET failed: " + transportDetail(err)
}

// transportDetail describes a transport failure without the URL the
// standard library writes into its errors (the URL is configuration, but
// the description stays short and fixed).
func transportDetail(err error) string {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) {
		if inner := ue.Unwrap(); inner != nil {
			err = inner
		}
	}
	s := err.Error()
	if len(s) > 256 {
		s = s[:256]
	}
	return s
}

// rpcCall is one JSON-RPC exchange with a remote's endpoint.
type rpcCall struct {
	remote Remote
	card   *Card
	method string
	params any
	stream bool
	id     string
}

// rpcOut is one JSON-RPC request as sent.
type rpcOut struct {
	JSONRPC string `json:"jsonrpc"`
	ID      string `json:"id"`
	Method  string `json:"method"`
	Params  any    `json:"params"`
}

type rpcEnvelope struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *rpcError       `json:"error"`
}

type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

// The request headers, as http.Header.Set would key them (their canonical
// form), written straight into the map.
const (
	hdrAccept           = "Accept"
	hdrContentType      = "Content-Type"
	hdrAuthorization    = "Authorization"
	hdrVersion          = "A2a-Version"
	hdrExtensions       = "A2a-Extensions"
	hdrLegacyExtensions = "X-A2a-Extensions"
)

// readBounded reads resp's body, at most max bytes and one more to tell a
// body past its bound, into one buffer sized by the declared length.
func readBounded(resp *http.Response, max int) ([]byte, error) {
	size := 512
	if n := resp.ContentLength; n >= 0 && n <= int64(max) {
		size = int(n) + 1
	}
	b := make([]byte, 0, size)
	r := io.LimitReader(resp.Body, int64(max)+1)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// errNotSent marks a failure before any byte left the process.
type notSentError struct{ err error }

func (e *notSentError) Error() string { return e.err.Error() }
func (e *notSentError) Unwrap() error { return e.err }

// post sends call to the remote's exact endpoint and returns the response,
// its status and content type checked: a JSON-RPC error answered as JSON
// to a streaming call is that error, not an empty stream.
func (c *Client) post(ctx context.Context, call rpcCall) (*http.Response, error) {
	perr := func(detail string, code, msgBytes int) error {
		return &ProtocolError{Remote: call.remote.Name, Method: call.method, Code: code, Detail: detail, PeerMessageBytes: msgBytes}
	}
	body, err := call.body()
	if err != nil {
		return nil, &notSentError{fmt.Errorf("%w: %v", ErrRequest, err)}
	}
	req, err := c.request(ctx, http.MethodPost, call.remote.Endpoint, c.targets[call.remote.Name].endpoint, body)
	if err != nil {
		return nil, &notSentError{perr("the endpoint does not make a request", 0, 0)}
	}
	req.Header[hdrContentType] = []string{"application/json"}
	if !call.legacy() {
		// 0.3 defines no version header; its server reads the method.
		req.Header[hdrVersion] = []string{ProtocolVersion}
	}
	if call.stream {
		req.Header[hdrAccept] = []string{"text/event-stream"}
	} else {
		req.Header[hdrAccept] = []string{"application/json"}
	}
	if call.card != nil && call.card.Bearer && call.remote.Bearer != nil {
		secret, err := c.bearer(ctx, call.remote)
		if err != nil {
			return nil, &notSentError{err}
		}
		c.redact.Add(secret.Reveal())
		// Only here: the request's URL is the configured endpoint, which
		// the admitted card's one interface equals.
		req.Header[hdrAuthorization] = []string{"Bearer " + secret.Reveal()}
	}
	if call.card != nil && call.card.TraceContext {
		// Negotiated: the peer's span becomes a child of the caller's.
		// Remote IDs stay apart from the trace.
		if call.legacy() {
			req.Header[hdrLegacyExtensions] = []string{TraceExtension}
		} else {
			req.Header[hdrExtensions] = []string{TraceExtension}
		}
		propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if errors.Is(err, errRedirect) {
			return nil, perr("the endpoint redirected; redirects are never followed", 0, 0)
		}
		return nil, err
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		httpx.Drain(resp, 4<<10)
		return nil, perr(fmt.Sprintf("the endpoint answered HTTP %d; redirects are never followed", resp.StatusCode), 0, 0)
	}
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		// Whatever its body holds: an authentication failure, not a
		// malformed answer.
		httpx.Drain(resp, 4<<10)
		what := "the remote's bearer credential"
		if call.remote.Bearer == nil {
			what = "a bearer credential (the remote configures none)"
		}
		return nil, perr(fmt.Sprintf("authentication failed: the endpoint answered HTTP %d; check %s", resp.StatusCode, what), 0, 0)
	}
	ctype, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if resp.StatusCode == http.StatusOK && call.stream && ctype == "text/event-stream" {
		return resp, nil
	}
	if ctype == "application/json" {
		// A JSON answer: a blocking call's result, or a JSON-RPC error
		// (to a streaming call too, which would otherwise read as an
		// empty stream).
		data, err := io.ReadAll(io.LimitReader(resp.Body, MaxFrameBytes+1))
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		if len(data) > MaxFrameBytes {
			return nil, perr(fmt.Sprintf("the answer exceeds %d bytes", MaxFrameBytes), 0, 0)
		}
		env, err := c.envelope(call, data)
		if err != nil && resp.StatusCode != http.StatusOK {
			// Not a JSON-RPC answer: the status is what went wrong.
			return nil, perr(fmt.Sprintf("the endpoint answered HTTP %d", resp.StatusCode), 0, 0)
		}
		if err != nil {
			return nil, err
		}
		if call.stream || resp.StatusCode != http.StatusOK {
			if env.Error == nil {
				return nil, perr(fmt.Sprintf("HTTP %d with a JSON answer to a streaming call", resp.StatusCode), 0, 0)
			}
		}
		resp.Body = io.NopCloser(bytes.NewReader(data))
		return resp, nil
	}
	httpx.Drain(resp, 4<<10)
	if resp.StatusCode != http.StatusOK {
		return nil, perr(fmt.Sprintf("the endpoint answered HTTP %d", resp.StatusCode), 0, 0)
	}
	return nil, perr(fmt.Sprintf("the endpoint answered with content type %q", strings.ToValidUTF8(ctype, "?")), 0, 0)
}

// envelope decodes one JSON-RPC response for call: version 2.0, the
// call's id, exactly one of result and error. A JSON-RPC error becomes a
// *ProtocolError with its code and no peer text.
func (c *Client) envelope(call rpcCall, data []byte) (*rpcEnvelope, error) {
	perr := func(detail string, code, msgBytes int) error {
		return &ProtocolError{Remote: call.remote.Name, Method: call.method, Code: code, Detail: detail, PeerMessageBytes: msgBytes}
	}
	var env rpcEnvelope
	if err := json.Unmarshal(data, &env); err != nil {
		return nil, perr("the answer is not a JSON-RPC response", 0, 0)
	}
	if env.JSONRPC != "2.0" {
		return nil, perr(`the answer's jsonrpc is not "2.0"`, 0, 0)
	}
	var id string
	if json.Unmarshal(env.ID, &id) != nil || id != call.id {
		return nil, perr("the answer's id is not the request's", 0, 0)
	}
	hasResult := len(env.Result) > 0 && string(env.Result) != "null"
	if hasResult == (env.Error != nil) {
		return nil, perr("the answer must hold exactly one of result and error", 0, 0)
	}
	if env.Error != nil {
		return &env, perr("the peer answered with an error", env.Error.Code, len(env.Error.Message))
	}
	return &env, nil
}

func (c *Client) bearer(ctx context.Context, r Remote) (authority.Secret, error) {
	if c.opts.Resolve == nil {
		return authority.Secret{}, fmt.Errorf("%w: remote %q: bearer credential %q: no resolver", ErrConfig, r.Name, r.Bearer.Credential)
	}
	return c.opts.Resolve(ctx, r.Bearer.Credential, authority.ConsumerA2ABearer, r.Endpoint)
}
