// Package a2a is Pablo's A2A 1.0 client for remote children: it delegates
// a narrowly described task to a host-configured peer and treats
// everything that comes back as untrusted remote data. Pablo is a client
// only; it exposes no A2A server.
//
// A [Client] fetches a remote's Agent Card with a public GET (no
// credential, no redirect, at most [MaxCardBytes] within
// [CardFetchTimeout]) and admits it ([AdmitCard]): exactly one JSONRPC 1.0
// interface with an empty tenant whose url is the configured endpoint (or,
// for a card that lists none and declares A2A 0.3, exactly one JSONRPC 0.3
// endpoint, the configured one: Pablo then speaks 0.3's methods and
// objects, converted to 1.0's and held to the same rules), the
// input and output mode rules, every field's bound, no required unknown
// extension, the trace extension only with the host's opt-in, and a
// bearer only when the card names the configured scheme as an HTTP
// Bearer. A refusal is a [*CardError] saying exactly why. Card text
// grants nothing: the endpoint, the bearer and the trace opt-in are the
// host's configuration, which the card can only confirm or refuse.
//
// A [Runner] is the children package's RemoteRunner: each
// [Runner.StartRemote] admits the card, sends the request's explicit
// parts (no instructions, transcript, tools or credentials) with
// SendMessage or SendStreamingMessage, binds the remote context and task
// IDs once, follows the task's states and keeps its one artifact within
// the parent's output ceiling. A blocking SendMessage asks the peer to
// return at once (returnImmediately), so the task's ID is known while it
// works, and an unsettled task is polled with GetTask, the wait doubling
// from [PollInterval] to [MaxPollInterval], under the child's deadline. A
// cancel sends at most one CancelTask, bounded by [CancelTimeout], and its
// answer is kept as a peer claim, never as proof of rollback; a child
// stopped while its request is in flight waits at most CancelTimeout for
// the task's ID to cancel it, and a child stopped before its request left
// sends nothing at all. Every time rule runs on an injected [Clock].
//
// The bearer (an a2a.bearer credential) goes only to the exact endpoint,
// never to the card URL and never after a redirect (none is followed);
// every record is masked with it, so a peer that echoes it back records
// only the mask. A peer's error message never enters a diagnostic: a
// [*ProtocolError] keeps its code, with the code's pinned meaning.
//
// The wire types are a2a-go's (github.com/a2aproject/a2a-go/v2, and its
// 0.3 types from github.com/a2aproject/a2a-go for 0.3 remotes); the
// JSON-RPC exchange and the SSE frame reader are the package's own, over
// internal/httpx's client, because a2a-go's streaming call reads a JSON
// error answer as an empty stream and bounds only a line, not a frame.
package a2a
