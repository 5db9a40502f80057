package engine

import (
	"context"
	"encoding/json"
	"iter"
	"sync"
	"sync/atomic"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/internal/eventlog"
	"github.com/pabloagent/pablo/internal/output"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/mcp"
	"github.com/pabloagent/pablo/model"
)

// Request is one root task as the engine runs it: the root's TaskRequest,
// with the session's bookkeeping.
type Request struct {
	Input      string
	History    []model.Message
	SessionID  string
	Workspace  string
	MCPServers []string
	// Roles are the roles the host gives the task: its authority is
	// bound to them ([authority.RoleBinder]) at admission.
	Roles []string
	// Kind is the task's kind: only the Skills for it are activated and
	// readable (skills.Bundle.ForTaskKind); empty keeps every Skill.
	Kind string
	// Approver answers the task's approval requests; nil asks no one.
	Approver Approver
	// Turn is the prompt's number in its session.
	Turn uint64
	// Settled, when set, is called once the task settled, before Done
	// closes.
	Settled func(*Result)
}

// Result is a settled admitted task: the root's TaskObject without the
// pre-admission error, which the engine never makes.
type Result struct {
	SchemaVersion    string
	RunID            *string
	SessionID        *string
	TraceID          *string
	Outcome          *event.Outcome
	Accounting       *ledger.Accounting
	OutputValidation json.RawMessage
	OutputRepair     *output.Repair
	SnapshotDigest   string
	// Resume says how a resumed task continued; nil for one that ran on
	// one host.
	Resume *event.Resume
	// Transcript is what the task added to its conversation, as the
	// messages they were: its input, then the root's turns (assistant
	// messages and their tool calls, the tool results, output feedback,
	// a compaction's summary). A session's later prompts carry it. Nil
	// when the task ended before its input joined its history, and when
	// its request has no Settled, the transcript's one reader: it copies
	// the task's whole history, which a long task pays for at its end.
	Transcript []model.Message
}

// TaskInfo tells catalogs and hosts which task they serve, and gives them
// the part of its ledger a catalog records in (the root's TaskInfo).
type TaskInfo struct {
	TaskID     string
	AgentID    string
	Ledger     ledger.Recorder
	MCPServers []string
	Elicit     mcp.ElicitFunc
	// Egress records the decisions of the egress proxies of the task's
	// stdio MCP servers (see EgressFunc).
	Egress func(capability string, d authority.EgressDecision) error
	// Roles are the roles the task holds (Request.Roles).
	Roles []string
	// Kind is the task's kind (Request.Kind); empty when it names none.
	Kind string
}

// Task is one running root task.
type Task struct {
	rt   *Runtime
	root ledger.Ledger
	req  Request
	// own is the task's own context, and stop cancels it with a cause:
	// nil from Cancel, the shutdown's from Runtime.Shutdown.
	own  context.Context
	stop context.CancelCauseFunc

	mu      sync.Mutex
	cond    *sync.Cond
	log     *eventlog.Log // the events, for readers
	waiters atomic.Int32  // readers waiting for an event
	done    bool
	result  *Result

	finished chan struct{}

	// procs holds a permit for each process the task's tree owns at once
	// (children.MaxOwnedProcesses), when children are enabled: one per
	// running stdio MCP server, taken when the root opens its catalogs,
	// and one per running shell command.
	procs chan struct{}

	// historyWalks counts the model requests measured by walking their
	// messages; the loop's own never are. Written by the task's goroutine,
	// read after it finished.
	historyWalks int

	// grants are the task's "allow for this task" answers, its root's and
	// its children's.
	grants approvalGrants

	// resume is what a resumed task continues from; nil for a new one.
	resume *resumeState

	// auth is the root's authority: the runtime's, bound to the task's
	// roles when it has any (then bound is true).
	auth  authority.Authority
	bound bool
}

// ID returns the task ID (the run ID of its events).
func (t *Task) ID() string { return t.root.ID() }

// Ledger returns the task's root ledger.
func (t *Task) Ledger() ledger.Ledger { return t.root }

// Cancel asks the task to stop. It settles as cancelled after everything it
// started has been joined.
func (t *Task) Cancel() { t.stop(nil) }

// Wait blocks until the task settles and returns its task object.
func (t *Task) Wait() *Result {
	<-t.finished
	return t.result
}

// Done is closed when the task has settled.
func (t *Task) Done() <-chan struct{} { return t.finished }

// Events yields every event of the task in order, from the first, and ends
// after the terminal event. Several readers may iterate at once; each sees
// every event.
func (t *Task) Events() iter.Seq2[event.Event, error] {
	return func(yield func(event.Event, error) bool) {
		log := t.log.Reader()
		defer log.Close()
		for i := 0; ; i++ {
			t.mu.Lock()
			if i >= log.Len() && !t.done {
				// Announce the wait before looking again, so an appender
				// that publishes after this look sees a waiter to wake.
				t.waiters.Add(1)
				for i >= log.Len() && !t.done {
					t.cond.Wait()
				}
				t.waiters.Add(-1)
			}
			if i >= log.Len() {
				t.mu.Unlock()
				return
			}
			ev := t.log.At(i)
			t.mu.Unlock()
			if !yield(ev, nil) {
				return
			}
		}
	}
}

// wake wakes the readers waiting for an event, if any: after an append,
// once the log's lock is released, so that the lock every agent of the
// tree appends under is not held over a wake-up.
func (t *Task) wake() {
	if t.waiters.Load() > 0 {
		t.mu.Lock()
		//lint:ignore SA2001 the empty critical section orders this wake-up after the waiter's Wait
		t.mu.Unlock()
		t.cond.Broadcast()
	}
}

func (t *Task) settle(obj *Result) {
	t.mu.Lock()
	t.result = obj
	t.done = true
	t.mu.Unlock()
	t.cond.Broadcast()
}

// processPermit takes a permit for a call of tool that runs a process of
// the tree's (shell.run), and returns its release; ok is false when every
// permit is held. Without children, or for any other tool, it passes.
func (t *Task) processPermit(tool authority.ID) (release func(), ok bool) {
	if t.procs == nil || tool != authority.ShellRun {
		return func() {}, true
	}
	select {
	case t.procs <- struct{}{}:
		return func() { <-t.procs }, true
	default:
		return nil, false
	}
}
