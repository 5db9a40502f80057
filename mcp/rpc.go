package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/pabloagent/pablo/internal/jsonrpc"
	"github.com/pabloagent/pablo/internal/jsonx"
	"github.com/pabloagent/pablo/internal/textx"
)

// rpcConn is one transport's JSON-RPC connection to a server: stdio or
// Streamable HTTP. Both are ours, not mcp-go's client transports, so that
// importing this package links no MCP server or JSON Schema compiler (whose
// package initialization every start of a host would pay), every frame and
// event is bounded, and each request knows for itself whether it left the
// process.
type rpcConn interface {
	// call sends request id and waits for its response. written reports
	// whether any byte of the request left the process: with an error, it
	// decides between "not sent" and "may have been sent".
	call(ctx context.Context, id int64, method string, params json.RawMessage) (r reply, written bool, err error)
	// notify sends a notification.
	notify(ctx context.Context, method string, params json.RawMessage) error
	// negotiated records the protocol version initialize settled on.
	negotiated(version string)
	// close ends the connection and joins everything it started.
	close() error
}

// reply is a JSON-RPC response: a result or an error.
type reply struct {
	result json.RawMessage
	err    *wireError
}

// wireError is a JSON-RPC error object.
type wireError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// envelope is any JSON-RPC message: a request has a method and an ID, a
// notification a method and no ID, a response an ID and no method.
type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method *string         `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *wireError      `json:"error"`
}

// JSON-RPC error codes this client answers with.
const (
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602
)

// hasID reports whether the message carries a non-null ID.
func (e *envelope) hasID() bool { return len(e.ID) > 0 && string(e.ID) != "null" }

// idNumber returns the message's ID as the int64 this client sends, and
// false for a string, a fraction or anything else, which can never answer
// one of our requests. The ID is compared as a JSON value: 7 and 7.0 are
// the same number, "7" is not.
func (e *envelope) idNumber() (int64, bool) {
	if !e.hasID() || e.ID[0] == '"' {
		return 0, false
	}
	if n, err := strconv.ParseInt(string(e.ID), 10, 64); err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(string(e.ID), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int64(f), true
}

// appendRequest appends one request frame, without a line terminator.
func appendRequest(b []byte, id int64, method string, params json.RawMessage) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `,"method":`...)
	b = jsonx.AppendString(b, method)
	if len(params) > 0 {
		b = append(b, `,"params":`...)
		b = append(b, params...)
	}
	return append(b, '}')
}

// appendNotification appends one notification frame, without a line
// terminator.
func appendNotification(b []byte, method string, params json.RawMessage) []byte {
	b = append(b, `{"jsonrpc":"2.0","method":`...)
	b = jsonx.AppendString(b, method)
	if len(params) > 0 {
		b = append(b, `,"params":`...)
		b = append(b, params...)
	}
	return append(b, '}')
}

// appendAnswer appends this client's response to a request from the
// server: ping gets an empty result, anything else "method not found", as
// a client that declares no capabilities serves nothing. The server's ID
// is echoed exactly as it was written.
func appendAnswer(b []byte, id json.RawMessage, method string) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	if method == "ping" {
		return append(b, `,"result":{}}`...)
	}
	b = append(b, `,"error":{"code":`...)
	b = strconv.AppendInt(b, codeMethodNotFound, 10)
	b = append(b, `,"message":`...)
	b = jsonx.AppendString(b, "method not found: "+textx.Shorten(method, 64))
	return append(b, `}}`...)
}

// requestHandler answers a server's request with a result or a JSON-RPC
// error.
type requestHandler func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, *wireError)

// appendResponse appends this client's response to a server's request:
// result when e is nil, else the error. The server's ID is echoed exactly
// as it was written.
func appendResponse(b []byte, id json.RawMessage, result json.RawMessage, e *wireError) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	if e == nil {
		b = append(b, `,"result":`...)
		return append(append(b, result...), '}')
	}
	b = append(b, `,"error":{"code":`...)
	b = strconv.AppendInt(b, int64(e.Code), 10)
	b = append(b, `,"message":`...)
	b = jsonx.AppendString(b, e.Message)
	return append(b, `}}`...)
}

// validID reports whether a server request's ID can be echoed: a JSON
// string or number (already known to be valid JSON).
func validID(id json.RawMessage) bool {
	if len(id) == 0 {
		return false
	}
	c := id[0]
	return c == '"' || c == '-' || (c >= '0' && c <= '9')
}

// peerError is a request the server received and answered with something
// other than a JSON-RPC response this client can use: an HTTP status, a
// wrong content type, a response to another request. answered says the
// server's answer settles the outcome (it refused the request), so the
// delivery is response_received; otherwise it may have acted.
type peerError struct {
	answered bool
	kind     error
	msg      string
}

func (e *peerError) Error() string { return e.msg }

// Unwrap returns the kind: ErrProtocol, ErrUnknownOutcome or ErrBound.
func (e *peerError) Unwrap() error { return e.kind }

// errStreamEnded is a server closing its side (stdout, or an event stream
// with no way to resume) before answering.
var errStreamEnded = errors.New("the server closed the stream before answering")

// MaxBatch bounds a JSON-RPC batch a server sends (protocol 2025-03-26
// allowed them); a longer batch is dropped whole.
const MaxBatch = 64

// batchOf returns the messages of a JSON-RPC batch, or false when data is
// not a batch. An empty, nested or over-long batch is dropped (true with no
// messages); one that is not JSON is a framing error.
func batchOf(data []byte) ([]json.RawMessage, bool, error) {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '[' {
		return nil, false, nil
	}
	var msgs []json.RawMessage
	if err := json.Unmarshal(trimmed, &msgs); err != nil {
		return nil, true, framingError(err)
	}
	if len(msgs) > MaxBatch {
		return nil, true, nil
	}
	return msgs, true, nil
}

var errNullMessage = errors.New("null")

// framingError is a frame or event the peer sent that is not a JSON-RPC
// message: not JSON, nested deeper than the decoder's 10,000 levels, or not
// an object of the message's shape. Nothing later on the same stream can be
// trusted, so it ends the session at once with ErrProtocol rather than
// leaving a request waiting for its deadline. The decoder's message names a
// character or a type, never the peer's text.
func framingError(err error) error {
	return &peerError{kind: ErrProtocol, msg: fmt.Sprintf("the server sent a message that is not a JSON-RPC object: %v", err)}
}

// decodeMessage parses one frame or event. A frame that is not a JSON
// object is reported (a framingError), never guessed at.
func decodeMessage(data []byte) (envelope, error) {
	if e, ok := decodeCommon(data); ok {
		return e, nil
	}
	var e envelope
	if string(bytes.TrimSpace(data)) == "null" {
		// json.Unmarshal leaves a struct alone for null, which would pass
		// for an empty message.
		return e, framingError(errNullMessage)
	}
	if err := json.Unmarshal(data, &e); err != nil {
		return e, framingError(err)
	}
	// A member written twice (a response with two ids would answer
	// whichever request the decoder kept) or an id JSON-RPC does not
	// allow: nothing later on the stream can be trusted either.
	if err := jsonrpc.CheckEnvelope(data); err != nil {
		return e, &peerError{kind: ErrProtocol, msg: fmt.Sprintf("the server sent a message that breaks JSON-RPC 2.0: %v", err)}
	}
	return e, nil
}

// decodeCommon decodes a message as decodeMessage's decoder does, without
// reflection, when it is written as servers write them (jsonrpc.Split)
// with no error member and a method that is null or a plain ASCII string;
// false for any other message, which the decoder then reads and checks.
// Every response to a call this client makes takes this path, on the
// reader, between the server's answer and the caller's wake-up.
func decodeCommon(data []byte) (envelope, bool) {
	if !json.Valid(data) {
		return envelope{}, false
	}
	m, ok := jsonrpc.Split(data)
	if !ok || m.Error != nil {
		return envelope{}, false
	}
	var e envelope
	if m.Method != nil && string(m.Method) != "null" {
		name := m.Method
		if len(name) < 2 || name[0] != '"' {
			return envelope{}, false
		}
		name = name[1 : len(name)-1]
		for _, c := range name {
			if c < 0x20 || c == '\\' || c >= 0x80 {
				return envelope{}, false
			}
		}
		method := string(name)
		e.Method = &method
	}
	// The frame's buffer is the reader's to reuse: the values are copied,
	// into one allocation, each capped at its own length.
	if n := len(m.ID) + len(m.Params) + len(m.Result); n > 0 {
		buf := make([]byte, 0, n)
		take := func(v []byte) json.RawMessage {
			if v == nil {
				return nil
			}
			start := len(buf)
			buf = append(buf, v...)
			return buf[start:len(buf):len(buf)]
		}
		e.ID, e.Params, e.Result = take(m.ID), take(m.Params), take(m.Result)
	}
	return e, true
}

// route hands each message of an incoming frame or event, one message or a
// batch of them (a nested batch is dropped), to the handler of its kind: a
// notification to onNote (when set), a request with a valid ID to
// onRequest, a response with a numeric ID to onResponse. A well-formed
// message of none of these kinds is dropped, and so is an empty one (the
// event a server primes a resumable stream with has empty data); a frame,
// or a message of a batch, that is not a JSON-RPC object is a framingError,
// returned without handing on the rest of its batch.
func route(data []byte, onNote func(method string, params json.RawMessage), onRequest func(id json.RawMessage, method string, params json.RawMessage), onResponse func(id int64, r reply)) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	msgs, batch, err := batchOf(data)
	if err != nil {
		return err
	}
	if batch {
		for _, m := range msgs {
			if _, nested, _ := batchOf(m); nested {
				continue
			}
			if err := route(m, onNote, onRequest, onResponse); err != nil {
				return err
			}
		}
		return nil
	}
	msg, err := decodeMessage(data)
	if err != nil {
		return err
	}
	switch {
	case msg.Method != nil && !msg.hasID():
		if onNote != nil {
			onNote(*msg.Method, msg.Params)
		}
	case msg.Method != nil:
		if validID(msg.ID) {
			onRequest(msg.ID, *msg.Method, msg.Params)
		}
	default:
		if id, ok := msg.idNumber(); ok {
			onResponse(id, reply{result: msg.Result, err: msg.Error})
		}
	}
	return nil
}
