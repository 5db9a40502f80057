package ledger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pabloagent/pablo/internal/ids"
)

// ErrTaskSettled: a task asked to resume has settled already (its root
// agent has a terminal record): there is nothing to continue. The error
// is a [*SettledError] carrying the outcome.
var ErrTaskSettled = errors.New("ledger: task_settled")

// SettledError reports a resume of a task that has settled.
type SettledError struct {
	TaskID  string
	Outcome Outcome
}

func (e *SettledError) Error() string {
	return fmt.Sprintf("ledger: task_settled: task %q settled %s already; a settled task is never resumed (run a new task, or read it with `pablo ledger show`)", e.TaskID, e.Outcome.Status)
}

// Is matches ErrTaskSettled.
func (e *SettledError) Is(target error) bool { return target == ErrTaskSettled }

// Claimer is an optional interface of a [LeaseStore] shared by a fleet:
// Claim takes over the lease of a task whose lease expired or was
// released (a new fencing token, so the previous owner can never write
// again), and refuses a live one with a [*LeaseError] matching
// [ErrLeaseLive]. [Resume] claims the task through it; a store without it
// (bbolt, memory) is owned whole by its process already.
type Claimer interface {
	Claim(ctx context.Context, taskID string) (Lease, error)
}

// ResumeOptions configure [Resume].
type ResumeOptions struct {
	// Store holds the task; required.
	Store  Store
	TaskID string
	// Clock, IDs, TrustedPayloads and FlushEvery are as in [Options].
	Clock           Clock
	IDs             IDSource
	TrustedPayloads bool
	FlushEvery      int
	// Deadline, when set, replaces the root's deadline (the host passed a
	// new one). Zero keeps the original: the task's start plus its
	// duration ceiling, so the time the host was down counts.
	Deadline time.Time
}

// Resumption is a task taken over by [Resume]: its root ledger, rebuilt
// from its records and accepting work again, and what the records say.
type Resumption struct {
	Root *Root
	// Report is the task's state as [RecoverTask] reports it, before the
	// resume added anything.
	Report TaskReport
	// Records are the task's records as the store returned them.
	Records []Record
	// Task is the task record: identity, input, fingerprint and ceilings.
	Task TaskRecord
	// Started is when the task first started (its first record).
	Started time.Time
	// Interrupted is the time of its last record: about when the host that
	// ran it stopped.
	Interrupted time.Time
}

// Resume takes over an interrupted task of opts.Store so that it can
// continue: it claims the task's lease (on a [Claimer]; a live lease is
// refused with a [*LeaseError] matching [ErrLeaseLive]), reads its
// records, refuses a settled task ([ErrTaskSettled]), and rebuilds the
// root's state from them: record and event numbering, every agent's
// counters (every charge made before the crash stays charged), its calls
// and their states, and its deadline. The calls a crash left open stay
// open, in the state their records give (admitted: retryable;
// dispatched: unknown): the caller settles each. Nothing is written until
// the caller adds a record.
func Resume(ctx context.Context, opts ResumeOptions) (*Resumption, error) {
	if opts.Store == nil {
		return nil, &InvalidError{Field: "ResumeOptions.Store", Reason: "a task resumes from the store that holds it"}
	}
	if opts.FlushEvery < 0 {
		return nil, &InvalidError{Field: "ResumeOptions.FlushEvery", Reason: "must not be negative"}
	}
	if err := checkAbandoned(ctx, opts.Store, opts.TaskID); err != nil {
		return nil, err
	}
	recs, err := opts.Store.Records(ctx, opts.TaskID)
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 || recs[0].Kind != RecordTask || recs[0].Task == nil {
		return nil, &StateError{What: "task", ID: opts.TaskID, Op: "resume", Reason: "its records do not start with a task record"}
	}
	rep := fold(opts.TaskID, recs)
	if rep.Outcome != nil {
		return nil, &SettledError{TaskID: opts.TaskID, Outcome: *rep.Outcome}
	}
	if c, ok := opts.Store.(Claimer); ok {
		if _, err := c.Claim(ctx, opts.TaskID); err != nil && !errors.Is(err, ErrNotFound) {
			return nil, err
		}
	}
	r, err := rebuild(ctx, opts, recs)
	if err != nil {
		return nil, err
	}
	return &Resumption{Root: r, Report: rep, Records: recs, Task: *recs[0].Task, Started: recs[0].Time, Interrupted: recs[len(recs)-1].Time}, nil
}

// rebuild is the root whose records are recs, as if it had accepted them
// itself: the same counters, calls and numbering.
func rebuild(ctx context.Context, opts ResumeOptions, recs []Record) (*Root, error) {
	if opts.IDs == nil {
		opts.IDs = ids.Random{}
	}
	if opts.FlushEvery == 0 {
		opts.FlushEvery = 256
		if _, ok := opts.Store.(*MemoryStore); ok {
			opts.FlushEvery = 32
		}
	}
	tr := recs[0].Task
	r := &Root{
		storeCtx:   context.WithoutCancel(ctx),
		id:         tr.TaskID,
		store:      opts.Store,
		now:        nowOf(opts.Clock),
		ids:        opts.IDs,
		flushEvery: opts.FlushEvery,
		trusted:    opts.TrustedPayloads,
		agents:     map[string]*agent{},
	}
	if r.now == nil {
		r.start = time.Now()
		r.startMicro = r.start.UnixMicro()
	}
	bad := func(rec *Record, why string) error {
		return &StateError{What: "task", ID: tr.TaskID, Op: "resume", Reason: fmt.Sprintf("record %d: %s", rec.N, why)}
	}
	for i := range recs {
		rec := &recs[i]
		r.n = max(r.n, rec.N)
		switch rec.Kind {
		case RecordAgent:
			ar := rec.Agent
			if ar == nil {
				continue
			}
			a := &agent{id: ar.AgentID, parentID: ar.ParentID, limits: ar.Limits.orUnlimited(), calls: map[string]*call{}}
			if ar.ParentID == "" {
				if ar.AgentID != tr.RootAgentID || r.root != nil {
					return nil, bad(rec, "a second root agent")
				}
				r.root = a
				a.limits = tr.Limits.orUnlimited()
			} else {
				p := r.agents[ar.ParentID]
				if p == nil {
					return nil, bad(rec, "an agent under an unknown parent")
				}
				a.parent = p
				p.liveChildren++
			}
			a.deadline = deadlineOf(rec.Time, a.limits.DurationMillis)
			for x := a; x != nil; x = x.parent {
				x.c.eventsRes++
			}
			r.agents[a.id] = a
		case RecordEvent:
			a := r.agents[rec.Event.AgentID]
			if a == nil {
				return nil, bad(rec, "an event of an unknown agent")
			}
			a.seq = max(a.seq, rec.Event.Seq)
			r.rootSeq = max(r.rootSeq, rec.Event.RootSeq)
			for x := a; x != nil; x = x.parent {
				x.c.events++
			}
		case RecordFinish:
			if rec.Finish == nil {
				continue
			}
			a := r.agents[rec.Finish.AgentID]
			if a == nil {
				return nil, bad(rec, "the finish of an unknown agent")
			}
			a.finished = true
			for x := a; x != nil; x = x.parent {
				x.c.eventsRes--
			}
			if a.parent != nil {
				a.parent.liveChildren--
			}
		case RecordResult:
			if rec.Result != nil {
				r.results.Add(string(rec.Result.ID), 0)
			}
		case RecordCall:
			if rec.Call == nil {
				continue
			}
			if err := r.replayCall(rec.Call); err != nil {
				return nil, bad(rec, err.Error())
			}
		}
	}
	if r.root == nil {
		return nil, &StateError{What: "task", ID: tr.TaskID, Op: "resume", Reason: "no root agent record"}
	}
	if !opts.Deadline.IsZero() {
		r.root.deadline = opts.Deadline
	}
	return r, nil
}

// replayCall applies one call transition to the counters, as the method
// that recorded it did.
func (r *Root) replayCall(cr *CallRecord) error {
	a := r.agents[cr.AgentID]
	if a == nil {
		return errors.New("a call of an unknown agent")
	}
	c := a.calls[cr.CallID]
	switch cr.State {
	case CallAdmitted:
		if a.hasCall(cr.CallID) {
			return errors.New("call " + cr.CallID + " admitted twice")
		}
		a.steps = max(a.steps, cr.Step)
		a.open++
		c = a.admit(cr.CallID, call{kind: cr.Kind, state: CallAdmitted})
		if cr.Kind == ModelCallKind {
			tb, _ := cr.TokenBound.Value()
			cb, _ := cr.CostBound.Value()
			c.reserved, c.tokenRes, c.costRes, c.tokenBnd, c.costBnd = true, tb, cb, cr.TokenBound, cr.CostBound
			for x := a; x != nil; x = x.parent {
				x.c.modelRes++
				x.c.tokensRes += tb
				x.c.costRes += cb
			}
			return nil
		}
		c.reserved = cr.Decision.Allowed
		if c.reserved {
			for x := a; x != nil; x = x.parent {
				x.c.toolRes++
			}
		}
	case CallDispatched:
		if c == nil || c.state != CallAdmitted {
			return errors.New("call " + cr.CallID + " dispatched out of order")
		}
		for x := a; x != nil; x = x.parent {
			if c.kind == ModelCallKind {
				x.c.modelRes--
				x.c.modelCalls++
			} else {
				x.c.toolRes--
				x.c.toolCalls++
			}
		}
		c.state = CallDispatched
	case CallSettled:
		if c == nil || c.state == CallSettled {
			return errors.New("call " + cr.CallID + " settled out of order")
		}
		for x := a; x != nil; x = x.parent {
			switch {
			case c.kind == ModelCallKind:
				x.c.tokensRes -= c.tokenRes
				x.c.costRes -= c.costRes
				if c.state == CallAdmitted {
					x.c.modelRes--
					continue
				}
				x.c.tokens += cr.ChargedTokens.N
				x.c.tokensUnknown = x.c.tokensUnknown || cr.ChargedTokens.Unknown
				x.c.cost += cr.ChargedCost.N
				x.c.costUnknown = x.c.costUnknown || cr.ChargedCost.Unknown
				x.c.usage = x.c.usage.add(cr.Usage)
				x.c.costActual = x.c.costActual.add(cr.CostMicroUSD)
			case c.state == CallAdmitted && c.reserved:
				x.c.toolRes--
				if cr.Counted {
					x.c.toolCalls++
				}
			}
		}
		a.settle(cr.CallID, c)
	}
	return nil
}

// OpenCall is a call a crash left open: admitted (never dispatched, so
// retryable) or dispatched (never settled, so its outcome is unknown).
type OpenCall struct {
	AgentID string
	CallID  string
	Kind    CallKind
	State   CallState
}

// OpenCalls lists the calls of the task not yet settled, in the order
// they were admitted.
func (s *Resumption) OpenCalls() []OpenCall {
	var out []OpenCall
	seen := map[[2]string]int{}
	for i := range s.Records {
		c := s.Records[i].Call
		if s.Records[i].Kind != RecordCall || c == nil {
			continue
		}
		k := [2]string{c.AgentID, c.CallID}
		switch c.State {
		case CallAdmitted:
			seen[k] = len(out)
			out = append(out, OpenCall{AgentID: c.AgentID, CallID: c.CallID, Kind: c.Kind, State: CallAdmitted})
		case CallDispatched:
			if j, ok := seen[k]; ok {
				out[j].State = CallDispatched
			}
		case CallSettled:
			if j, ok := seen[k]; ok {
				out[j].State = CallSettled
			}
		}
	}
	open := out[:0]
	for _, c := range out {
		if c.State != CallSettled {
			open = append(open, c)
		}
	}
	return open
}
