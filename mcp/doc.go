// Package mcp is Pablo's Model Context Protocol client catalog: the tools of
// the MCP servers a host configured, admitted by authority and served to one
// task.
//
// Each task opens its own Catalog with Open: fresh sessions, fresh
// credential resolution, and only the servers and tools its authority
// admits. Admission follows the reference order — server policy, launcher
// policy, executable policy on the launcher, tool policy on the qualified
// ID "mcp/{server}/{tool}", then the generic tool policy — and every
// admitted tool's definition is digested, compared with the host's pins and
// recorded in the ledger. Once open, the catalog only narrows: a server's
// list_changed has its tools listed and decided again before its next
// call, and a tool that changed or vanished fails closed with
// ErrDefinitionChanged for the rest of the task (recorded in the ledger and
// the health report); a tool listed mid-task is recorded, and decided when
// the next task opens its catalog.
//
// Two transports are supported. Both are this package's own JSON-RPC
// clients, not mcp-go's: importing them links no MCP server or JSON Schema
// compiler (whose package initialization every start of a host would pay),
// and they frame, bound and account for every message the way a governed
// host needs:
//
//   - stdio: the absolute command, no PATH search at run time, no shell, a
//     cleared environment holding only the credential-backed variables the
//     configuration names, its own process group owned by internal/proc (so a
//     grandchild dies with the server); a launcher whose "#!" line runs its
//     interpreter through env (npm's and pip's shims) has the interpreter
//     resolved to an absolute path when the catalog opens, and its sandbox
//     shows the launcher's package root (the outermost node_modules, with
//     its linked packages, or a virtual environment); the head of stderr
//     is kept, and a server that exits during startup is reported with the
//     end of it, masked, and any path it named that the sandbox hid;
//     newline-delimited messages, each frame bounded, responses matched to
//     requests by ID as a JSON value, server pings answered, roots/list and
//     elicitation/create served as below, any other server request refused
//     with "method not found";
//   - Streamable HTTP: HTTPS only (loopback HTTP only when the host allows
//     it), an http.Client that never follows a redirect or uses a proxy,
//     credential headers sent only to that server and on the closing DELETE
//     too, never over the protocol's own headers, per-call deadlines, JSON or
//     bounded event-stream responses (an event stream the server ends after
//     naming an event ID is resumed with Last-Event-ID, as the protocol
//     specifies), and a 404 for the session ends it. When the catalog
//     serves roots or elicitation, the server's own stream (a GET) is
//     opened before any tool is called, for the requests it sends there.
//
// OAuth 2.1 (Server.OAuth) follows the MCP authorization specification: a
// 401 starts discovery of the protected resource metadata (RFC 9728) and
// the authorization server's metadata (RFC 8414, OpenID discovery, the
// 2025-03-26 fallbacks), whose every URL obeys the endpoint rules and
// whose redirects are never followed; the client ID is pre-registered, a
// client ID metadata document or dynamically registered; the grant is the
// authorization code with PKCE (S256) through the host's Authorizer,
// client credentials (a secret or a private_key_jwt assertion), or an
// enterprise's identity assertion (SEP-990); every token
// request carries the resource indicator (RFC 8707). Scopes come from the
// challenge, then the metadata; a 403 insufficient_scope steps up, within
// a bound, and only when it asks for more. Tokens go to their server's URL
// only, are kept in the host's TokenStore, and are masked in everything
// the catalog returns.
//
// Elicitation (Options.Elicit, form mode) reaches the task's approval
// channels with its schema validated against the form subset, bounded and
// masked, and the answer validated against it; with no channel it is
// declined. Roots (Options.Roots) are the session's workspace.
//
// Each request knows whether it left the process — any byte of its frame
// written to stdin, or its HTTP request fully written — which tells a request
// that was never sent from one whose outcome is unknown.
//
// The initialize request pins protocol version 2025-11-25; a server may
// answer 2025-11-25, 2025-06-18 or 2025-03-26, anything else is a protocol
// error. tools/list is read as raw JSON and every input and output schema is
// compiled with the bounded subset of internal/schema: a tool outside it is
// unavailable with a reason, never loosened. A tools/call whose response is
// lost after it left the process has an unknown outcome
// (outcome.MayHaveBeenSent) and is never replayed; cancellation sends
// notifications/cancelled over both transports.
//
// Results are ordered text blocks plus optional structured JSON. isError is
// a recoverable tool failure, a JSON-RPC error a protocol failure, and
// image, audio, embedded resource or resource-link content fails explicitly
// with a *ContentError naming the type. Tool descriptions and annotations are
// untrusted text: they are shown to a model and digested, never consulted
// for policy.
//
// Servers start concurrently. A tool call's progress notifications reach
// Options.OnProgress live, on the calling goroutine and bounded. With
// Options.Tracer every request is an OpenTelemetry client span following
// the MCP semantic conventions; no trace context is sent to servers.
//
// "The reference" here is Pablo's original implementation, in Rust:
// https://github.com/calebjohn24/pablo. Where this package differs from it
// on purpose, docs/differences.md says so.
package mcp
