package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/pabloagent/pablo/ledger/outcome"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/internal/jsonx"
	"github.com/pabloagent/pablo/internal/textx"
	"github.com/pabloagent/pablo/ledger"
)

// maxRPCMessage bounds the server's message kept in the RPCError of a
// call.
const maxRPCMessage = 1024

// Result is a tools/call result this client accepts: ordered text blocks
// and optional structured JSON (an object), with secrets already masked.
type Result struct {
	Text       []string        `json:"text"`
	Structured json.RawMessage `json:"structured_content,omitempty"`
	// IsError is the server's isError: a tool failure the model may
	// recover from.
	IsError bool `json:"is_error,omitempty"`
	// Progress counts the progress notifications received (bounded).
	Progress int `json:"progress,omitempty"`
	// Masked counts the secrets masked in the result's strings.
	Masked int `json:"-"`
}

// InvalidResultError is a result that broke the tool's declared output
// contract: structured content missing, not an object, or invalid against
// the output schema.
type InvalidResultError struct {
	Tool   string
	Reason string
}

func (e *InvalidResultError) Error() string {
	return fmt.Sprintf("mcp: tool %s returned an invalid result: %s", e.Tool, e.Reason)
}

// Unwrap returns ErrInvalidResult.
func (e *InvalidResultError) Unwrap() error { return ErrInvalidResult }

// CallTool calls an admitted tool with arguments (a JSON object; empty
// means {}). The arguments are validated against the tool's input schema
// before anything is sent, the result against its output schema after.
// Errors: *CallError (transport, cancellation, unknown outcome; with a
// delivery certainty), *RPCError (protocol failure), *ContentError,
// *InvalidResultError, or a *authority.ContractError for arguments.
func (c *Catalog) CallTool(ctx context.Context, id authority.ID, arguments json.RawMessage) (*Result, error) {
	return c.callTool(ctx, id, arguments, "", true)
}

// callTool calls a tool, validating its arguments unless the caller already
// did against the same compiled contract.
func (c *Catalog) callTool(ctx context.Context, id authority.ID, arguments json.RawMessage, key string, validate bool) (*Result, error) {
	t, ok := c.tools[id]
	if !ok {
		return nil, &authority.ContractError{Kind: authority.ContractUnknownTool, Tool: id}
	}
	if len(arguments) == 0 {
		arguments = json.RawMessage("{}")
	}
	if validate {
		if res := t.input.Validate(arguments); !res.Valid {
			path := ""
			if len(res.Diagnostics) > 0 {
				path = res.Diagnostics[0].InstancePath
			}
			return nil, &authority.ContractError{Kind: authority.ContractInvalidArguments, Tool: id, Path: path}
		}
	}
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return nil, &CallError{Tool: string(id), Kind: ErrSessionEnded, Delivery: string(outcome.NotSent)}
	}
	op := t.srv.cfg.OperationTimeout
	if op <= 0 {
		op = DefaultOperationTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, op)
	defer cancel()
	// A server that said its tools changed has them decided again first.
	if err := c.relist(ctx, t.srv); err != nil {
		return nil, err
	}
	if err := c.staleError(id); err != nil {
		return nil, err
	}
	var onProgress func(string)
	if c.opts.OnProgress != nil {
		onProgress = func(msg string) { c.opts.OnProgress(ctx, id, c.secrets.String(msg)) }
	}
	ctx, span := t.srv.sess.startSpan(ctx, "tools/call", t.def.Name)
	res, err := c.callParsed(ctx, t, id, arguments, key, onProgress)
	endSpan(span, err, err == nil && res.IsError)
	return res, err
}

// callParsed sends the call and parses its result.
func (c *Catalog) callParsed(ctx context.Context, t *tool, id authority.ID, arguments json.RawMessage, key string, onProgress func(string)) (*Result, error) {
	cr, err := t.srv.sess.callTool(ctx, t.def.Name, arguments, key, onProgress)
	if err != nil {
		var ce *CallError
		var rpc *RPCError
		if errors.As(err, &rpc) {
			// The server's own text: it may echo a credential it was sent.
			rpc.Message = textx.Cut(c.secrets.String(rpc.Message), maxRPCMessage)
		}
		if errors.As(err, &ce) {
			ce.Tool = string(id)
			if errors.Is(ce.Kind, ErrSessionEnded) {
				c.setHealth(t.srv.health, func(h *Health) { h.State, h.Reason = Disabled, "the server ended the session" })
			}
			ce.Err = c.scrub(ce.Err)
		}
		return nil, err
	}
	if len(cr.raw) > c.opts.MaxOutputBytes {
		return nil, &CallError{Tool: string(id), Kind: ErrBound, Delivery: string(outcome.ResponseReceived), Err: fmt.Errorf("result of %d bytes is larger than %d", len(cr.raw), c.opts.MaxOutputBytes)}
	}
	res, err := c.parseResult(t, cr.raw)
	if err != nil {
		return nil, err
	}
	res.Progress = cr.progress
	return res, nil
}

// parseResult accepts text blocks and structured content only, masking
// known secrets, and checks the output contract.
func (c *Catalog) parseResult(t *tool, raw json.RawMessage) (*Result, error) {
	raw, masked := c.secrets.MaskJSON(raw)
	if trimmed := bytes.TrimLeft(raw, " \t\r\n"); len(trimmed) == 0 || trimmed[0] != '{' {
		// null, an array or a scalar is not a CallToolResult: never read as
		// an empty success.
		return nil, &InvalidResultError{Tool: string(t.id), Reason: "the result is not a CallToolResult object"}
	}
	body, err := decodeCallBody(raw)
	if err != nil {
		// A text that is not a string fails here too.
		return nil, &InvalidResultError{Tool: string(t.id), Reason: "the result is not a CallToolResult object with string texts"}
	}
	res := &Result{IsError: body.IsError, Text: []string{}, Masked: masked}
	for i, b := range body.Content {
		if b.Type != "text" {
			return nil, &ContentError{Tool: string(t.id), Type: b.Type, Index: i}
		}
		if !b.Text.set {
			return nil, &InvalidResultError{Tool: string(t.id), Reason: fmt.Sprintf("text block %d has no string text", i)}
		}
		res.Text = append(res.Text, b.Text.s)
	}
	if len(body.Structured) > 0 && string(body.Structured) != "null" {
		if body.Structured[0] != '{' {
			return nil, &InvalidResultError{Tool: string(t.id), Reason: "structuredContent must be a JSON object"}
		}
		res.Structured = body.Structured
	}
	if t.output != nil && !res.IsError {
		if res.Structured == nil {
			return nil, &InvalidResultError{Tool: string(t.id), Reason: "the tool declares an output schema but returned no structuredContent"}
		}
		if v := t.output.Validate(res.Structured); !v.Valid {
			reason := "structuredContent does not match the output schema"
			if len(v.Diagnostics) > 0 {
				reason += fmt.Sprintf(" (%s at %q)", v.Diagnostics[0].Code, v.Diagnostics[0].InstancePath)
			}
			return nil, &InvalidResultError{Tool: string(t.id), Reason: reason}
		}
	}
	return res, nil
}

// callBody is a CallToolResult as parseResult reads it.
type callBody struct {
	Content    []callBlock     `json:"content"`
	Structured json.RawMessage `json:"structuredContent"`
	IsError    bool            `json:"isError"`
}

// callBlock is one content block of a CallToolResult.
type callBlock struct {
	Type string    `json:"type"`
	Text blockText `json:"text"`
}

// blockText is a content block's text, set when the block has a string
// one: what a *string would say, without a pointer for every block.
type blockText struct {
	s   string
	set bool
}

// UnmarshalJSON implements json.Unmarshaler. null unsets the text, as it
// makes a *string nil.
func (t *blockText) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*t = blockText{}
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*t = blockText{s: s, set: true}
	return nil
}

// decodeCallBody decodes a result as json.Unmarshal does. A result
// written as servers write them (its members and its blocks' spelled as
// the protocol spells them, once each; content an array of objects whose
// type and text are strings; isError a boolean) is read by one walk of its
// members, without reflection: every call's result is, on the caller's
// path. Anything else goes to json.Unmarshal.
func decodeCallBody(raw []byte) (callBody, error) {
	if b, ok := decodeCallBodyDirect(raw); ok {
		return b, nil
	}
	var b callBody
	err := json.Unmarshal(raw, &b)
	return b, err
}

func decodeCallBodyDirect(raw []byte) (callBody, bool) {
	var b callBody
	if !json.Valid(raw) {
		return b, false
	}
	var seen [3]bool
	ok := jsonx.EachMember(raw, func(name, v []byte) bool {
		k := -1
		switch string(name) {
		case "content":
			k = 0
		case "structuredContent":
			k = 1
		case "isError":
			k = 2
		default:
			return !foldsTo(name, "content", "structuredContent", "isError")
		}
		if seen[k] {
			return false
		}
		seen[k] = true
		switch k {
		case 0:
			b.Content = []callBlock{}
			return jsonx.EachElement(v, func(e []byte) bool {
				blk, ok := decodeCallBlock(e)
				b.Content = append(b.Content, blk)
				return ok
			})
		case 1:
			b.Structured = bytes.Clone(v)
		case 2:
			switch string(v) {
			case "true":
				b.IsError = true
			case "false":
			default:
				return false
			}
		}
		return true
	})
	return b, ok
}

// decodeCallBlock reads one content block for decodeCallBodyDirect.
func decodeCallBlock(e []byte) (callBlock, bool) {
	var blk callBlock
	var seen [2]bool
	ok := jsonx.EachMember(e, func(name, v []byte) bool {
		switch string(name) {
		case "type":
			if seen[0] {
				return false
			}
			seen[0] = true
			if string(v) == `"text"` {
				// The type of nearly every block, without a copy.
				blk.Type = "text"
				return true
			}
			s, ok := decodeString(v)
			blk.Type = s
			return ok
		case "text":
			if seen[1] {
				return false
			}
			seen[1] = true
			s, ok := decodeString(v)
			blk.Text = blockText{s: s, set: true}
			return ok
		}
		return !foldsTo(name, "type", "text")
	})
	return blk, ok
}

// decodeString is a JSON string value as encoding/json decodes it: a plain
// one is copied, one with escapes or non-ASCII bytes is left to the
// decoder; false for a value that is not a string.
func decodeString(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' {
		return "", false
	}
	plain := true
	for _, c := range v[1 : len(v)-1] {
		if c == '\\' || c >= utf8.RuneSelf {
			plain = false
			break
		}
	}
	if plain {
		return string(v[1 : len(v)-1]), true
	}
	var s string
	return s, json.Unmarshal(v, &s) == nil
}

// foldsTo reports whether name, a member name as written, might be one of
// names to encoding/json, which matches names without regard to case (and
// unescapes them): such a member is the decoder's to judge.
func foldsTo(name []byte, names ...string) bool {
	if bytes.IndexByte(name, '\\') >= 0 {
		return true
	}
	for _, n := range names {
		if strings.EqualFold(string(name), n) {
			return true
		}
	}
	return false
}

// Call implements the engine's ToolCatalog: CallTool without re-validating
// the arguments (the engine validated them against the InputSchema it got
// from Tools), with every outcome
// mapped to a ledger.ToolResult. isError and unsupported content are
// recoverable; a protocol failure, an invalid result or a lost response is
// terminal, the last with delivery may_have_been_sent.
func (c *Catalog) Call(ctx context.Context, call authority.Call) ledger.ToolResult {
	server, name, _ := call.Tool.MCP()
	// Call is the ToolCatalog method: the engine has already validated
	// call.Arguments against the InputSchema it got from Tools.
	res, err := c.callTool(ctx, call.Tool, call.Arguments, call.IdempotencyKey, false)
	payload := func(extra map[string]any) map[string]any {
		m := map[string]any{"server": server, "tool": name}
		for k, v := range extra {
			m[k] = v
		}
		return map[string]any{"mcp": m}
	}
	if err == nil {
		// payload's map, built in place: a result is made on every call.
		t := c.tools[call.Tool] // callTool found it
		m := make(map[string]any, 6)
		m["server"], m["tool"], m["content"] = t.server, t.name, res.Text
		if res.Structured != nil {
			m["structured_content"] = res.Structured
		}
		if res.Progress > 0 {
			m["progress"] = res.Progress
		}
		out := map[string]any{"mcp": m}
		if res.IsError {
			m["is_error"] = true
			return ledger.ToolResult{Status: outcome.ToolRecoverableError, Output: out, Masked: res.Masked}
		}
		return ledger.ToolResult{Status: outcome.ToolCompleted, Output: out, Masked: res.Masked}
	}
	errOut := func(code string, extra map[string]any) map[string]any {
		e := map[string]any{"code": code}
		for k, v := range extra {
			e[k] = v
		}
		return payload(map[string]any{"error": e})
	}
	var (
		ce  *CallError
		rpc *RPCError
		cnt *ContentError
		inv *InvalidResultError
		con *authority.ContractError
	)
	switch {
	case errors.As(err, &con):
		if con.Kind == authority.ContractUnknownTool {
			return ledger.ToolResult{Status: outcome.ToolPolicyDenied, Rule: authority.RuleToolUnavailable}
		}
		return ledger.ToolResult{Status: outcome.ToolInvalidArguments, Code: outcome.FailInvalidToolArguments, Delivery: outcome.NotSent}
	case errors.As(err, &cnt):
		return ledger.ToolResult{Status: outcome.ToolRecoverableError, Output: errOut("unsupported_content", map[string]any{"content_type": textx.Shorten(cnt.Type, 32), "message": cnt.Error()})}
	case errors.As(err, &inv):
		return ledger.ToolResult{Status: outcome.ToolIOFailed, Code: outcome.FailToolExecution, Delivery: outcome.ResponseReceived, Output: errOut("invalid_result", map[string]any{"message": inv.Error()})}
	case errors.As(err, &rpc):
		return ledger.ToolResult{Status: outcome.ToolIOFailed, Code: outcome.FailToolExecution, Delivery: outcome.ResponseReceived, Output: errOut("protocol_error", map[string]any{"jsonrpc_code": rpc.Code})}
	case errors.As(err, &ce):
		d := outcome.Delivery(ce.Delivery)
		switch {
		case errors.Is(ce.Kind, context.Canceled):
			return ledger.ToolResult{Status: outcome.ToolCancelled, Delivery: d}
		case errors.Is(ce.Kind, context.DeadlineExceeded):
			return ledger.ToolResult{Status: outcome.ToolTimedOut, Delivery: d}
		case errors.Is(ce.Kind, ErrBound) && d == outcome.ResponseReceived:
			return ledger.ToolResult{Status: outcome.ToolOutputLimit, Limit: outcome.LimitToolOutputBytes, Delivery: d}
		case errors.Is(ce.Kind, ErrSessionEnded):
			return ledger.ToolResult{Status: outcome.ToolIOFailed, Code: outcome.FailToolExecution, Delivery: d, Output: errOut("session_ended", nil)}
		}
		code := "transport_failed"
		switch {
		case errors.Is(ce.Kind, ErrProtocol):
			code = "protocol_error"
		case d == outcome.MayHaveBeenSent:
			code = "outcome_unknown"
		}
		return ledger.ToolResult{Status: outcome.ToolIOFailed, Code: outcome.FailToolExecution, Delivery: d, Output: errOut(code, nil)}
	}
	return ledger.ToolResult{Status: outcome.ToolIOFailed, Code: outcome.FailToolExecution, Delivery: outcome.MayHaveBeenSent}
}
