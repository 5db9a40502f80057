package children

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/pabloagent/pablo/clock"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/internal/ids"
	"github.com/pabloagent/pablo/internal/textx"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/ledger/outcome"
)

// Tree is the runtime's [Supervisor] of one root's children. Every
// capacity check and reservation happens under one lock, all or nothing;
// the lock is never held across I/O or a call of the Runner, the remote
// runner or the verifier. Each reservation (an active slot, a queue place
// and its input bytes, retained result bytes) is released exactly once.
//
// A Tree owns one goroutine per child that holds a slot: it verifies the
// child's artifacts, starts it and waits for its Handle; [Tree.Close]
// joins them all.
type Tree struct {
	opts     Options
	capacity Capacity
	clock    Clock
	ids      IDSource
	ctx      context.Context
	cancel   context.CancelFunc

	// hold, when set (by this package's tests), is told how long each
	// critical section held the lock.
	hold func(time.Duration)

	mu       sync.Mutex
	lockedAt time.Time
	closed   bool
	children map[string]*child
	results  map[string]*child // result ID → its child
	queue    []*child          // FIFO of queued children
	total    int               // admitted, settled included
	active   int               // children holding a slot
	queued   int64             // input bytes of the queued children
	retained int64             // retained result bytes
	workers  int               // child goroutines not yet returned
	starting []*child          // given a slot, their goroutine started at unlock
	changed  chan struct{}     // closed and replaced on every settlement
	joined   chan struct{}     // closed once closed and workers == 0
}

// child is one admitted child, guarded by Tree.mu.
type child struct {
	id     string
	kind   Kind
	spec   Spec       // a local child's
	remote RemoteSpec // a remote child's
	bytes  int64      // input bytes, charged while queued

	state   State
	stop    bool // a stop was asked before the handle existed
	handle  Handle
	ctx     context.Context // the child's, from startLocked
	cancel  context.CancelFunc
	settled chan struct{}

	result        Result
	resultID      string
	outputBytes   int
	outputOmitted string
	retained      bool
}

// Load is a Tree's current use of its capacity.
type Load struct {
	Total            int   `json:"total"`
	Active           int   `json:"active"`
	Queued           int   `json:"queued"`
	QueuedInputBytes int64 `json:"queued_input_bytes"`
	RetainedBytes    int64 `json:"retained_bytes"`
}

var _ Supervisor = (*Tree)(nil)

// New returns the supervisor of one root's children. It fails when
// ParentID or Runner is missing or when Capacity raises or negates a fixed
// ceiling.
func New(opts Options) (*Tree, error) {
	if opts.ParentID == "" {
		return nil, errors.New("children: Options.ParentID is required (the root's agent ID)")
	}
	if opts.Runner == nil {
		return nil, errors.New("children: Options.Runner is required")
	}
	c, err := resolveCapacity(opts.Capacity)
	if err != nil {
		return nil, err
	}
	t := &Tree{opts: opts, capacity: c, clock: opts.Clock, ids: opts.IDs,
		children: map[string]*child{}, results: map[string]*child{},
		changed: make(chan struct{}), joined: make(chan struct{})}
	if t.clock == nil {
		t.clock = clock.System{}
	}
	if t.ids == nil {
		t.ids = ids.Random{}
	}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	return t, nil
}

// resolveCapacity applies the fixed ceilings to a host's lowering.
func resolveCapacity(c Capacity) (Capacity, error) {
	var errs []error
	lower := func(field string, v *int64, max int64) {
		switch {
		case *v < 0:
			errs = append(errs, fmt.Errorf("children: Capacity.%s is negative (%d): use 0 for the fixed ceiling %d or a value below it", field, *v, max))
		case *v > max:
			errs = append(errs, fmt.Errorf("children: Capacity.%s = %d raises the fixed ceiling %d: a host may only lower it", field, *v, max))
		case *v == 0:
			*v = max
		}
	}
	lowerInt := func(field string, v *int, max int) {
		n := int64(*v)
		lower(field, &n, int64(max))
		*v = int(n)
	}
	lowerInt("Active", &c.Active, MaxActive)
	lowerInt("Total", &c.Total, MaxTotal)
	lowerInt("Queued", &c.Queued, MaxQueued)
	lower("InputBytes", &c.InputBytes, MaxInputBytes)
	lower("QueuedInputBytes", &c.QueuedInputBytes, MaxQueuedInputBytes)
	lower("ResultBytes", &c.ResultBytes, MaxResultBytes)
	lower("RetainedBytes", &c.RetainedBytes, MaxRetainedBytes)
	lowerInt("WaitHandles", &c.WaitHandles, MaxWaitHandles)
	wt := int64(c.WaitTimeout)
	lower("WaitTimeout", &wt, int64(MaxWaitTimeout))
	c.WaitTimeout = time.Duration(wt)
	lower("ChildContextBytes", &c.ChildContextBytes, MaxChildContextBytes)
	return c, errors.Join(errs...)
}

// Capacity returns the ceilings in force: the fixed ones as the host
// lowered them.
func (t *Tree) Capacity() Capacity { return t.capacity }

// Parent returns the parent's scope, what every spawn narrows.
func (t *Tree) Parent() Scope { return t.opts.Parent }

// Remotes returns the configured remote names; none without a remote
// runner.
func (t *Tree) Remotes() []string {
	if t.opts.Remote == nil {
		return nil
	}
	return t.opts.Remote.Remotes()
}

func (t *Tree) lock() {
	t.mu.Lock()
	if t.hold != nil {
		t.lockedAt = time.Now()
	}
}

// unlock ends a critical section and then starts the goroutines of the
// children it gave a slot (startLocked), so no goroutine is created under
// the lock.
func (t *Tree) unlock() {
	if t.hold != nil {
		t.hold(time.Since(t.lockedAt))
	}
	start := t.starting
	t.starting = nil
	t.mu.Unlock()
	for _, c := range start {
		go t.launch(c, c.ctx)
	}
}

// Load returns the Tree's current use of its capacity.
func (t *Tree) Load() Load {
	t.lock()
	defer t.unlock()
	return Load{Total: t.total, Active: t.active, Queued: len(t.queue), QueuedInputBytes: t.queued, RetainedBytes: t.retained}
}

// pastDeadline reports whether the root's deadline has passed.
func (t *Tree) pastDeadline() bool {
	return !t.opts.Deadline.IsZero() && !t.clock.Now().Before(t.opts.Deadline)
}

// admit reserves capacity for c, all or nothing: a slot when one is free
// and nobody queues ahead, else a queue place and its input bytes. It
// returns whether c starts now. The caller holds the lock.
func (t *Tree) admitLocked(c *child) (bool, error) {
	switch {
	case t.closed:
		return false, errorf(CodeAdmission, "", "the root task is finishing: no child is admitted after it was cancelled or finished")
	case t.pastDeadline():
		return false, errorf(CodeAdmission, "", "the root deadline has passed")
	case t.total >= t.capacity.Total:
		return false, errorf(CodeAdmission, "", "the root has admitted its %d children (settled ones count): no more can be spawned", t.capacity.Total)
	}
	if t.active < t.capacity.Active && len(t.queue) == 0 {
		t.total++
		t.active++
		t.workers++
		c.state = StateStarting
		return true, nil
	}
	switch {
	case len(t.queue) >= t.capacity.Queued:
		return false, errorf(CodeAdmission, "", "%d children are active and %d queued, the most the root allows: wait for one to settle", t.active, len(t.queue))
	case c.bytes > t.capacity.QueuedInputBytes-t.queued:
		return false, errorf(CodeAdmission, "request", "the queued children's input would exceed %d bytes: wait for one to start", t.capacity.QueuedInputBytes)
	}
	t.total++
	t.queued += c.bytes
	t.queue = append(t.queue, c)
	c.state = StateQueued
	return false, nil
}

// register records an admitted child. The caller holds the lock.
func (t *Tree) registerLocked(c *child) {
	c.settled = make(chan struct{})
	t.children[c.id] = c
}

// launch runs one child that holds a slot, in its own goroutine: it
// verifies the artifact handoffs, starts the child, and settles it once
// its Handle is done.
func (t *Tree) launch(c *child, ctx context.Context) {
	defer t.exited()
	var h Handle
	var err error
	res, ok := t.beforeStart(ctx, c)
	if ok {
		if c.kind == KindRemote {
			h, err = t.opts.Remote.StartRemote(ctx, c.remote)
		} else {
			h, err = t.opts.Runner.Start(ctx, c.spec)
		}
		if err != nil {
			res, ok = failed(err), false
		}
	}
	if !ok {
		t.lock()
		t.settleLocked(c, res)
		t.unlock()
		return
	}
	t.lock()
	c.handle = h
	stop := c.stop
	if stop {
		c.state = StateStopping
	} else {
		c.state = StateRunning
	}
	// No broadcast: a waiter waits for settlement, and a start is none.
	t.unlock()
	if stop {
		h.Cancel()
	}
	<-h.Done()
	res = h.Result()
	// A completed child's result ID is drawn before the lock: drawing
	// random bytes is a system call, which nothing else should wait on.
	var resultID string
	if res.Outcome.Status == outcome.Completed {
		resultID = t.ids.NewID()
	}
	t.lock()
	t.settleIDLocked(c, res, resultID)
	t.unlock()
}

// beforeStart is what runs before a child starts: it settles a child that
// was stopped, whose tree closed or whose root deadline passed, and one
// whose artifact handoff is stale, all without a model call.
func (t *Tree) beforeStart(ctx context.Context, c *child) (Result, bool) {
	if ctx.Err() != nil {
		return cancelledResult(), false
	}
	if t.pastDeadline() {
		return Result{Outcome: event.Outcome{Status: outcome.TimedOut}}, false
	}
	for _, h := range c.spec.Handoffs {
		if h.Artifact == nil {
			continue
		}
		if t.opts.Verifier == nil {
			return refused(errorf(CodeHandoffRefused, "request.handoffs", "no artifact verifier is configured")), false
		}
		if err := t.opts.Verifier.VerifyArtifact(ctx, c.spec, *h.Artifact); err != nil {
			var e *Error
			if !errors.As(err, &e) {
				e = &Error{Code: CodeStaleArtifact, Field: "request.handoffs", Reason: err.Error(), Err: err}
			}
			return refused(e), false
		}
	}
	if ctx.Err() != nil {
		return cancelledResult(), false
	}
	return Result{}, true
}

func cancelledResult() Result { return Result{Outcome: event.Outcome{Status: outcome.Cancelled}} }

// refused is the result of a child that never started because a check
// before its start refused it: failed, child_admission, with the refusal.
func refused(e *Error) Result {
	return Result{Outcome: event.Outcome{Status: outcome.Failed, Code: outcome.FailChildAdmission,
		Delivery: outcome.NotSent, Reason: e.Error()}}
}

// failed is the result of a child whose Runner did not start it.
func failed(err error) Result {
	var e *Error
	if errors.As(err, &e) {
		return refused(e)
	}
	if errors.Is(err, context.Canceled) {
		return cancelledResult()
	}
	return Result{Outcome: event.Outcome{Status: outcome.Failed, Code: outcome.FailChildAdmission,
		Delivery: outcome.NotSent, Reason: "the child did not start: " + shortReason(err)}}
}

func shortReason(err error) string {
	s := err.Error()
	if len(s) > 512 {
		s = s[:512]
	}
	return s
}

// exited is a child goroutine's last act.
func (t *Tree) exited() {
	t.lock()
	t.workers--
	if t.closed && t.workers == 0 {
		close(t.joined)
	}
	t.unlock()
}

// settleLocked settles c with res, exactly once: it releases c's slot or
// queue place, retains its result within the bounds, gives a completed
// child its result ID, and starts queued children into free slots. The
// caller holds the lock.
func (t *Tree) settleLocked(c *child, res Result) { t.settleIDLocked(c, res, "") }

// settleIDLocked is settleLocked with the result ID a completed child
// gets, when the caller drew it ("" draws one).
func (t *Tree) settleIDLocked(c *child, res Result, resultID string) {
	if c.state == StateSettled {
		return
	}
	switch c.state {
	case StateQueued:
		t.queued -= c.bytes
		t.queue = slices.DeleteFunc(t.queue, func(q *child) bool { return q == c })
	default:
		t.active--
	}
	if c.cancel != nil {
		c.cancel()
	}
	c.state = StateSettled
	if res.Output == "" && res.Outcome.Output != nil {
		res.Output = *res.Outcome.Output
	}
	c.result = res
	c.handle = nil
	c.outputBytes = len(res.Output) + len(res.StructuredOutput)
	if res.Outcome.Status == outcome.Completed {
		if resultID == "" {
			resultID = t.ids.NewID()
		}
		c.resultID = resultID
		t.results[c.resultID] = c
		switch n := int64(c.outputBytes); {
		case n > t.capacity.ResultBytes:
			c.outputOmitted = "result_bytes"
		case n > t.capacity.RetainedBytes-t.retained:
			c.outputOmitted = "retained_bytes"
		default:
			t.retained += n
			c.retained = true
		}
	}
	if !c.retained {
		c.result.Output, c.result.StructuredOutput = "", nil
	}
	c.result.Outcome.Output = nil
	close(c.settled)
	t.broadcastLocked()
	t.fillLocked()
}

// fillLocked starts queued children, in FIFO order, while slots are free.
func (t *Tree) fillLocked() {
	for !t.closed && len(t.queue) > 0 && t.active < t.capacity.Active {
		c := t.queue[0]
		t.queue = t.queue[1:]
		t.queued -= c.bytes
		t.active++
		t.workers++
		c.state = StateStarting
		t.startLocked(c)
	}
}

// startLocked gives c its context and queues its goroutine for the end of
// the critical section. The caller holds the lock and has reserved c's
// slot.
func (t *Tree) startLocked(c *child) {
	c.ctx, c.cancel = context.WithCancel(t.ctx)
	if c.stop {
		c.cancel()
	}
	t.starting = append(t.starting, c)
}

func (t *Tree) broadcastLocked() {
	close(t.changed)
	t.changed = make(chan struct{})
}

// snapshotLocked is c's bounded receipt. The caller holds the lock.
func (t *Tree) snapshotLocked(c *child) Snapshot {
	s := Snapshot{AgentID: c.id, ParentAgentID: t.opts.ParentID, Kind: c.kind, Depth: 1, State: c.state}
	if c.state != StateSettled {
		return s
	}
	o := c.result.Outcome
	a := c.result.Accounting
	s.Outcome, s.Accounting = &o, &a
	s.ResultID = c.resultID
	s.OutputBytes = c.outputBytes
	s.OutputOmitted = c.outputOmitted
	if c.retained {
		out := c.result.Output
		s.Output = &out
		s.StructuredOutput = c.result.StructuredOutput
	}
	s.Validation, s.Repair = c.result.Validation, c.result.Repair
	s.Artifact = c.result.Artifact
	s.TraceID = c.result.TraceID
	return s
}

// lookupLocked returns the child with id or an unknown_agent error.
func (t *Tree) lookupLocked(field, id string) (*child, error) {
	c, ok := t.children[id]
	if !ok {
		if id == t.opts.ParentID {
			return nil, errorf(CodeUnknownAgent, field, "%q is the parent, not one of its children", id)
		}
		return nil, errorf(CodeUnknownAgent, field, "no child of this root has agent ID %q", shorten(id))
	}
	return c, nil
}

// Inspect returns a child's current snapshot.
func (t *Tree) Inspect(ctx context.Context, agentID string) (Snapshot, error) {
	t.lock()
	defer t.unlock()
	c, err := t.lookupLocked("agent_id", agentID)
	if err != nil {
		return Snapshot{}, err
	}
	return t.snapshotLocked(c), nil
}

// Stop ends one child: a queued child settles cancelled without running,
// a starting or running one is cancelled and Stop waits until it settled
// (or ctx ends, returning its snapshot then and ctx's error). A settled
// child's snapshot is returned as it is. No sibling is touched.
func (t *Tree) Stop(ctx context.Context, agentID string) (Snapshot, error) {
	t.lock()
	c, err := t.lookupLocked("agent_id", agentID)
	if err != nil {
		t.unlock()
		return Snapshot{}, err
	}
	h := t.stopLocked(c)
	done := c.settled
	t.unlock()
	if h != nil {
		h.Cancel()
	}
	select {
	case <-done:
	case <-ctx.Done():
		t.lock()
		defer t.unlock()
		return t.snapshotLocked(c), ctx.Err()
	}
	t.lock()
	defer t.unlock()
	return t.snapshotLocked(c), nil
}

// stopLocked asks c to stop and returns the handle to cancel, if any. The
// caller holds the lock.
func (t *Tree) stopLocked(c *child) Handle {
	switch c.state {
	case StateQueued:
		t.settleLocked(c, cancelledResult())
	case StateStarting:
		c.stop = true
		if c.cancel != nil {
			c.cancel()
		}
	case StateRunning:
		c.stop = true
		c.state = StateStopping
		c.cancel()
		t.broadcastLocked()
		return c.handle
	}
	return nil
}

// Close ends the root's supervision: it stops admission, settles every
// queued child cancelled without running it, cancels the active ones and
// returns once every child goroutine is joined (each after its Handle's
// Done), or with ctx's error when ctx ends first (call Close again to
// join). Close may be called more than once.
func (t *Tree) Close(ctx context.Context) error {
	t.lock()
	if !t.closed {
		t.closed = true
		for len(t.queue) > 0 {
			t.settleLocked(t.queue[0], cancelledResult())
		}
		var handles []Handle
		for _, c := range t.children {
			if h := t.stopLocked(c); h != nil {
				handles = append(handles, h)
			}
		}
		if t.workers == 0 {
			close(t.joined)
		}
		t.unlock()
		t.cancel()
		for _, h := range handles {
			h.Cancel()
		}
	} else {
		t.unlock()
	}
	select {
	case <-t.joined:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("children: %d children not yet joined: %w", t.Load().Active, ctx.Err())
	}
}

// Joined is closed once the tree is closed and every child goroutine
// returned.
func (t *Tree) Joined() <-chan struct{} { return t.joined }

func shorten(s string) string { return textx.Shorten(s, 64) }

// limitMillis returns d as a ledger ceiling in milliseconds.
func limitMillis(d time.Duration) ledger.Limit { return ledger.Max(uint64(d / time.Millisecond)) }
