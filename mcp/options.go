package mcp

import (
	"context"
	"time"

	"github.com/pabloagent/pablo/internal/sandbox"

	"go.opentelemetry.io/otel/trace"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/clock"
	"github.com/pabloagent/pablo/ledger"
)

// Transport names how a server is reached.
type Transport string

// The transports.
const (
	Stdio Transport = "stdio"
	HTTP  Transport = "http"
)

// Clock is the time the catalog reads (health reports' CheckedAt). It is
// the same interface as children.Clock, a2a.Clock and ledger.Clock, so a
// host passes one clock everywhere.
type Clock = clock.Clock

// Protocol versions. Initialize always requests ProtocolVersion; a server
// may answer any of [SupportedVersions].
const ProtocolVersion = "2025-11-25"

// SupportedVersions returns the protocol versions this client implements,
// newest first. Each call returns a fresh slice: the handshake reads its
// own copy, so a caller that edits the result changes nothing.
func SupportedVersions() []string {
	return []string{"2025-11-25", "2025-06-18", "2025-03-26"}
}

// Reference bounds.
const (
	MaxServers          = 16
	MaxToolsPerServer   = 64
	MaxTools            = 256
	MaxPages            = 8
	MaxCatalogBytes     = 1 << 20
	MaxDescriptionBytes = 4096
	MaxSchemaBytes      = 65536
	MaxFrameBytes       = 2 << 20
	MaxResultBytes      = 1 << 20
	MaxHTTPStreamBytes  = 4 << 20
	MaxSessionIDBytes   = 256
	MaxCursorBytes      = 1024
	MaxProgressMessages = 64
	// MaxProgressMessageBytes and MaxProgressBytes bound the progress text
	// of one call: each message, and all of them together.
	MaxProgressMessageBytes = 1024
	MaxProgressBytes        = 8192
	MaxArgs                 = 64
	MaxArgBytes             = 4096
	MaxArgsTotalBytes       = 65536
	MaxEnv                  = 32
	MaxHeaders              = 16

	DefaultStartupTimeout   = 30 * time.Second
	DefaultOperationTimeout = 60 * time.Second
)

// Server is one configured server. Env and Headers map a variable or
// header name to the name of a credential: values are resolved per task
// through Options.Resolve, never written in configuration.
type Server struct {
	Name      string
	Transport Transport
	// Command is the absolute launcher of a stdio server; Args follow it.
	Command string
	Args    []string
	// Dir is the resolved working directory of a stdio server.
	Dir string
	// Env maps environment variable names to credential names (consumer
	// mcp.env, destination "mcp:SERVER:env:VAR"). The server's environment
	// holds these variables and nothing else.
	Env map[string]string
	// URL is the Streamable HTTP endpoint.
	URL string
	// Headers maps lowercase header names to credential names (consumer
	// mcp.headers, destination "mcp:SERVER:header:NAME").
	Headers map[string]string
	// OAuth, when set, has the catalog authorize with OAuth 2.1 when the
	// server asks (an HTTP 401), per the MCP authorization specification.
	// Only for transport http; Headers may then not set authorization.
	OAuth *OAuth
	// Required servers that fail fail Open; optional ones are left out.
	Required bool
	// StartupTimeout bounds start, initialize and discovery; zero means
	// DefaultStartupTimeout. OperationTimeout bounds each call; zero means
	// DefaultOperationTimeout. The caller's context always wins.
	StartupTimeout   time.Duration
	OperationTimeout time.Duration
	// Pins maps raw tool names to the definition digest ("sha256:...") the
	// host reviewed. A tool whose definition differs is unavailable.
	Pins map[string]string
	// Sandbox is the bubblewrap sandbox a stdio server runs in. The zero
	// value is the default: required, no network, and a read-only view of
	// what the server needs to start: the system directories, the
	// launcher's own directory, Dir and Sandbox.ReadPaths. Filesystem
	// scopes are about Dir. Where no sandbox can be made, a required one
	// fails the server's start (errors.Is(err, ErrSandboxUnavailable));
	// Mode "off" runs it unconfined, the host's explicit choice.
	Sandbox Sandbox
}

// Sandbox is a stdio server's sandbox profile: Mode ("required" or
// "off"), Filesystem ("no-fs", "read-only", "workspace-write"), Network
// ("deny", "allowlist" with its Allow entries, or "allow") and ReadPaths
// (absolute host paths shown read-only).
type Sandbox = sandbox.Profile

// ErrSandboxUnavailable is the kind of a required sandbox that cannot be
// made on this host (bubblewrap missing, no namespaces, not Linux).
var ErrSandboxUnavailable = sandbox.ErrUnavailable

// Options configure Open.
type Options struct {
	// Servers are the configured servers. Names must be unique.
	Servers []Server
	// BubblewrapPath is the absolute path of bubblewrap, the stdio
	// servers' sandbox; empty means /usr/bin/bwrap. It is resolved once.
	BubblewrapPath string
	// Authority decides server, launcher and tool admission. Nil admits
	// nothing.
	Authority authority.Authority
	// Resolve resolves one credential for its consumer and destination
	// (*authority.Resolver.Resolve fits). Nil resolves nothing, so a
	// server that names a credential fails.
	Resolve func(ctx context.Context, name string, consumer authority.Consumer, destination string) (authority.Secret, error)
	// Ledger, when set, receives one decision per discovered tool (its
	// admission, definition digest and negotiated version) under AgentID.
	Ledger  ledger.Recorder
	AgentID string
	// AllowLoopbackHTTP admits plain http:// endpoints on 127.0.0.1 or
	// [::1], for host fixtures. Every other endpoint must be HTTPS.
	AllowLoopbackHTTP bool
	// MaxOutputBytes bounds one call's serialized output (0: MaxResultBytes).
	MaxOutputBytes int
	// OnProgress, when set, receives the progress messages of a tool call
	// while it is in flight, on the goroutine that called the tool, within
	// MaxProgressMessages, MaxProgressMessageBytes and MaxProgressBytes and
	// with known secrets masked. Progress never extends a deadline.
	OnProgress func(ctx context.Context, tool authority.ID, message string)
	// Tracer, when set, receives a client span per MCP request (initialize,
	// tools/list, tools/call), following the OpenTelemetry MCP semantic
	// conventions; a tool call's span is a child of the caller's. Nil means
	// no spans.
	Tracer trace.Tracer
	// Elicit, when set, answers the servers' form elicitations
	// (elicitation/create) through the task's approval channels; the
	// catalog then declares the capability. A request it cannot answer, or
	// any request when Elicit is nil, is declined.
	Elicit ElicitFunc
	// Roots, when not nil, are the absolute directories the servers are
	// told they may work in (roots/list): the session's workspace.
	Roots []string
	// Tokens keeps the OAuth grants of servers configured with OAuth
	// between tasks; nil keeps them in memory for the catalog's life.
	Tokens TokenStore
	// Authorizer is the host's authorization step for an OAuth server that
	// needs a user's consent; nil fails such a server with ErrAuthorization.
	Authorizer Authorizer
	// Clock is the clock of health reports; nil means the system clock.
	Clock Clock
	// EgressForwarder is what a stdio server whose sandbox has network
	// "allowlist" needs: the absolute path of a binary that calls
	// pablo.EgressForwarderMain first thing in main (the host's own
	// executable). Such a server gets an egress proxy of its own outside
	// its sandbox, which carries HTTP and HTTPS only to Sandbox.Allow; the
	// forwarder, bound into the sandbox as the server's parent, carries
	// its connections to the proxy. Without it such a server fails to
	// start (CodeLauncher).
	EgressForwarder string
	// OnEgress, when set, receives each decision of a stdio server's
	// egress proxy (host, port, allowed, the allow entry, or why not),
	// before the connection is carried, from the proxy's goroutines: it
	// must be safe for concurrent use. An allowed request whose decision
	// it fails to record (an error) is refused. Nil records each as a
	// decision of capability "mcp/SERVER" in Ledger.
	OnEgress func(server string, d authority.EgressDecision) error
	// ClientName and ClientVersion are sent in initialize.
	ClientName, ClientVersion string
}
