package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/pabloagent/pablo/internal/jsonx"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/pabloagent/pablo/ledger"
)

// cancelAllowance bounds the notifications/cancelled send after a call is
// abandoned, as the reference sends it within its cleanup allowance.
const cancelAllowance = 50 * time.Millisecond

// session is one initialized MCP session over an mcp-go transport. It
// speaks JSON-RPC through the transport's SendRequest with raw params and
// results, so nothing is decoded by mcp-go's typed client.
type session struct {
	server  string
	tr      transport.Interface
	sent    func() uint64 // monotonic count of requests that left the process
	version string

	nextID atomic.Int64
	// mu keeps at most one request in flight per server.
	mu sync.Mutex

	// progress is the token of the call in flight and what arrived for it.
	// The notification handler runs on mcp-go's reader goroutine: it only
	// records, never calls back into the transport.
	progressMu    sync.Mutex
	progressToken int64
	progressCount int
	progressBytes int

	ended atomic.Bool
}

func newSession(server string, tr transport.Interface, sent func() uint64) *session {
	s := &session{server: server, tr: tr, sent: sent}
	tr.SetNotificationHandler(s.notify)
	return s
}

// notify records progress for the call in flight. It must not block or call
// the transport: it runs on the transport's reader.
func (s *session) notify(n mcpgo.JSONRPCNotification) {
	if n.Method != "notifications/progress" {
		return
	}
	tok, ok := n.Params.AdditionalFields["progressToken"].(float64)
	if !ok {
		return
	}
	msg, _ := n.Params.AdditionalFields["message"].(string)
	s.progressMu.Lock()
	defer s.progressMu.Unlock()
	if int64(tok) != s.progressToken || s.progressToken == 0 || s.progressCount >= MaxProgressMessages {
		return
	}
	s.progressCount++
	s.progressBytes += min(len(msg), 1024)
}

// initialize runs the handshake with the pinned version and records the
// version the server negotiated, refusing any this client does not
// implement.
func (s *session) initialize(ctx context.Context, name, version string) error {
	params := map[string]any{
		"protocolVersion": ProtocolVersion,
		// Tools only: no roots, sampling, elicitation or tasks.
		"capabilities": map[string]any{},
		"clientInfo":   map[string]any{"name": name, "version": version},
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
	if !slices.Contains(SupportedVersions, res.ProtocolVersion) {
		return &VersionError{Server: s.server, Requested: ProtocolVersion, Got: res.ProtocolVersion}
	}
	s.version = res.ProtocolVersion
	if hc, ok := s.tr.(transport.HTTPConnection); ok {
		hc.SetProtocolVersion(s.version)
	}
	note := mcpgo.JSONRPCNotification{JSONRPC: mcpgo.JSONRPC_VERSION, Notification: mcpgo.Notification{Method: "notifications/initialized"}}
	if err := s.tr.SendNotification(ctx, note); err != nil {
		return fmt.Errorf("%w: notifications/initialized: %v", ErrProtocol, err)
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
// never null, and the call asks for progress with its request ID as token.
func (s *session) callTool(ctx context.Context, name string, arguments json.RawMessage) (callResult, error) {
	if len(arguments) == 0 || string(arguments) == "null" {
		arguments = json.RawMessage("{}")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.nextID.Add(1)
	s.progressMu.Lock()
	s.progressToken, s.progressCount, s.progressBytes = id, 0, 0
	s.progressMu.Unlock()
	// The params are built by hand: this is the path of every call, and the
	// arguments are already validated JSON.
	body := make([]byte, 0, 64+len(name)+len(arguments))
	body = append(body, `{"_meta":{"progressToken":`...)
	body = strconv.AppendInt(body, id, 10)
	body = append(body, `},"arguments":`...)
	body = append(body, arguments...)
	body = append(body, `,"name":`...)
	body = jsonx.AppendString(body, name)
	body = append(body, '}')
	raw, err := s.send(ctx, "tools/call", id, json.RawMessage(body))
	s.progressMu.Lock()
	res := callResult{raw: raw, progress: s.progressCount}
	s.progressToken, s.progressCount, s.progressBytes = 0, 0, 0
	s.progressMu.Unlock()
	return res, err
}

// request sends one request under the per-server lock.
func (s *session) request(ctx context.Context, method string, params any) (json.RawMessage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.send(ctx, method, s.nextID.Add(1), params)
}

// send sends one JSON-RPC request and waits for its response; the caller
// holds s.mu. A request abandoned by ctx after it left the process is
// cancelled with notifications/cancelled (never initialize, which the
// protocol forbids cancelling). A failure that is not a JSON-RPC error is a
// *CallError carrying the delivery certainty.
func (s *session) send(ctx context.Context, method string, id int64, params any) (json.RawMessage, error) {
	if s.ended.Load() {
		return nil, &CallError{Tool: method, Kind: ErrSessionEnded, Delivery: string(ledger.NotSent)}
	}
	body, ok := params.(json.RawMessage)
	if !ok {
		var err error
		if body, err = json.Marshal(params); err != nil {
			return nil, fmt.Errorf("mcp: encode %s params: %w", method, err)
		}
	}
	req := transport.JSONRPCRequest{JSONRPC: mcpgo.JSONRPC_VERSION, ID: mcpgo.NewRequestId(id), Method: method, Params: json.RawMessage(body)}
	before := s.sent()
	resp, err := s.tr.SendRequest(ctx, req)
	if err != nil {
		delivery := ledger.NotSent
		if s.sent() != before {
			delivery = ledger.MayHaveBeenSent
		}
		kind := ErrUnknownOutcome
		switch {
		case errors.Is(err, transport.ErrSessionTerminated) || errors.Is(err, transport.ErrLegacySSEServer):
			s.ended.Store(true)
			kind, delivery = ErrSessionEnded, ledger.NotSent
		case errors.Is(err, ErrRedirect):
			kind = ErrRedirect
		case errors.Is(err, ErrBound):
			kind = ErrBound
		case ctx.Err() != nil:
			kind = ctx.Err()
			if method != "initialize" && delivery != ledger.NotSent {
				s.cancel(id, context.Cause(ctx))
			}
		case delivery == ledger.NotSent:
			kind = ErrProtocol
		}
		return nil, &CallError{Tool: method, Kind: kind, Delivery: string(delivery), Err: err}
	}
	if resp == nil {
		return nil, &CallError{Tool: method, Kind: ErrUnknownOutcome, Delivery: string(ledger.MayHaveBeenSent), Err: errors.New("no response")}
	}
	if got := resp.ID.String(); got != req.ID.String() {
		return nil, &CallError{Tool: method, Kind: ErrProtocol, Delivery: string(ledger.ResponseReceived), Err: fmt.Errorf("response ID %s does not match request ID %d", truncate(got, 40), id)}
	}
	if resp.Error != nil {
		return nil, &RPCError{Method: method, Code: resp.Error.Code, Message: resp.Error.Message}
	}
	if len(resp.Result) > MaxFrameBytes {
		return nil, &CallError{Tool: method, Kind: ErrBound, Delivery: string(ledger.ResponseReceived), Err: fmt.Errorf("result larger than %d bytes", MaxFrameBytes)}
	}
	return resp.Result, nil
}

// cancel tells the server to stop request id. It is best effort and
// bounded; mcp-go does not send it for us over HTTP.
func (s *session) cancel(id int64, cause error) {
	reason := "cancelled by the client"
	if errors.Is(cause, context.DeadlineExceeded) {
		reason = "the client's deadline passed"
	}
	ctx, stop := context.WithTimeout(context.Background(), cancelAllowance)
	defer stop()
	n := mcpgo.JSONRPCNotification{JSONRPC: mcpgo.JSONRPC_VERSION, Notification: mcpgo.Notification{
		Method: "notifications/cancelled",
		Params: mcpgo.NotificationParams{AdditionalFields: map[string]any{"requestId": id, "reason": reason}},
	}}
	_ = s.tr.SendNotification(ctx, n)
}
