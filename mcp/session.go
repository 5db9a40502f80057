package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pabloagent/pablo/ledger/outcome"

	"go.opentelemetry.io/otel/trace"

	"github.com/pabloagent/pablo/internal/jsonx"
	"github.com/pabloagent/pablo/internal/textx"
)

// cancelAllowance bounds the notifications/cancelled send after a call is
// abandoned, as the reference sends it within its cleanup allowance.
const cancelAllowance = 50 * time.Millisecond

// session is one initialized MCP session over an rpcConn. It speaks
// JSON-RPC with raw params and results: nothing is decoded into a typed
// protocol model it does not need.
type session struct {
	server string
	// tracer, when set, gets a client span per request; transport is the
	// span's network.transport ("pipe" or "tcp").
	tracer    trace.Tracer
	transport string
	// mask, when set, masks a progress message before it is cut to its
	// bound: a secret the cut split in two would escape a later mask.
	mask    func(string) string
	conn    rpcConn
	version string

	// roots, when not nil, are answered to roots/list; elicit, when set,
	// answers elicitation/create within elicitTimeout. Both are declared
	// in initialize's capabilities.
	roots         []string
	elicit        ElicitFunc
	elicitTimeout time.Duration

	nextID atomic.Int64
	// mu keeps at most one request in flight per server.
	mu sync.Mutex

	// progress is the token of the call in flight and what arrived for it.
	// notify runs on the connection's reader: it only records, never calls
	// back into the connection.
	progressMu    sync.Mutex
	progressToken int64
	progressCount int
	progressBytes int
	// progressMsgs wait for the caller, woken through progressWake, when
	// the call in flight listens for progress.
	progressMsgs []string
	progressWake chan struct{}
	// inflight is the raw name of the tool being called, "" when none.
	inflight string

	// cancelAllowance bounds the notifications/cancelled send: the
	// package's constant, which a test may raise before the session is
	// used.
	cancelAllowance time.Duration

	ended atomic.Bool
	// listChanged is set by the server's notifications/tools/list_changed
	// and cleared when the tools are listed again.
	listChanged atomic.Bool
}

// newSession returns a session whose connection the caller attaches once
// it is started with s.notify as its notification handler.
func newSession(server string) *session {
	return &session{server: server, cancelAllowance: cancelAllowance}
}

// notify records progress for the call in flight. It must not block or call
// the connection: it runs on the connection's reader.
func (s *session) notify(method string, params json.RawMessage) {
	if method == "notifications/tools/list_changed" {
		s.listChanged.Store(true)
		return
	}
	if method != "notifications/progress" {
		return
	}
	var p struct {
		ProgressToken json.RawMessage `json:"progressToken"`
		Progress      json.Number     `json:"progress"`
		Total         json.Number     `json:"total"`
		Message       string          `json:"message"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	// The token is compared as a JSON number: a string never matches.
	tok, err := strconv.ParseFloat(string(p.ProgressToken), 64)
	if err != nil {
		return
	}
	s.progressMu.Lock()
	defer s.progressMu.Unlock()
	if int64(tok) != s.progressToken || s.progressToken == 0 || s.progressCount >= MaxProgressMessages {
		return
	}
	s.progressCount++
	text := p.Message
	if text == "" && p.Progress != "" {
		// No message: say how far along the server is.
		text = "progress " + string(p.Progress)
		if p.Total != "" {
			text += "/" + string(p.Total)
		}
	}
	if s.mask != nil {
		text = s.mask(text)
	}
	msg := textx.Cut(text, min(MaxProgressMessageBytes, MaxProgressBytes-s.progressBytes))
	s.progressBytes += len(msg)
	if s.progressWake == nil || msg == "" {
		return
	}
	s.progressMsgs = append(s.progressMsgs, msg)
	select {
	case s.progressWake <- struct{}{}:
	default: // the caller is already woken
	}
}

// initialize runs the handshake with the pinned version and records the
// version the server negotiated, refusing any this client does not
// implement.
func (s *session) initialize(ctx context.Context, name, version string) error {
	// Tools, and roots and form elicitation when the host gave them; no
	// sampling or tasks.
	caps := map[string]any{}
	if s.roots != nil {
		caps["roots"] = map[string]any{}
	}
	if s.elicit != nil {
		caps["elicitation"] = map[string]any{"form": map[string]any{}}
	}
	params := map[string]any{
		"protocolVersion": ProtocolVersion,
		"capabilities":    caps,
		"clientInfo":      map[string]any{"name": name, "version": version},
	}
	raw, err := s.request(ctx, "initialize", params)
	if err != nil {
		return err
	}
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
		Capabilities    struct {
			Tools json.RawMessage `json:"tools"`
		} `json:"capabilities"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("%w: initialize result does not decode: %v", ErrProtocol, err)
	}
	if !slices.Contains(SupportedVersions(), res.ProtocolVersion) {
		return &VersionError{Server: s.server, Requested: ProtocolVersion, Got: res.ProtocolVersion}
	}
	s.version = res.ProtocolVersion
	s.conn.negotiated(s.version)
	if err := s.conn.notify(ctx, "notifications/initialized", nil); err != nil {
		return fmt.Errorf("%w: notifications/initialized: %v", ErrProtocol, err)
	}
	if l, ok := s.conn.(interface{ listen(context.Context) }); ok && (s.roots != nil || s.elicit != nil) {
		// Over HTTP, a server's requests outside an answer come on a
		// stream of their own.
		l.listen(ctx)
	}
	return nil
}

// listTools reads every page of tools/list as raw tool objects, bounded in
// pages, tools and bytes.
func (s *session) listTools(ctx context.Context) ([]json.RawMessage, error) {
	var tools []json.RawMessage
	cursor := ""
	total := 0
	for page := 0; ; page++ {
		if page == MaxPages {
			return nil, fmt.Errorf("%w: tools/list has more than %d pages", ErrBound, MaxPages)
		}
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		raw, err := s.request(ctx, "tools/list", params)
		if err != nil {
			return nil, err
		}
		total += len(raw)
		if total > MaxCatalogBytes {
			return nil, fmt.Errorf("%w: tools/list is larger than %d bytes", ErrBound, MaxCatalogBytes)
		}
		var p listPage
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, fmt.Errorf("%w: tools/list result does not decode: %v", ErrProtocol, err)
		}
		tools = append(tools, p.Tools...)
		if len(tools) > MaxToolsPerServer {
			return nil, fmt.Errorf("%w: more than %d tools", ErrBound, MaxToolsPerServer)
		}
		if p.NextCursor == "" {
			return tools, nil
		}
		if len(p.NextCursor) > MaxCursorBytes {
			return nil, fmt.Errorf("%w: a tools/list cursor is longer than %d bytes", ErrBound, MaxCursorBytes)
		}
		cursor = p.NextCursor
	}
}

// callResult is a raw tools/call result and what was learned on the way.
type callResult struct {
	raw      json.RawMessage
	progress int
}

// callTool sends one tools/call. arguments is always sent as a JSON object,
// never null, and the call asks for progress with its request ID as token;
// onProgress, when not nil, receives the messages as they arrive.
// key, when set, is the call's idempotency key, sent in _meta under
// IdempotencyMetaKey.
func (s *session) callTool(ctx context.Context, name string, arguments json.RawMessage, key string, onProgress func(string)) (callResult, error) {
	if len(arguments) == 0 || string(arguments) == "null" {
		arguments = json.RawMessage("{}")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.nextID.Add(1)
	s.progressMu.Lock()
	s.progressToken, s.progressCount, s.progressBytes = id, 0, 0
	s.inflight = name
	s.progressMu.Unlock()
	// The params are built by hand: this is the path of every call, and the
	// arguments are already validated JSON.
	body := make([]byte, 0, 64+len(name)+len(arguments))
	body = append(body, `{"_meta":{`...)
	if key != "" {
		body = jsonx.AppendString(body, IdempotencyMetaKey)
		body = append(body, ':')
		body = jsonx.AppendString(body, key)
		body = append(body, ',')
	}
	body = append(body, `"progressToken":`...)
	body = strconv.AppendInt(body, id, 10)
	body = append(body, `},"arguments":`...)
	body = append(body, arguments...)
	body = append(body, `,"name":`...)
	body = jsonx.AppendString(body, name)
	body = append(body, '}')
	var raw json.RawMessage
	var err error
	if onProgress == nil {
		raw, err = s.sendRaw(ctx, "tools/call", id, body)
	} else {
		raw, err = s.sendListening(ctx, id, json.RawMessage(body), onProgress)
	}
	s.progressMu.Lock()
	res := callResult{raw: raw, progress: s.progressCount}
	s.progressToken, s.progressCount, s.progressBytes = 0, 0, 0
	s.progressMsgs, s.progressWake, s.inflight = nil, nil, ""
	s.progressMu.Unlock()
	return res, err
}

// sendListening sends a tools/call and, while it waits, hands each progress
// message to onProgress on this goroutine: the connection's reader only
// queues them. The send runs on a goroutine this call joins.
func (s *session) sendListening(ctx context.Context, id int64, body json.RawMessage, onProgress func(string)) (json.RawMessage, error) {
	wake := make(chan struct{}, 1)
	s.progressMu.Lock()
	s.progressWake = wake
	s.progressMu.Unlock()
	var raw json.RawMessage
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		raw, err = s.sendRaw(ctx, "tools/call", id, body)
	}()
	for waiting := true; waiting; {
		select {
		case <-done:
			waiting = false
		case <-wake:
		}
		s.progressMu.Lock()
		msgs := s.progressMsgs
		s.progressMsgs = nil
		s.progressMu.Unlock()
		for _, m := range msgs {
			onProgress(m)
		}
	}
	return raw, err
}

// request sends one request under the per-server lock.
func (s *session) request(ctx context.Context, method string, params any) (raw json.RawMessage, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ctx, span := s.startSpan(ctx, method, "")
	defer func() { endSpan(span, err, false) }()
	return s.send(ctx, method, s.nextID.Add(1), params)
}

// send sends one JSON-RPC request and waits for its response; the caller
// holds s.mu. A request abandoned by ctx after it left the process is
// cancelled with notifications/cancelled (never initialize, which the
// protocol forbids cancelling). A failure that is not a JSON-RPC error is a
// *CallError carrying the delivery certainty.
func (s *session) send(ctx context.Context, method string, id int64, params any) (json.RawMessage, error) {
	body, ok := params.(json.RawMessage)
	if !ok {
		if s.ended.Load() {
			return nil, &CallError{Tool: method, Kind: ErrSessionEnded, Delivery: string(outcome.NotSent)}
		}
		var err error
		if body, err = json.Marshal(params); err != nil {
			return nil, fmt.Errorf("mcp: encode %s params: %w", method, err)
		}
	}
	return s.sendRaw(ctx, method, id, body)
}

// sendRaw is send with the params already encoded: a tools/call's, built
// by hand, are not boxed into an interface on every call.
func (s *session) sendRaw(ctx context.Context, method string, id int64, body json.RawMessage) (json.RawMessage, error) {
	if s.ended.Load() {
		return nil, &CallError{Tool: method, Kind: ErrSessionEnded, Delivery: string(outcome.NotSent)}
	}
	s.requestSpan(ctx, id)
	r, written, err := s.conn.call(ctx, id, method, body)
	if err != nil {
		delivery := outcome.NotSent
		if written {
			delivery = outcome.MayHaveBeenSent
		}
		kind := ErrUnknownOutcome
		var pe *peerError
		switch {
		case errors.Is(err, ErrSessionEnded):
			// The server refused the session (HTTP 404) or the stream was
			// already gone. Before the request left, nothing was acted on;
			// after (a 404 to the GET resuming its event stream), the server
			// may have acted before it ended the session.
			s.ended.Store(true)
			kind = ErrSessionEnded
		case errors.Is(err, ErrAuthorization):
			// The server refused the request (401 or 403) before acting on
			// it, and no grant could answer its challenge.
			kind = ErrAuthorization
			if written {
				delivery = outcome.ResponseReceived
			}
		case errors.Is(err, ErrRedirect):
			kind = ErrRedirect
		case errors.Is(err, ErrBound):
			kind = ErrBound
		case ctx.Err() != nil:
			kind = ctx.Err()
			if method != "initialize" && delivery != outcome.NotSent {
				s.cancel(id, context.Cause(ctx))
			}
		case errors.As(err, &pe):
			kind = pe.kind
			if pe.answered {
				delivery = outcome.ResponseReceived
			}
		case delivery == outcome.NotSent:
			kind = ErrProtocol
		}
		return nil, &CallError{Tool: method, Kind: kind, Delivery: string(delivery), Err: err}
	}
	if r.err != nil {
		return nil, &RPCError{Method: method, Code: r.err.Code, Message: r.err.Message}
	}
	if len(r.result) == 0 {
		return nil, &CallError{Tool: method, Kind: ErrProtocol, Delivery: string(outcome.ResponseReceived), Err: errors.New("the response has neither a result nor an error")}
	}
	if len(r.result) > MaxFrameBytes {
		return nil, &CallError{Tool: method, Kind: ErrBound, Delivery: string(outcome.ResponseReceived), Err: fmt.Errorf("result larger than %d bytes", MaxFrameBytes)}
	}
	return r.result, nil
}

// cancel tells the server to stop request id. It is best effort and
// bounded.
func (s *session) cancel(id int64, cause error) {
	reason := "cancelled by the client"
	if errors.Is(cause, context.DeadlineExceeded) {
		reason = "the client's deadline passed"
	}
	ctx, stop := context.WithTimeout(context.Background(), s.cancelAllowance)
	defer stop()
	params := strconv.AppendInt([]byte(`{"requestId":`), id, 10)
	params = append(params, `,"reason":`...)
	params = append(jsonx.AppendString(params, reason), '}')
	_ = s.conn.notify(ctx, "notifications/cancelled", params)
}

// IdempotencyMetaKey is the tools/call _meta key that carries a call's
// idempotency key (authority.Call.IdempotencyKey): a server that honours
// it can apply a retried call once. The prefix follows MCP's _meta naming
// (reverse-DNS labels, then a slash).
const IdempotencyMetaKey = "io.github.pabloagent/idempotency-key"
