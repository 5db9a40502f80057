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
// recorded in the ledger. Once open, the catalog is frozen: list_changed
// notifications are ignored and nothing is rediscovered mid-task.
//
// Two transports are supported, both driven through
// github.com/mark3labs/mcp-go's transport layer but never its typed client,
// whose conveniences are traps for a governed host:
//
//   - stdio: the absolute command, no PATH search, no shell, a cleared
//     environment holding only the credential-backed variables the
//     configuration names, its own process group owned by internal/proc (so a
//     grandchild dies with the server), stderr drained and discarded, and
//     every frame bounded;
//   - Streamable HTTP: HTTPS only (loopback HTTP only when the host allows
//     it), an http.Client that never follows a redirect or uses a proxy,
//     credential headers sent only to that server and on the closing DELETE
//     too, never over the protocol's own headers, per-call deadlines and
//     bounded response streams.
//
// The initialize request pins protocol version 2025-11-25; a server may
// answer 2025-11-25, 2025-06-18 or 2025-03-26, anything else is a protocol
// error. tools/list is read as raw JSON and every input and output schema is
// compiled with the bounded subset of internal/schema: a tool outside it is
// unavailable with a reason, never loosened. A tools/call whose response is
// lost after it left the process has an unknown outcome
// (ledger.MayHaveBeenSent) and is never replayed; cancellation sends
// notifications/cancelled over both transports.
//
// Results are ordered text blocks plus optional structured JSON. isError is
// a recoverable tool failure, a JSON-RPC error a protocol failure, and
// image, audio, embedded resource or resource-link content fails explicitly
// with a *ContentError naming the type. Tool descriptions and annotations are
// untrusted text: they are shown to a model and digested, never consulted
// for policy.
package mcp
