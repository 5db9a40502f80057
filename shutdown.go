package pablo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pabloagent/pablo/internal/engine"
)

// ErrShutdown is the kind of the error [Runtime.Start], [Runtime.StartTask]
// and a session's Prompt return once the runtime's Shutdown (or Close) has
// begun: errors.Is(err, pablo.ErrShutdown). Build a new runtime to run more
// tasks.
var ErrShutdown = errors.New("pablo: the runtime is shut down")

// DefaultShutdownTimeout is how long [Runtime.Close] lets the runtime's
// tasks settle after cancelling them. It covers the longest cleanup a
// cancelled task performs: a process group's 2 s, a remote child's 2 s
// cancel exchange, an MCP HTTP session's 5 s close.
const DefaultShutdownTimeout = 10 * time.Second

// ShutdownError is what [Runtime.Shutdown] returns when its context ended
// before every task was joined: the tasks still running, and what the
// runtime keeps open for them. errors.Is(err, context.DeadlineExceeded)
// (or the context's other cause) holds.
type ShutdownError struct {
	// Running are the IDs of the root tasks not yet settled, sorted.
	Running []string
	// Err is the context's cause.
	Err error
}

func (e *ShutdownError) Error() string {
	return fmt.Sprintf("pablo: shutdown: %d task(s) still running (%s): %v; the runtime's workspace and connections stay open until they settle, and a later Shutdown waits for them",
		len(e.Running), strings.Join(e.Running, ", "), e.Err)
}

func (e *ShutdownError) Unwrap() error { return e.Err }

// Shutdown stops the runtime: it admits no more tasks (Start, StartTask
// and a session's prompt fail with [ErrShutdown]), cancels every running
// task with a cause that names the shutdown (each settles cancelled, its
// outcome's reason and the ledger's terminal record say so), and waits
// until every task has settled: its children (local and remote) and its
// processes joined, its MCP sessions closed, its terminal record written.
// Then it releases what the runtime itself opened (a deployment's
// workspace, the idle connections of its A2A client). It never closes
// what the host passed in (RuntimeOptions.Catalogs, Store, Model).
//
// If ctx ends first, Shutdown returns a [*ShutdownError] naming the tasks
// still running and releases nothing: the workspace is what their tool
// calls read and write, so pulling it would turn a late cancellation into
// io errors. The last of those tasks to settle releases the runtime, and a
// later Shutdown call waits for that.
//
// Shutdown is idempotent and safe for concurrent use: every call waits
// for the same end and returns the same release error. It must not be
// called from a task's own goroutine (its sink, approver or a catalog's
// call), which it would wait for until ctx ends.
func (r *Runtime) Shutdown(ctx context.Context) error {
	err := r.e.Shutdown(ctx)
	var se *engine.ShutdownError
	if errors.As(err, &se) {
		return &ShutdownError{Running: se.Running, Err: se.Err}
	}
	return err
}

// Close is Shutdown with a deadline of [DefaultShutdownTimeout]: it
// cancels the running tasks, joins them and releases the runtime.
func (r *Runtime) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), DefaultShutdownTimeout)
	defer cancel()
	return r.Shutdown(ctx)
}
