// Package egress is the filtering proxy of a sandbox's network allowlist:
// the only way out of a sandbox that has no network of its own.
//
// A [Proxy] serves HTTP proxy requests on a listener the host gives it (a
// Unix socket bound into the sandbox). It carries a CONNECT host:port
// tunnel, or an absolute http:// request, only when an allow entry
// ([ParseAllow]) names the host and port; it refuses IP literals no entry
// names, and names that a system resolver would read as an address
// ("127.1"); it resolves allowed names itself (the sandbox has no DNS),
// never dialing a name's link-local, unspecified or multicast address, nor
// the host's loopback for a name a wildcard allows outside .localhost;
// and it hands every decision (host, port, allowed, the rule, or why not)
// to its Record function. It serves at most 256 connections at once, and
// reads a request's head within 64 KiB and 30 seconds. Each plain-HTTP request is carried on a
// connection of its own, so every request is decided, with the decided
// host as its Host header whatever the client wrote there. A tunnel's
// bytes are the client's: the proxy does not read the TLS inside a
// CONNECT, so a ClientHello naming another server (SNI) reaches the
// allowed address only, and what that address serves under another name
// is the allow entry's to answer for.
//
// Inside the sandbox, the command's HTTP_PROXY and HTTPS_PROXY name
// [ListenAddr], a loopback listener in the sandbox's own network
// namespace. Something inside must listen there and carry each
// connection to the socket: bubblewrap has no port forwarding, a
// listening socket made outside belongs to the host's namespace, and
// joining the sandbox's namespace from outside needs privileges the host
// does not have. The forwarder is therefore the host's own binary, bound
// read-only into the sandbox and started under the name [ForwarderName]:
// a binary that calls [ForwarderMain] first thing in main turns into the
// forwarder, which listens, starts the command as its child, and exits
// with its status. An embedder's binary opts in with that one call (the
// reference CLI and the tests do); no second executable ships.
package egress
