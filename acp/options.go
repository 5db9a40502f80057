package acp

import (
	"log/slog"
	"time"

	"github.com/pabloagent/pablo/clock"
	"github.com/pabloagent/pablo/event"
)

// The transport bounds of the reference (REFERENCE §3.3), the defaults of
// [Options].
const (
	DefaultMaxLine     = 32 << 20 // bytes of one input or output frame, newline excluded
	DefaultMaxInput    = 64 << 20 // bytes of all input of a connection
	DefaultMaxMessages = 128      // input messages per session
	// DefaultMaxSessionless bounds the messages of a connection that name
	// no session (initialize, session/new, session/list, unknown methods).
	DefaultMaxSessionless = 4096
	DefaultQueue          = 8 // pending events of one prompt, runtime → protocol
	DefaultWriteTimeout   = 30 * time.Second
	DefaultCoalesceBytes  = 4 << 10
	DefaultCoalesceWindow = 16 * time.Millisecond
)

// Options configure [Serve]. The zero value serves with the reference's
// bounds, the system clock and no diagnostics.
type Options struct {
	// MaxLine bounds one frame in bytes, its newline excluded (0:
	// DefaultMaxLine). A longer input line closes the connection; an
	// output frame over it is refused.
	MaxLine int
	// MaxInput bounds all bytes read from the client (0: DefaultMaxInput).
	MaxInput int64
	// MaxMessages bounds the input messages of one session: its prompts,
	// cancels and answers to permission requests (0: DefaultMaxMessages).
	// Past it the connection is closed.
	MaxMessages int
	// MaxSessionless bounds the messages that name no session
	// (initialize, session/new, session/list, unknown methods), all of
	// the connection's together (0: DefaultMaxSessionless): an editor
	// that opens and lists threads all day is not cut off after 128.
	// Past it the connection is closed.
	MaxSessionless int
	// Queue bounds the events of one prompt waiting to be projected (0:
	// DefaultQueue).
	Queue int
	// WriteTimeout is how long one frame's write may stall before the
	// connection is closed and all work cancelled (0: DefaultWriteTimeout).
	WriteTimeout time.Duration
	// CoalesceBytes and CoalesceWindow bound how much model text and for
	// how long is gathered into one agent_message_chunk after the first
	// delta of a model operation, which goes out at once (0: the
	// defaults).
	CoalesceBytes  int
	CoalesceWindow time.Duration
	// Clock times the coalescing window and the write stall; nil means
	// the system clock. Tests inject their own.
	Clock Clock
	// Logger receives diagnostics (a closed connection and why). Nil
	// discards them. Never give it the connection's output: only JSON-RPC
	// frames go there.
	Logger *slog.Logger
	// Agent names the agent in the initialize response.
	Agent Implementation
	// Durable advertises loadSession, session/list, session/resume and
	// session/close: set it when the session handler has a store.
	Durable bool
	// Deployment identifies the deployment in the pablo/v2 metadata.
	Deployment *event.DeploymentRef
	// Commands are the slash commands offered to each session (an
	// available_commands_update after session/new, load and resume): the
	// deployment's activated Skills, those for the session's task kind
	// (Command.TaskKinds). None sends no update.
	Commands []Command
}

// Implementation is the name and version an agent reports.
type Implementation struct {
	Name    string
	Version string
}

// Clock is the connection's time: the 30 s write stall and the 16 ms text
// coalescing window are armed on it, so tests advance time by hand and
// never sleep. Nil in [Options] is the system clock. It is the same
// interface as children.Clock and a2a.Clock.
type Clock = clock.Clock

// Timer is what [Clock.AfterFunc] returns; *time.Timer is one.
type Timer = clock.Timer

// withDefaults returns opts with every zero bound set.
func (o Options) withDefaults() Options {
	if o.MaxLine <= 0 {
		o.MaxLine = DefaultMaxLine
	}
	if o.MaxInput <= 0 {
		o.MaxInput = DefaultMaxInput
	}
	if o.MaxMessages <= 0 {
		o.MaxMessages = DefaultMaxMessages
	}
	if o.MaxSessionless <= 0 {
		o.MaxSessionless = DefaultMaxSessionless
	}
	if o.Queue <= 0 {
		o.Queue = DefaultQueue
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.CoalesceBytes <= 0 {
		o.CoalesceBytes = DefaultCoalesceBytes
	}
	if o.CoalesceWindow <= 0 {
		o.CoalesceWindow = DefaultCoalesceWindow
	}
	if o.Clock == nil {
		o.Clock = clock.System{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Agent.Name == "" {
		o.Agent.Name = "pablo"
	}
	return o
}
