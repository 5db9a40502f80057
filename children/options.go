package children

import (
	"time"

	"github.com/pabloagent/pablo/clock"
)

// The fixed ceilings of REFERENCE §5.3. A host may lower each through
// [Capacity]; none can be raised.
const (
	MaxActive            = 2
	MaxTotal             = 16
	MaxQueued            = 14
	MaxInputBytes        = 1 << 20 // input + overlay + attachments, per child
	MaxQueuedInputBytes  = 4 << 20 // across the queue
	MaxResultBytes       = 64 << 10
	MaxRetainedBytes     = 1 << 20 // returned results kept per root
	MaxWaitHandles       = 16
	MaxWaitTimeout       = 900_000 * time.Millisecond
	MaxHandoffs          = 16
	MaxChildContextBytes = 8 << 20
	// MaxOwnedProcesses bounds the processes a tree owns at once: its
	// stdio MCP servers and its running shell commands, every agent's
	// together (the runtime holds the permits).
	MaxOwnedProcesses = 16
)

// Capacity is a host's lowering of the fixed ceilings. A zero field keeps
// the fixed ceiling; a field above it is an error of [New], as is a
// negative one.
type Capacity struct {
	Active            int
	Total             int
	Queued            int
	InputBytes        int64
	QueuedInputBytes  int64
	ResultBytes       int64
	RetainedBytes     int64
	WaitHandles       int
	WaitTimeout       time.Duration
	ChildContextBytes int64
}

// Clock is the supervisor's time: wait timeouts and the root deadline are
// read from it, so tests advance time by hand. Nil in [Options] is the
// system clock. It is the same interface as acp.Clock and a2a.Clock.
type Clock = clock.Clock

// Timer is what [Clock.AfterFunc] returns; *time.Timer is one.
type Timer = clock.Timer

// IDSource gives the supervisor its agent and result IDs, UUIDs that never
// repeat. Nil in [Options] is random version 4 UUIDs.
type IDSource interface {
	NewID() string
}

// Options configure a [Tree], the supervisor of one root's children.
type Options struct {
	// RootRunID and ParentID identify the root run and the parent agent
	// (the root's agent ID). ParentID is required.
	RootRunID string
	ParentID  string
	// Parent is the parent's scope: what a child narrows.
	Parent Scope
	// Runner starts local children. Required.
	Runner Runner
	// Remote starts remote children; nil means spawn_remote is not
	// offered.
	Remote RemoteRunner
	// Verifier re-checks artifact handoffs; nil refuses every artifact
	// handoff (handoff_refused).
	Verifier ArtifactVerifier
	// Deadline is the root's deadline; zero means none. No child is
	// admitted or started after it, and a wait never outlasts it.
	Deadline time.Time
	// Capacity lowers the fixed ceilings.
	Capacity Capacity
	// Clock and IDs default to the system clock and random UUIDs.
	Clock Clock
	IDs   IDSource
}
