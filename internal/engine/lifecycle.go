package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// ErrShutdown is the kind of the error Start returns once the runtime's
// Shutdown has begun (the root's pablo.ErrShutdown).
var ErrShutdown = errors.New("pablo: the runtime is shut down")

// ShutdownReason is the reason on the outcome of a task the runtime's
// shutdown cancelled: its terminal event, its task object and the ledger's
// terminal record say why it stopped.
const ShutdownReason = "runtime_shutdown: the host shut the runtime down (Runtime.Shutdown) before the task settled"

// errShutdownCause is the cause the runtime's shutdown cancels each task
// with; the task's outcome reads it back (Task.cancelReason).
var errShutdownCause = fmt.Errorf("%w: cancelled by Runtime.Shutdown", ErrShutdown)

// ShutdownError is what [Runtime.Shutdown] returns when its context ended
// before every task was joined (the root's pablo.ShutdownError).
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

// lifecycle is a runtime's admission and shutdown state.
type lifecycle struct {
	mu      sync.Mutex
	closing bool
	// active counts the StartTask calls past admission and the tasks
	// not yet settled; tasks holds the started ones, to cancel.
	active int
	tasks  map[*Task]struct{}
	// idle is made when the shutdown begins and closed once nothing is
	// active and the runtime's resources are released; releaseErr is
	// set before it closes.
	idle       chan struct{}
	releaseErr error
}

// admit counts a task in, unless the shutdown began.
func (r *Runtime) admit() error {
	r.life.mu.Lock()
	defer r.life.mu.Unlock()
	if r.life.closing {
		return fmt.Errorf("%w: Start after Shutdown or Close; build a new runtime to run more tasks", ErrShutdown)
	}
	r.life.active++
	return nil
}

// track records t as running; it reports whether the shutdown began
// since t was admitted, so the caller cancels it as it starts.
func (r *Runtime) track(t *Task) (closing bool) {
	r.life.mu.Lock()
	defer r.life.mu.Unlock()
	if r.life.tasks == nil {
		r.life.tasks = map[*Task]struct{}{}
	}
	r.life.tasks[t] = struct{}{}
	return r.life.closing
}

// untrack counts out an admission (t nil: it started no task) or a task
// that settled. The last one out after the shutdown began releases the
// runtime.
func (r *Runtime) untrack(t *Task) {
	r.life.mu.Lock()
	if t != nil {
		delete(r.life.tasks, t)
	}
	r.life.active--
	last := r.life.closing && r.life.active == 0
	r.life.mu.Unlock()
	if last {
		r.release()
	}
}

// release closes what the runtime opened (its workspace, its remote
// client's idle connections) once, when nothing runs any more.
func (r *Runtime) release() {
	var errs []error
	for _, c := range r.opts.Cleanup {
		errs = append(errs, c())
	}
	r.life.releaseErr = errors.Join(errs...)
	close(r.life.idle)
}

// Shutdown stops the runtime: it admits no more tasks (Start, StartTask
// and a session's prompt fail with [ErrShutdown]), cancels every running
// task with a cause that names the shutdown (each settles cancelled, its
// outcome's reason and the ledger's terminal record say so), and waits
// until every task has settled: its children (local and remote) and its
// processes joined, its MCP sessions closed, its terminal record written.
// Then it releases what the runtime itself opened (a deployment's
// workspace, the idle connections of its A2A client). It never closes
// what the host passed in (Options.Catalogs, Store, Model).
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
	r.life.mu.Lock()
	first := !r.life.closing
	if first {
		r.life.closing = true
		r.life.idle = make(chan struct{})
	}
	running := make([]*Task, 0, len(r.life.tasks))
	for t := range r.life.tasks {
		running = append(running, t)
	}
	idle, releaseNow := r.life.idle, first && r.life.active == 0
	r.life.mu.Unlock()
	if releaseNow {
		r.release()
	}
	for _, t := range running {
		t.stop(errShutdownCause)
	}
	select {
	case <-idle:
		return r.life.releaseErr
	case <-ctx.Done():
	}
	select {
	case <-idle: // both ready: the work is done
		return r.life.releaseErr
	default:
	}
	r.life.mu.Lock()
	ids := make([]string, 0, len(r.life.tasks))
	for t := range r.life.tasks {
		ids = append(ids, t.ID())
	}
	r.life.mu.Unlock()
	slices.Sort(ids)
	return &ShutdownError{Running: ids, Err: context.Cause(ctx)}
}

// cancelReason is the reason on a cancelled outcome of t's: the shutdown's
// when the runtime's shutdown cancelled the task first, else none.
func (t *Task) cancelReason() string {
	if t.own != nil && errors.Is(context.Cause(t.own), ErrShutdown) {
		return ShutdownReason
	}
	return ""
}
