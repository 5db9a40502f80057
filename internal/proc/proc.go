package proc

import (
	"errors"
	"fmt"
	"time"
)

// DefaultCleanupAllowance is the time the owner gives itself to prove a
// process group gone once the process ends, as in the reference (§4.3).
const DefaultCleanupAllowance = 2 * time.Second

// Defaults for coalescing streamed output (see [Options.OnOutput]).
const (
	DefaultChunkBytes    = 4096
	DefaultFlushInterval = 16 * time.Millisecond
)

// Stream names passed to [Options.OnOutput].
const (
	Stdout = "stdout"
	Stderr = "stderr"
)

// Sentinel error kinds. Concrete errors wrap one of them, so callers test with
// errors.Is and read details with errors.As.
var (
	// ErrCleanup means the owner could not prove, within the cleanup
	// allowance, that the process group is gone and its pipes are closed.
	ErrCleanup = errors.New("proc: process cleanup could not be proven")
	// ErrStart means the process could not be started.
	ErrStart = errors.New("proc: process could not be started")
	// ErrInvalidOptions means the Options or the exec.Cmd given to Start
	// cannot be used.
	ErrInvalidOptions = errors.New("proc: invalid options")
	// ErrUnsupportedPlatform means the platform has no process groups.
	ErrUnsupportedPlatform = errors.New("proc: process groups are not supported on this platform")
)

// Options configures one owned process. The zero value drains and discards
// stdout and stderr, connects stdin to /dev/null and uses the default cleanup
// allowance.
type Options struct {
	// CleanupAllowance bounds the whole teardown: group kill, leader reap,
	// pipe drain and group probe. Zero means DefaultCleanupAllowance.
	CleanupAllowance time.Duration

	// MaxStdout and MaxStderr bound the bytes captured from each stream.
	// Zero captures nothing: the stream is still drained (and discarded) so
	// the child never blocks on a full pipe. Bytes past the bound are
	// discarded and the stream is marked truncated.
	MaxStdout, MaxStderr int64
	// MaxTotal, when positive, also bounds stdout and stderr together.
	MaxTotal int64
	// StopOnOverflow ends the process (with EndOutputLimit) as soon as a
	// capture bound is exceeded. Without it the surplus is discarded and the
	// process runs on.
	StopOnOverflow bool

	// OnOutput, when set, receives the captured bytes of stdout and stderr as
	// they arrive, coalesced into chunks of at most ChunkBytes, delivered at
	// the latest FlushInterval after the first byte of a chunk arrived. The
	// concatenation of the chunks of one stream equals the captured bytes in
	// the Result exactly. OnOutput is called from a single goroutine owned by
	// the Process and never after Wait returns; it must not call Wait.
	OnOutput func(stream string, chunk []byte)
	// ChunkBytes and FlushInterval tune OnOutput coalescing. Zero means
	// DefaultChunkBytes and DefaultFlushInterval.
	ChunkBytes    int
	FlushInterval time.Duration

	// PipeStdin gives the caller a writer to the child's stdin
	// ([Process.Stdin]). Without it stdin is /dev/null.
	PipeStdin bool
	// PipeStdout gives the caller a reader on the child's stdout
	// ([Process.Stdout]) instead of capturing it; MaxStdout is then ignored.
	// As with exec.Cmd.StdoutPipe, read to EOF before calling Wait if all
	// output matters: Wait closes the read end.
	PipeStdout bool

	// SessionByCommand says that the command itself starts what it runs
	// in a session of its own, with no controlling terminal (bubblewrap's
	// --new-session): Start then makes it the leader of a new process
	// group in the host's session, not of a new session. A new session
	// costs more than the terminal: on a kernel with scheduler autogroups
	// each session is a group of its own, and under load a short-lived
	// one waits for the CPU (bubblewrap's setup took twice as long at a
	// load of 20).
	SessionByCommand bool

	// NamespaceInit, when set, says that every process the leader starts
	// lives in one PID namespace, led by the leader's only child
	// (bubblewrap's sandbox: its init), which dies with the leader (its
	// parent-death signal) and may lead a session of its own, out of the
	// group (bubblewrap's --new-session); it returns that init's PID, or
	// 0 when it cannot tell. It is called once the leader is reaped. The
	// teardown then waits for that one process (the group kill may not
	// reach it, its parent-death signal does) and proves the group gone
	// by it (exited, a zombie, or its PID held by a process in neither
	// its group nor the leader's) instead of reading every process of the
	// host: once a
	// namespace's init has exited, the kernel has killed and reaped every
	// other process in it. With 0 the whole group is probed as usual.
	NamespaceInit func() int
}

func (o Options) withDefaults() (Options, error) {
	switch {
	case o.CleanupAllowance < 0:
		return o, fmt.Errorf("%w: CleanupAllowance must not be negative, got %v", ErrInvalidOptions, o.CleanupAllowance)
	case o.MaxStdout < 0 || o.MaxStderr < 0 || o.MaxTotal < 0:
		return o, fmt.Errorf("%w: MaxStdout, MaxStderr and MaxTotal must not be negative", ErrInvalidOptions)
	case o.ChunkBytes < 0 || o.FlushInterval < 0:
		return o, fmt.Errorf("%w: ChunkBytes and FlushInterval must not be negative", ErrInvalidOptions)
	}
	if o.CleanupAllowance == 0 {
		o.CleanupAllowance = DefaultCleanupAllowance
	}
	if o.ChunkBytes == 0 {
		o.ChunkBytes = DefaultChunkBytes
	}
	if o.FlushInterval == 0 {
		o.FlushInterval = DefaultFlushInterval
	}
	return o, nil
}

// End says why a process ended.
type End int

// The ways a process ends.
const (
	// EndExited: the leader exited (or died of a signal) on its own.
	EndExited End = iota
	// EndCancelled: the context given to Start was done first.
	EndCancelled
	// EndKilled: the owner called Kill or Close.
	EndKilled
	// EndOutputLimit: captured output overflowed with StopOnOverflow set.
	EndOutputLimit
)

// String returns a lower-case name for the end reason.
func (e End) String() string {
	switch e {
	case EndExited:
		return "exited"
	case EndCancelled:
		return "cancelled"
	case EndKilled:
		return "killed"
	case EndOutputLimit:
		return "output_limit"
	}
	return fmt.Sprintf("End(%d)", int(e))
}

// Result is what remains of a process once its group is torn down.
type Result struct {
	// ExitCode is the leader's exit status, or -1 when it died of a signal
	// (or was never reaped).
	ExitCode int
	// Signal names the signal that killed the leader ("SIGKILL"), or is
	// empty when the leader exited.
	Signal string
	// Stdout and Stderr hold the captured bytes, at most the bounds.
	Stdout, Stderr []byte
	// StdoutTruncated and StderrTruncated report that bytes past a bound
	// were discarded.
	StdoutTruncated, StderrTruncated bool
	// End says why the process ended.
	End End
	// Pgid is the process group the process led.
	Pgid int
}

// CleanupError reports a teardown that could not be proven complete.
type CleanupError struct {
	// Pgid is the process group concerned.
	Pgid int
	// Problem says what could not be proven: "leader_not_reaped",
	// "pipes_held_open" or "group_alive".
	Problem string
	// Allowance is the cleanup allowance that ran out.
	Allowance time.Duration
}

// Error implements error.
func (e *CleanupError) Error() string {
	var what string
	switch e.Problem {
	case "leader_not_reaped":
		what = "the group leader was not reaped"
	case "pipes_held_open":
		what = "output pipes were still held open, most likely by a process that left the group (setsid)"
	case "group_alive":
		what = "live members remained in the process group after SIGKILL"
	default:
		what = e.Problem
	}
	return fmt.Sprintf("proc: cleanup of process group %d not proven within %v: %s", e.Pgid, e.Allowance, what)
}

// Unwrap makes errors.Is(err, ErrCleanup) hold.
func (e *CleanupError) Unwrap() error { return ErrCleanup }

// StartError reports a process that could not be started.
type StartError struct {
	// Path is the program that was to be started.
	Path string
	// Err is the underlying cause.
	Err error
}

// Error implements error.
func (e *StartError) Error() string {
	return fmt.Sprintf("proc: start %q: %v", e.Path, e.Err)
}

// Unwrap returns both the kind and the cause.
func (e *StartError) Unwrap() []error { return []error{ErrStart, e.Err} }
