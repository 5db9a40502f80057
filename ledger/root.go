package ledger

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/pabloagent/pablo/ledger/outcome"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/clock"
	"github.com/pabloagent/pablo/internal/ids"
	"github.com/pabloagent/pablo/internal/idset"
)

// Recorder is the part of a task's ledger a tool catalog is given (the
// runtime's TaskInfo.Ledger, an MCP catalog's Options.Ledger): it adds the
// authority decisions the catalog made (a discovered tool admitted or kept
// out, a Skill's activation) to the task's authorization scope.
type Recorder interface {
	// RecordDecision adds an authority decision to the task's scope.
	RecordDecision(ctx context.Context, agentID, capability string, d authority.Decision) error
}

// Ledger orders, charges, records and recovers the work of one root task:
// what the runtime uses of it. [*Root] is the implementation; a host may
// wrap it (to mirror records elsewhere, add metrics, ...) and give the
// runtime the wrapper (pablo.RuntimeOptions.NewLedger).
//
// Every method names the acting agent. Admissions (ReserveModelCall,
// AdmitToolCall) check and reserve all the ceilings they touch at once, for
// the agent and every ancestor, or take nothing and return a
// [*LimitError]. Dispatch, SettleToolCall and Finish are barriers: when
// they return, every record accepted before them is durable. Every other
// record is durable at the next barrier (see the package doc).
type Ledger interface {
	Recorder
	// ID returns the task ID, the RootID of every event.
	ID() string
	// RootAgentID returns the root agent's ID.
	RootAgentID() string
	// Deadline returns the earliest deadline that binds agentID.
	Deadline(agentID string) (time.Time, bool)
	// StartAgent admits a child agent under spec.ParentID (a supervised
	// child, local or remote) and returns its ID. Its ceilings are its own
	// and every ancestor's.
	StartAgent(ctx context.Context, spec AgentSpec) (string, error)
	// Append adds an event of type typ with the engine's JSON payload.
	Append(ctx context.Context, agentID, typ string, payload json.RawMessage) (Event, error)
	// ReserveModelCall admits a model call and returns its call ID.
	ReserveModelCall(ctx context.Context, agentID string, req ModelCall) (string, error)
	// AdmitToolCall records a tool call with its authority decision and, when
	// allowed, reserves it.
	AdmitToolCall(ctx context.Context, agentID string, req ToolCall) error
	// Dispatch records that an admitted call is about to leave the process.
	Dispatch(ctx context.Context, agentID, callID string) error
	// SettleModelCall settles a model call exactly once.
	SettleModelCall(ctx context.Context, agentID, callID string, s ModelSettlement) error
	// SettleToolCall settles a tool call exactly once.
	SettleToolCall(ctx context.Context, agentID, callID string, s ToolSettlement) error
	// PutResult stores v as canonical JSON and returns its reference.
	PutResult(ctx context.Context, v any) (ResultRef, error)
	// RecordProcessGroup records a process group the agent's tools started,
	// before it is given any work.
	RecordProcessGroup(ctx context.Context, agentID string, g ProcessGroupRecord) error
	// RecordSnapshot records an agent's dispatch snapshot (canonical JSON
	// from [EncodeSnapshot]) and its digest, before its first event.
	RecordSnapshot(ctx context.Context, agentID string, snapshot []byte, digest ResultRef) error
	// Accounting snapshots an agent's counters (its descendants included).
	Accounting(agentID string) (Accounting, error)
	// Finish appends the agent's terminal event and records its outcome.
	Finish(ctx context.Context, agentID string, f Finish) (Event, error)
	// Flush is a barrier: when it returns, every record accepted before it
	// is durable. The runtime calls it where an effect or a wait outlives
	// the process's say (before an approval waits for a person).
	Flush(ctx context.Context) error
}

// IDSource makes the IDs a ledger assigns (tasks, agents, model calls):
// each call returns a fresh, unique string, such as a UUIDv4.
type IDSource interface {
	NewID() string
}

// Options configure [NewRoot].
type Options struct {
	// Store receives the records. Nil means the root keeps only what can be
	// read back through it (accounting, deadlines and results, in a private
	// [MemoryStore]) and writes no record log nobody could read: a host that
	// wants the records, tests included, passes a store.
	Store Store
	// TaskID identifies the task (the root ID of every event); RootAgentID the
	// root agent. Empty means a fresh ID from IDs.
	TaskID      string
	RootAgentID string
	// Limits are the root's ceilings: they bound the whole tree. A field
	// that is not set is unlimited.
	Limits Limits
	// InputDigest names the input version, e.g. "sha256:<hex>".
	InputDigest string
	// InputBytes is the size of the task input, checked against
	// Limits.InputBytes.
	InputBytes uint64
	// Fingerprint is the deployment fingerprint the authority came from.
	Fingerprint string
	// Session, when set, links the task to its session in the task record.
	Session *SessionLink
	// Input, when set, is the task's input as it may be kept (masked):
	// stored as a result (a JSON string) and referenced from the task
	// record, so the task can be resumed from the store ([Resume]).
	Input *string
	// Clock is the clock records and deadlines read; nil means the system
	// clock, read as the task's start on the wall clock plus the monotonic
	// time since, so times never go backwards within a task. Times are
	// stored in UTC with microsecond precision. (It replaced a Now func
	// field: one clock idiom across the module.)
	Clock Clock
	// IDs makes task, agent and model-call IDs; nil means random UUIDv4
	// strings.
	IDs IDSource
	// TrustedPayloads skips the JSON check of event payloads in Append and
	// Finish: the caller builds every payload itself as valid JSON, as
	// Pablo's engine does. Stores that encode records (the bolt store) check
	// each payload again when they write it, so a broken payload still never
	// reaches disk; the memory store keeps what it is given.
	TrustedPayloads bool
	// FlushEvery is how many records may wait in memory before an Append
	// flushes them itself. Zero means 256, or 32 for a [MemoryStore].
	FlushEvery int
}

// AgentSpec describes a child for [Root.StartAgent].
type AgentSpec struct {
	ID       string // empty means a fresh ID
	ParentID string // required
	Kind     string // e.g. "local_acp_temporary", "remote_a2a"; empty means "child"
	// Limits are the child's own ceilings, in addition to every ancestor's.
	// A finite field must be at most the parent's; a field that is not set
	// (or unlimited) inherits the parent's value.
	Limits      Limits
	InputDigest string
	InputBytes  uint64 // checked against the input_bytes ceilings
}

// Finish is the terminal record of an agent.
type Finish struct {
	Outcome Outcome
	// EventType is the terminal event's type; empty means "run.finished".
	EventType string
	Payload   json.RawMessage
	// OutputBytes is the final output's size, checked against output_bytes
	// when the outcome is completed.
	OutputBytes uint64
}

// Clock is the time a ledger reads; [clock.System] serves it, and tests pass
// a clock they move by hand. It is the Clock of children, acp, a2a and
// ledger/postgres.
type Clock = clock.Clock

// Timer is a pending [Clock.AfterFunc] call; *time.Timer is one.
type Timer = clock.Timer

// Root is the ledger of one root task: the concrete [Ledger].
type Root struct {
	id    string
	store Store
	// storeCtx carries the values of NewRoot's context without its
	// cancellation: durable writes complete even when the task is cancelled.
	storeCtx   context.Context
	now        func() time.Time // nil: start plus time.Since(start)
	start      time.Time        // the task's start, with its monotonic reading
	startMicro int64            // start in Unix microseconds
	ids        ids.Source
	flushEvery int
	trusted    bool // payloads are not re-checked
	// resultsOnly: the store is private, so only results, which Result
	// reads back, are written to it.
	resultsOnly bool
	root        *agent

	flushMu sync.Mutex // orders flushes; guards spare
	spare   []Record

	mu      sync.Mutex
	pending []Record
	n       uint64
	rootSeq uint64
	agents  map[string]*agent
	last    *agent    // the agent of the latest call: most calls repeat it
	results idset.Set // the refs of the results put
	err     error     // sticky store failure
	// volatileN is the highest N written volatile (see RecordProcessGroup).
	volatileN uint64
}

type agent struct {
	id, parentID string
	parent       *agent
	limits       Limits
	deadline     time.Time // zero: none
	seq          uint64
	steps        uint64
	c            counters
	calls        map[string]*call // the calls not yet settled
	// settled holds the IDs of the settled calls, tagged with their kind
	// (tagModel, tagTool): a settled call is only ever looked up to refuse it, and
	// the set, unlike a map of the calls, costs the collector nothing as
	// a long task fills it.
	settled      idset.Set
	settledOdd   map[string]CallKind // a settled call of a kind settled has no tag for
	free         []*call             // settled calls, for admit to reuse
	open         int                 // unsettled calls
	liveChildren int
	finished     bool
}

type call struct {
	kind     CallKind
	state    CallState
	reserved bool // holds a model_calls or tool_calls reservation
	tokenRes uint64
	costRes  uint64
	tokenBnd Limit
	costBnd  Limit
}

// NewRoot starts a root task: it records the task and its root agent (durable
// at the first barrier) and reserves the root's terminal event.
func NewRoot(ctx context.Context, opts Options) (*Root, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if opts.FlushEvery < 0 {
		return nil, &InvalidError{Field: "Options.FlushEvery", Reason: "must not be negative"}
	}
	opts.Limits = opts.Limits.orUnlimited()
	resultsOnly := opts.Store == nil
	if resultsOnly {
		opts.Store = NewMemoryStore()
	}
	if opts.IDs == nil {
		opts.IDs = ids.Random{}
	}
	if opts.FlushEvery == 0 {
		opts.FlushEvery = 256
		if _, ok := opts.Store.(*MemoryStore); ok {
			// Nothing to amortize but a lock: keep the batch, and the two
			// buffers that alternate for it, small.
			opts.FlushEvery = 32
		}
	}
	if opts.TaskID == "" {
		opts.TaskID = opts.IDs.NewID()
	}
	if opts.RootAgentID == "" {
		opts.RootAgentID = opts.IDs.NewID()
	}
	r := &Root{
		storeCtx:    context.WithoutCancel(ctx),
		id:          opts.TaskID,
		store:       opts.Store,
		now:         nowOf(opts.Clock),
		ids:         opts.IDs,
		flushEvery:  opts.FlushEvery,
		trusted:     opts.TrustedPayloads,
		resultsOnly: resultsOnly,
		agents:      map[string]*agent{},
	}
	if r.now == nil {
		r.start = time.Now()
		r.startMicro = r.start.UnixMicro()
	}
	now := r.clock()
	a := &agent{id: opts.RootAgentID, limits: opts.Limits, calls: map[string]*call{}}
	a.deadline = deadlineOf(now, opts.Limits.DurationMillis)
	if err := checkBytes(a, outcome.LimitInputBytes, opts.InputBytes); err != nil {
		return nil, err
	}
	if err := checkEvents(a, 1); err != nil {
		return nil, err
	}
	a.c.eventsRes = 1
	r.root = a
	r.agents[a.id] = a
	var input *ResultRecord
	if opts.Input != nil {
		data, err := canonicalOf(*opts.Input)
		if err != nil {
			return nil, err
		}
		input = &ResultRecord{ID: RefOf(data), Data: data}
	}
	tr := &TaskRecord{TaskID: r.id, RootAgentID: a.id, InputDigest: opts.InputDigest, Fingerprint: opts.Fingerprint, Limits: opts.Limits,
		Session: opts.Session}
	if input != nil {
		tr.Input = input.ID
	}
	r.record(Record{Kind: RecordTask, Time: now, Task: tr})
	r.record(Record{Kind: RecordAgent, Time: now, Agent: &AgentRecord{
		AgentID: a.id, Kind: "root", InputDigest: opts.InputDigest, Limits: opts.Limits,
	}})
	if input != nil {
		r.results.Add(string(input.ID), 0)
		r.record(Record{Kind: RecordResult, Time: now, Result: input})
	}
	// Not a barrier: the task's first records become durable with its first
	// dispatch, before anything of the task leaves the process.
	return r, nil
}

// ID returns the task ID, the RootID of every event.
func (r *Root) ID() string { return r.id }

// RootAgentID returns the root agent's ID.
func (r *Root) RootAgentID() string { return r.root.id }

// Deadline returns the earliest deadline that binds agentID (its own or an
// ancestor's), and false when none does.
func (r *Root) Deadline(agentID string) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	a := r.agents[agentID]
	var d time.Time
	for ; a != nil; a = a.parent {
		if !a.deadline.IsZero() && (d.IsZero() || a.deadline.Before(d)) {
			d = a.deadline
		}
	}
	return d, !d.IsZero()
}

func deadlineOf(start time.Time, ms Limit) time.Time {
	n, ok := ms.Value()
	if !ok {
		return time.Time{}
	}
	if n > uint64(1<<63-1)/uint64(time.Millisecond) {
		return time.Time{}
	}
	return start.Add(time.Duration(n) * time.Millisecond)
}

// nowOf is c's Now, or nil for no clock.
func nowOf(c Clock) func() time.Time {
	if c == nil {
		return nil
	}
	return c.Now
}

// instant is the time deadlines are checked against.
func (r *Root) instant() time.Time {
	if r.now != nil {
		return r.now()
	}
	return time.Now()
}

// micros is the time of a record in Unix microseconds: the host's clock,
// or the task's start on the wall clock plus the monotonic time since.
func (r *Root) micros() int64 {
	if r.now != nil {
		return r.now().UnixMicro()
	}
	return r.startMicro + int64(time.Since(r.start)/time.Microsecond)
}

// clock is the time of a record, in UTC with microsecond precision.
func (r *Root) clock() time.Time { return time.UnixMicro(r.micros()).UTC() }

// logs reports whether records other than results are written; when they
// are not, it numbers the record the caller would have written, so N stays
// the count of records either way. r.mu must be held.
func (r *Root) logs() bool {
	if r.resultsOnly {
		r.n++
		return false
	}
	return true
}

// record appends rec to the pending batch; r.mu must be held.
func (r *Root) record(rec Record) {
	r.n++
	if r.resultsOnly && rec.Kind != RecordResult {
		return
	}
	rec.N = r.n
	rec.TaskID = r.id
	r.pending = append(r.pending, rec)
}

// flush makes every pending record durable. Flushes are serialized, so when
// flush returns, every record accepted before it was called is durable. The
// store write is not cancelled with ctx: a record the ledger accepted is
// always written, so a cancelled task can still settle its calls.
func (r *Root) flush(ctx context.Context) error {
	r.flushMu.Lock()
	defer r.flushMu.Unlock()
	r.mu.Lock()
	if r.err != nil {
		err := r.err
		r.mu.Unlock()
		return err
	}
	batch := r.pending
	r.pending = r.spare[:0]
	r.mu.Unlock()
	if len(batch) == 0 {
		r.spare = batch
		return nil
	}
	err := r.store.Append(r.storeCtx, batch)
	clear(batch)
	r.spare = batch[:0]
	if err != nil {
		return r.storeFailed("append", err)
	}
	return nil
}

// Flush implements [Ledger]: it is a barrier.
func (r *Root) Flush(ctx context.Context) error { return r.flush(ctx) }

// unlockAccepted releases r.mu (which must be held) after a record was
// accepted without a barrier, and flushes when FlushEvery records wait, which
// bounds the memory they hold.
func (r *Root) unlockAccepted(ctx context.Context) error {
	full := len(r.pending) >= r.flushEvery
	r.mu.Unlock()
	if full {
		return r.flush(ctx)
	}
	return nil
}

// usable returns the live agent agentID; r.mu must be held.
func (r *Root) usable(agentID, op string) (*agent, error) {
	if r.err != nil {
		return nil, r.err
	}
	a := r.last
	if a == nil || a.id != agentID {
		if a = r.agents[agentID]; a == nil {
			return nil, &StateError{What: "agent", ID: agentID, Op: op, Reason: reasonUnknown}
		}
		r.last = a
	}
	if a.finished {
		return nil, &StateError{What: "agent", ID: agentID, Op: op, State: "finished", Reason: "the agent has already finished"}
	}
	return a, nil
}

func checkDeadline(a *agent, now time.Time) error {
	for ; a != nil; a = a.parent {
		if !a.deadline.IsZero() && !now.Before(a.deadline) {
			ms, _ := a.limits.DurationMillis.Value()
			return &LimitError{Kind: outcome.LimitDuration, AgentID: a.id, Limit: ms}
		}
	}
	return nil
}

// checkBytes checks one item's size against a per-item bound of a and every
// ancestor.
func checkBytes(a *agent, kind outcome.LimitKind, n uint64) error {
	for ; a != nil; a = a.parent {
		var l Limit
		switch kind {
		case outcome.LimitInputBytes:
			l = a.limits.InputBytes
		case outcome.LimitOutputBytes:
			l = a.limits.OutputBytes
		case outcome.LimitContextBytes:
			l = a.limits.ContextBytes
		case outcome.LimitToolInputBytes:
			l = a.limits.ToolInputBytes
		case outcome.LimitToolOutputBytes:
			l = a.limits.ToolOutputBytes
		}
		if !l.Allows(0, n) {
			max, _ := l.Value()
			return &LimitError{Kind: kind, AgentID: a.id, Limit: max, Requested: n}
		}
	}
	return nil
}

func checkEvents(a *agent, more uint64) error {
	for ; a != nil; a = a.parent {
		used := a.c.events + a.c.eventsRes
		if !a.limits.Events.Allows(used, more) {
			max, _ := a.limits.Events.Value()
			return &LimitError{Kind: outcome.LimitEvents, AgentID: a.id, Limit: max, Used: used, Requested: more}
		}
	}
	return nil
}

// StartAgent implements [Ledger]. It reserves the child's terminal event in
// the child and every ancestor, and fails with [ErrInvalid] when a child
// ceiling is higher than its parent's.
func (r *Root) StartAgent(ctx context.Context, spec AgentSpec) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if spec.ID == "" {
		spec.ID = r.ids.NewID()
	}
	if spec.Kind == "" {
		spec.Kind = "child"
	}
	r.mu.Lock()
	p, err := r.usable(spec.ParentID, "start a child under")
	if err != nil {
		r.mu.Unlock()
		return "", err
	}
	if _, dup := r.agents[spec.ID]; dup {
		r.mu.Unlock()
		return "", &StateError{What: "agent", ID: spec.ID, Op: "start", Reason: "an agent with this ID already exists"}
	}
	limits, err := spec.Limits.Narrow(p.limits)
	if err != nil {
		r.mu.Unlock()
		return "", err
	}
	now := r.clock()
	a := &agent{id: spec.ID, parentID: p.id, parent: p, limits: limits, calls: map[string]*call{}}
	a.deadline = deadlineOf(now, limits.DurationMillis)
	if err := firstErr(checkDeadline(p, now), checkBytes(a, outcome.LimitInputBytes, spec.InputBytes), checkEvents(a, 1)); err != nil {
		r.mu.Unlock()
		return "", err
	}
	for x := a; x != nil; x = x.parent {
		x.c.eventsRes++
	}
	p.liveChildren++
	r.agents[a.id] = a
	r.record(Record{Kind: RecordAgent, Time: now, Agent: &AgentRecord{
		AgentID: a.id, ParentID: p.id, Kind: spec.Kind, InputDigest: spec.InputDigest, Limits: limits,
	}})
	return a.id, r.unlockAccepted(ctx)
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Append implements [Ledger]. typ must be non-empty and payload empty or valid
// JSON. The event is durable at the next barrier or Flush; an Append that
// finds FlushEvery records waiting flushes them itself. The agent's terminal
// event slot stays reserved, so ordinary events fail with an events
// [*LimitError] one short of the ceiling.
func (r *Root) Append(ctx context.Context, agentID, typ string, payload json.RawMessage) (Event, error) {
	if typ == "" {
		return Event{}, &InvalidError{Field: "event type", Reason: "must not be empty"}
	}
	if len(payload) > 0 && !r.trusted && !validJSON(payload) {
		return Event{}, &InvalidError{Field: "event payload", Reason: "event " + strconv.Quote(typ) + " payload is not valid JSON"}
	}
	r.mu.Lock()
	a, err := r.usable(agentID, "append an event for")
	if err == nil {
		err = checkEvents(a, 1)
	}
	if err != nil {
		r.mu.Unlock()
		return Event{}, err
	}
	for x := a; x != nil; x = x.parent {
		x.c.events++
	}
	st := r.event(a, typ, payload)
	ev := r.eventOf(st, agentID, typ, payload)
	ev.ParentID = a.parentID
	full := len(r.pending) >= r.flushEvery
	r.mu.Unlock()
	if full {
		// The event was appended: it is returned with the flush's error.
		return ev, r.flush(ctx)
	}
	return ev, nil
}

// stamp is what the root gave an event: its numbers and its time.
type stamp struct {
	RootSeq, Seq uint64
	UnixMicros   int64
}

// Time returns the stamp's time in UTC.
func (s stamp) Time() time.Time { return time.UnixMicro(s.UnixMicros).UTC() }

// event numbers and records an event whose slot was already charged; r.mu
// must be held, so times follow root_seq. The Event itself is built only
// when it is recorded.
func (r *Root) event(a *agent, typ string, payload json.RawMessage) stamp {
	a.seq++
	r.rootSeq++
	st := stamp{RootSeq: r.rootSeq, Seq: a.seq, UnixMicros: r.micros()}
	if r.logs() {
		ev := r.eventOf(st, a.id, typ, payload)
		ev.ParentID = a.parentID
		r.record(Record{Kind: RecordEvent, Time: ev.Time, Event: ev})
	}
	return st
}

// eventOf is the Event of a stamp (without its ParentID).
func (r *Root) eventOf(st stamp, agentID, typ string, payload json.RawMessage) Event {
	return Event{RootSeq: st.RootSeq, Seq: st.Seq, RootID: r.id, AgentID: agentID, Type: typ, Time: st.Time(), Payload: payload}
}

// Finish implements [Ledger]. The agent must have no live children and no
// unsettled calls: settle or join them first. A completed outcome whose
// OutputBytes exceed an output_bytes ceiling returns a [*LimitError] and
// finishes nothing, so the caller can finish with limit_exceeded instead.
// After the root agent finishes, the ledger accepts no more work. Finish is a
// barrier: the terminal record and everything before it are durable when it
// returns.
func (r *Root) Finish(ctx context.Context, agentID string, f Finish) (Event, error) {
	if err := f.Outcome.validate(); err != nil {
		return Event{}, err
	}
	if f.EventType == "" {
		f.EventType = "run.finished"
	}
	if len(f.Payload) > 0 && !r.trusted && !validJSON(f.Payload) {
		return Event{}, &InvalidError{Field: "Finish.Payload", Reason: "not valid JSON"}
	}
	r.mu.Lock()
	a, err := r.usable(agentID, "finish")
	if err == nil && a.liveChildren > 0 {
		err = &StateError{What: "agent", ID: agentID, Op: "finish", State: "running",
			Reason: strconv.Itoa(a.liveChildren) + " child agent(s) still running; finish every child first"}
	}
	if err == nil && a.open > 0 {
		err = &StateError{What: "agent", ID: agentID, Op: "finish", State: "running",
			Reason: strconv.Itoa(a.open) + " call(s) not settled; settle every call first (use may_have_been_sent when the outcome is unknown)"}
	}
	if err == nil && f.Outcome.Status == outcome.Completed {
		err = checkBytes(a, outcome.LimitOutputBytes, f.OutputBytes)
	}
	if err != nil {
		r.mu.Unlock()
		return Event{}, err
	}
	for x := a; x != nil; x = x.parent {
		x.c.eventsRes--
		x.c.events++
	}
	st := r.event(a, f.EventType, f.Payload)
	ev := r.eventOf(st, a.id, f.EventType, f.Payload)
	ev.ParentID = a.parentID
	r.record(Record{Kind: RecordFinish, Time: ev.Time, Finish: &FinishRecord{AgentID: a.id, Outcome: f.Outcome}})
	a.finished = true
	if a.parent != nil {
		a.parent.liveChildren--
	}
	r.mu.Unlock()
	return ev, r.flush(ctx)
}

// RecordDecision implements [Ledger].
func (r *Root) RecordDecision(ctx context.Context, agentID, capability string, d authority.Decision) error {
	if capability == "" {
		return &InvalidError{Field: "capability", Reason: "must not be empty"}
	}
	r.mu.Lock()
	a, err := r.usable(agentID, "record a decision for")
	if err != nil {
		r.mu.Unlock()
		return err
	}
	r.record(Record{Kind: RecordDecision, Time: r.clock(), Decision: &DecisionRecord{AgentID: a.id, Capability: capability, Decision: recorded(d)}})
	return r.unlockAccepted(ctx)
}

// RecordProcessGroup records a process group the agent's runtime started
// and owns, right after the group started and before the caller hands it any
// work, so that a kill of the host from then on leaves the group findable by
// recovery. The record needs to outlive the host process, not the machine
// (no process survives a reboot, and a reaper refuses a record of another
// boot), so on a [VolatileStore] it is written volatile, with every record
// accepted before it: no fsync and not a barrier, visible to every later
// reader on this host when RecordProcessGroup returns, and durable at the
// next barrier. On any other store it is a barrier.
func (r *Root) RecordProcessGroup(ctx context.Context, agentID string, g ProcessGroupRecord) error {
	if g.Pgid <= 0 || g.BootID == "" {
		return &InvalidError{Field: "process group", Reason: "needs a positive pgid and a boot ID"}
	}
	vs, volatile := r.store.(VolatileStore)
	if volatile && !r.resultsOnly {
		// No flush is in flight while the volatile records are written, so
		// the durable records and the volatile ones leave no gap.
		r.flushMu.Lock()
		defer r.flushMu.Unlock()
	}
	r.mu.Lock()
	a, err := r.usable(agentID, "record a process group for")
	if err != nil {
		r.mu.Unlock()
		return err
	}
	g.AgentID = a.id
	r.record(Record{Kind: RecordProcessGroup, Time: r.clock(), ProcessGroup: &g})
	if !volatile || r.resultsOnly {
		r.mu.Unlock()
		return r.flush(ctx)
	}
	// Only what no earlier volatile write carried.
	i := len(r.pending)
	for i > 0 && r.pending[i-1].N > r.volatileN {
		i--
	}
	recs := slices.Clone(r.pending[i:])
	r.volatileN = r.n
	r.mu.Unlock()
	if err := vs.AppendVolatile(r.storeCtx, recs); err != nil {
		return r.storeFailed("append volatile", err)
	}
	return nil
}

// storeFailed latches the first store failure: every later write of the
// root reports it.
func (r *Root) storeFailed(op string, err error) error {
	se := &StoreError{Op: op, Err: err}
	r.mu.Lock()
	if r.err == nil {
		r.err = se
	}
	r.mu.Unlock()
	return se
}

// PutResult implements [Ledger]. v is marshalled with encoding/json
// (json.RawMessage and []byte are taken as JSON text), canonicalized and
// stored under "sha256:<hex>". Storing the same value again returns the same
// reference and writes nothing new.
func (r *Root) PutResult(ctx context.Context, v any) (ResultRef, error) {
	data, err := canonicalOf(v)
	if err != nil {
		return "", err
	}
	ref := RefOf(data)
	r.mu.Lock()
	if r.err != nil {
		err := r.err
		r.mu.Unlock()
		return "", err
	}
	if r.results.Add(string(ref), 0) {
		r.record(Record{Kind: RecordResult, Time: r.clock(), Result: &ResultRecord{ID: ref, Data: data}})
	}
	return ref, r.unlockAccepted(ctx)
}

// Result implements [Ledger]. A result put since the last barrier is read
// from the records waiting for it.
func (r *Root) Result(ctx context.Context, ref ResultRef) (json.RawMessage, error) {
	if data, ok := r.pendingResult(ref); ok {
		return data, nil
	}
	data, err := r.store.Result(ctx, ref)
	if err != nil && r.knowsResult(ref) {
		// A flush in flight holds it: read again once no flush is.
		r.flushMu.Lock()
		defer r.flushMu.Unlock()
		if data, ok := r.pendingResult(ref); ok {
			return data, nil
		}
		return r.store.Result(ctx, ref)
	}
	return data, err
}

// pendingResult finds ref among the records accepted since the last barrier.
func (r *Root) pendingResult(ref ResultRef) (json.RawMessage, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.results.Has(string(ref)) {
		return nil, false
	}
	for i := range r.pending {
		if p := &r.pending[i]; p.Kind == RecordResult && p.Result != nil && p.Result.ID == ref {
			return p.Result.Data, true
		}
	}
	return nil, false
}

func (r *Root) knowsResult(ref ResultRef) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.results.Has(string(ref))
}

// Accounting implements [Ledger].
func (r *Root) Accounting(agentID string) (Accounting, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	a := r.agents[agentID]
	if a == nil {
		return Accounting{}, &StateError{What: "agent", ID: agentID, Op: "read accounting of", Reason: reasonUnknown}
	}
	return a.c.snapshot(), nil
}
