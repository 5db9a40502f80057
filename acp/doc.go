// Package acp serves Pablo's session handler ([pablo.Sessions]) to an
// editor or host over the Agent Client Protocol, version 1: newline-
// delimited JSON-RPC 2.0 on a pair of streams, stdin and stdout for
// `pablo acp --stdio`. [Serve] is the whole entry; a Go host can call it
// on any reader and writer.
//
// The protocol's types, method names and error constructors are the ACP
// Go SDK's (github.com/coder/acp-go-sdk); the framing, the dispatch and the
// writer are this package's own, because the SDK's connection cannot keep
// the reference's bounds (README, dependency table): frames up to 32 MiB,
// 64 MiB of input, 128 messages per session; an oversize, unterminated,
// invalid UTF-8, batch or malformed frame closes the connection; one frame
// written and flushed at a time, and a write stalled 30 s closes the
// connection and cancels all work.
//
// Methods: initialize (protocol version 1, once), session/new,
// session/prompt, session/cancel and $/cancel_request, session/close, and
// with a store (Options.Durable) session/load, session/resume and
// session/list. Anything else is -32601; invalid parameters are -32602.
// A frame that writes a member JSON-RPC defines (id, jsonrpc, method,
// params, result, error) twice, under any spelling encoding/json would
// bind to it ("id" and "ID" are one member), or whose id is not a string,
// a number or null, is refused -32600 (Invalid Request) with id null and
// runs nothing, whatever its kind (request, notification or response); the
// connection goes on. The MCP client refuses such a frame from a server
// with the same check (ErrProtocol there, as for any broken frame).
// A prompt's events become session/update notifications (agent_message_chunk,
// tool_call, tool_call_update), and its task's outcome the stop reason
// (end_turn, cancelled, refusal, max_tokens, max_turn_requests) or a
// -32603 error. A call that needs approval becomes session/request_permission,
// bound to that call. Clients that negotiate Pablo's extensions
// ([ExtV2], ...) get correlation metadata and Pablo's own notifications
// too; others get standard ACP only. With [ExtElicitation] an MCP
// server's form elicitation during a prompt's call is asked of the client
// as [MethodElicitation]; without it the form is declined.
package acp
