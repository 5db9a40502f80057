package ledger

import (
	"context"
	"errors"

	"github.com/pabloagent/pablo/ledger/outcome"

	"github.com/pabloagent/pablo/authority"
)

// Report is what [Recover] found in a store. It marshals to stable JSON:
// tasks in ID order, everything else in record order, empty lists as [].
type Report struct {
	Tasks []TaskReport `json:"tasks"`
	// Live lists the tasks of a [LeaseStore] whose lease is live: their
	// work is in flight in another process, not abandoned, so [Recover]
	// reports it apart instead of among Tasks.
	Live []Lease `json:"live,omitempty"`
}

// TaskReport is the durable state of one task.
type TaskReport struct {
	TaskID      string `json:"task_id"`
	RootAgentID string `json:"root_agent_id"`
	InputDigest string `json:"input_digest,omitempty"`
	Fingerprint string `json:"fingerprint,omitempty"`
	// SnapshotDigest is the digest of the root agent's dispatch snapshot,
	// when one was recorded.
	SnapshotDigest string `json:"snapshot_digest,omitempty"`
	Limits         Limits `json:"limits"`
	// Snapshots are the recorded dispatch snapshots, one per agent that
	// started with one (the root first), in record order.
	Snapshots []SnapshotReport `json:"snapshots"`
	// Agents is the agent tree, the root first.
	Agents []AgentReport `json:"agents"`
	// Decisions are the recorded decisions outside calls (the rest of the
	// authorization scope is in each call's Decision).
	Decisions []DecisionRecord `json:"decisions"`
	// Completed, Unknown and Retryable partition the task's calls.
	Completed []CallReport `json:"completed"`
	Unknown   []CallReport `json:"unknown"`
	Retryable []CallReport `json:"retryable"`
	// ProcessGroups lists the process groups the task started, in the order
	// they started. Whether one survives is for the host to check (see
	// internal/proc and `pablo ledger recover --reap`).
	ProcessGroups []ProcessGroupRecord `json:"process_groups"`
	// Results lists the stored results in the order they were put.
	Results []ResultRef `json:"results"`
	// Events and LastRootSeq describe the event stream.
	Events      uint64 `json:"events"`
	LastRootSeq uint64 `json:"last_root_seq"`
	// Outcome is the task's terminal outcome, or nil when the root never
	// finished (the task was interrupted).
	Outcome *Outcome `json:"outcome"`
}

// SnapshotReport is one agent's recorded dispatch snapshot, read back and
// checked against its digest.
type SnapshotReport struct {
	AgentID string    `json:"agent_id"`
	Digest  ResultRef `json:"digest"`
	// Snapshot is the decoded snapshot; nil when the record does not read
	// back.
	Snapshot *Snapshot `json:"snapshot"`
	// Invalid says why the record does not read back (altered, not
	// canonical, malformed); empty when it does.
	Invalid string `json:"invalid,omitempty"`
}

// AgentReport is one agent of the tree.
type AgentReport struct {
	AgentID  string   `json:"agent_id"`
	ParentID string   `json:"parent_id,omitempty"`
	Kind     string   `json:"kind"`
	Outcome  *Outcome `json:"outcome"`
}

// CallReport is the folded state of one call.
type CallReport struct {
	AgentID         string   `json:"agent_id"`
	CallID          string   `json:"call_id"`
	Kind            CallKind `json:"kind"`
	Step            uint64   `json:"step"`
	Name            string   `json:"name,omitempty"`
	ArgumentsDigest string   `json:"arguments_digest,omitempty"`
	// IdempotencyKey is the key the call's side effect carried, as its
	// admission recorded it.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// Decision is the decision that decided the call: the admission's, or
	// the settlement's when the tool denied the call when it ran.
	Decision *authority.Decision `json:"decision,omitempty"`
	State    CallState           `json:"state"`
	Class    outcome.Class       `json:"class"`
	Status   string              `json:"status,omitempty"`
	Delivery outcome.Delivery    `json:"delivery,omitempty"`
	Result   ResultRef           `json:"result,omitempty"`
	Error    string              `json:"error,omitempty"`
}

// Recover reads every task in store and reports, for each, its completed
// calls, its unknown outcomes and its retryable operations, plus the terminal
// outcome when one was recorded. It only reads: nothing is replayed. On a
// [LeaseStore] shared by a fleet, a task whose lease is live is in flight
// in another process, not abandoned: it is listed in Report.Live with its
// lease, and its work is not reported until the lease has expired.
func Recover(ctx context.Context, store Store) (Report, error) {
	rep := Report{Tasks: []TaskReport{}}
	for t, err := range RecoverEach(ctx, store) {
		if le, ok := errors.AsType[*LeaseError](err); ok && !le.Lost {
			rep.Live = append(rep.Live, le.Lease)
			continue
		}
		if err != nil {
			return Report{}, err
		}
		rep.Tasks = append(rep.Tasks, t)
	}
	return rep, nil
}

// RecoverTask reports one task; see [Recover]. On a [LeaseStore] it
// refuses, with a [*LeaseError] matching [ErrLeaseLive], while the task's
// lease is live.
func RecoverTask(ctx context.Context, store Store, taskID string) (TaskReport, error) {
	if err := checkAbandoned(ctx, store, taskID); err != nil {
		return TaskReport{}, err
	}
	recs, err := store.Records(ctx, taskID)
	if err != nil {
		return TaskReport{}, err
	}
	return fold(taskID, recs), nil
}

func fold(taskID string, recs []Record) TaskReport {
	t := TaskReport{
		TaskID: taskID, Agents: []AgentReport{}, Decisions: []DecisionRecord{},
		Completed: []CallReport{}, Unknown: []CallReport{}, Retryable: []CallReport{}, Results: []ResultRef{}, ProcessGroups: []ProcessGroupRecord{},
		Snapshots: []SnapshotReport{},
	}
	type key struct{ agent, call string }
	var order []key
	calls := map[key]*CallReport{}
	agents := map[string]int{}
	for i := range recs {
		r := &recs[i]
		switch r.Kind {
		case RecordTask:
			if r.Task != nil {
				t.RootAgentID, t.InputDigest, t.Fingerprint, t.Limits = r.Task.RootAgentID, r.Task.InputDigest, r.Task.Fingerprint, r.Task.Limits
			}
		case RecordAgent:
			if r.Agent != nil {
				agents[r.Agent.AgentID] = len(t.Agents)
				t.Agents = append(t.Agents, AgentReport{AgentID: r.Agent.AgentID, ParentID: r.Agent.ParentID, Kind: r.Agent.Kind})
			}
		case RecordEvent:
			t.Events++
			t.LastRootSeq = max(t.LastRootSeq, r.Event.RootSeq)
		case RecordDecision:
			if r.Decision != nil {
				t.Decisions = append(t.Decisions, *r.Decision)
			}
		case RecordProcessGroup:
			if r.ProcessGroup != nil {
				t.ProcessGroups = append(t.ProcessGroups, *r.ProcessGroup)
			}
		case RecordSnapshot:
			if r.Snapshot != nil {
				t.Snapshots = append(t.Snapshots, snapshotReport(r.Snapshot))
			}
		case RecordResult:
			if r.Result != nil {
				t.Results = append(t.Results, r.Result.ID)
			}
		case RecordFinish:
			if r.Finish == nil {
				continue
			}
			o := r.Finish.Outcome
			if i, ok := agents[r.Finish.AgentID]; ok {
				t.Agents[i].Outcome = &o
			}
			if r.Finish.AgentID == t.RootAgentID {
				t.Outcome = &o
			}
		case RecordCall:
			c := r.Call
			if c == nil {
				continue
			}
			k := key{c.AgentID, c.CallID}
			cr := calls[k]
			if cr == nil {
				cr = &CallReport{AgentID: c.AgentID, CallID: c.CallID, Kind: c.Kind}
				calls[k] = cr
				order = append(order, k)
			}
			switch c.State {
			case CallAdmitted:
				cr.Step, cr.Name, cr.ArgumentsDigest, cr.IdempotencyKey = c.Step, c.Name, c.ArgumentsDigest, c.IdempotencyKey
				if c.Kind == ToolCallKind {
					d := c.Decision
					cr.Decision = &d
				}
			case CallSettled:
				cr.Status, cr.Delivery, cr.Result, cr.Error = c.Status, c.Delivery, c.Result, c.Error
				if c.Kind == ToolCallKind && decided(c.Decision) {
					// The tool denied the call when it ran: that decision
					// decided.
					d := c.Decision
					cr.Decision = &d
				}
			}
			if stateRank(c.State) > stateRank(cr.State) {
				cr.State = c.State
			}
		}
	}
	for _, sr := range t.Snapshots {
		if sr.AgentID == t.RootAgentID {
			t.SnapshotDigest = string(sr.Digest)
			break
		}
	}
	for _, k := range order {
		cr := calls[k]
		switch {
		case cr.State == CallSettled && cr.Delivery != outcome.MayHaveBeenSent:
			cr.Class = outcome.ClassCompleted
			t.Completed = append(t.Completed, *cr)
		case cr.State == CallAdmitted:
			cr.Class = outcome.ClassRetryable
			t.Retryable = append(t.Retryable, *cr)
		default:
			cr.Class = outcome.ClassUnknown
			t.Unknown = append(t.Unknown, *cr)
		}
	}
	return t
}

func stateRank(s CallState) int {
	switch s {
	case CallAdmitted:
		return 1
	case CallDispatched:
		return 2
	case CallSettled:
		return 3
	}
	return 0
}

// snapshotReport reads a snapshot record back. One that does not is
// reported, not dropped and not fatal: the rest of the task still
// recovers.
func snapshotReport(r *SnapshotRecord) SnapshotReport {
	rep := SnapshotReport{AgentID: r.AgentID, Digest: r.Digest}
	s, err := DecodeSnapshot([]byte(r.Snapshot), r.Digest)
	if err != nil {
		rep.Invalid = err.Error()
		return rep
	}
	rep.Snapshot = s
	return rep
}
