package children

import (
	"context"
	"encoding/json"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger/outcome"
)

// Restore registers in a resumed root's tree a child that settled before
// the host running the task stopped, as its last snapshot says: it counts
// against Total as every admitted child does, wait and inspect see it
// settled with its outcome, and its result ID (when the snapshot has one)
// names its result to handoffs again. Nothing runs. A snapshot without an
// outcome is restored cancelled.
func (t *Tree) Restore(s Snapshot) error {
	t.lock()
	defer t.unlock()
	if _, dup := t.children[s.AgentID]; dup || s.AgentID == "" || s.AgentID == t.opts.ParentID {
		return errorf(CodeDuplicateAgentID, "agent_id", "agent %q cannot be restored: it is known already", shorten(s.AgentID))
	}
	if t.total >= t.capacity.Total {
		return errorf(CodeAdmission, "", "the root has admitted its %d children (settled ones count)", t.capacity.Total)
	}
	kind := s.Kind
	if kind == "" {
		kind = KindLocal
	}
	c := &child{id: s.AgentID, kind: kind, state: StateSettled, settled: make(chan struct{})}
	close(c.settled)
	c.result = Result{Outcome: event.Outcome{Status: outcome.Cancelled}, StructuredOutput: s.StructuredOutput, Validation: s.Validation,
		Repair: s.Repair, Artifact: s.Artifact, TraceID: s.TraceID}
	if s.Outcome != nil {
		c.result.Outcome = *s.Outcome
		c.result.Outcome.Output = nil
	}
	if s.Accounting != nil {
		c.result.Accounting = *s.Accounting
	}
	if s.Output != nil {
		c.result.Output = *s.Output
	}
	c.outputBytes, c.outputOmitted = s.OutputBytes, s.OutputOmitted
	if c.result.Outcome.Status == outcome.Completed && s.ResultID != "" {
		if _, dup := t.results[s.ResultID]; !dup {
			c.resultID = s.ResultID
			t.results[s.ResultID] = c
		}
		if n := int64(len(c.result.Output) + len(c.result.StructuredOutput)); s.OutputOmitted == "" && n <= t.capacity.RetainedBytes-t.retained {
			t.retained += n
			c.retained = true
		}
	}
	if !c.retained {
		c.result.Output, c.result.StructuredOutput = "", nil
	}
	t.total++
	t.children[c.id] = c
	t.broadcastLocked()
	return nil
}

// Readmit admits again, under its recorded agent ID, a local child the
// host running the task stopped before it settled: req is its spawn
// request as the parent's records keep it, checked and narrowed again
// against this tree's parent scope (so a capability the parent lost since
// is not the child's either), and the child is queued or started like a
// new spawn; the Runner sees spec.AgentID already set. A request with
// handoffs is refused (the results they named are not re-verified on a
// resume): the caller settles that child instead.
func (t *Tree) Readmit(_ context.Context, agentID string, req Request) (Snapshot, error) {
	if len(req.Handoffs) > 0 {
		return Snapshot{}, errorf(CodeHandoffRefused, "request.handoffs", "a child started with handoffs is not resumed")
	}
	spec, err := t.specOf(req)
	if err != nil {
		return Snapshot{}, err
	}
	c := &child{id: agentID, kind: KindLocal}
	spec.AgentID, spec.ParentID = c.id, t.opts.ParentID
	t.lock()
	defer t.unlock()
	if _, dup := t.children[agentID]; dup || agentID == "" || agentID == t.opts.ParentID {
		return Snapshot{}, errorf(CodeDuplicateAgentID, "agent_id", "agent %q cannot be readmitted: it is known already", shorten(agentID))
	}
	c.spec, c.bytes = spec, spec.InputBytes()
	return t.enterLocked(c)
}

// ReadmitRemote admits again, under its recorded agent ID, a remote child
// whose remote task the stopped host had bound: req is its spawn_remote
// request as the parent's records keep it, checked again against the
// configured remotes, and the remote runner follows task taskID (in
// context contextID) rather than sending the request again. An empty
// taskID is a child that never started (its request never left): it is
// sent now.
func (t *Tree) ReadmitRemote(_ context.Context, agentID string, req RemoteRequest, taskID, contextID string) (Snapshot, error) {
	if t.opts.Remote == nil {
		return Snapshot{}, errorf(CodeRemoteUnavailable, "action", "no remote runner is configured")
	}
	if err := checkRemote(req, t.opts.Remote.Remotes()); err != nil {
		return Snapshot{}, err
	}
	c := &child{id: agentID, kind: KindRemote}
	spec := RemoteSpec{AgentID: agentID, ParentID: t.opts.ParentID, RemoteRequest: req, TaskID: taskID, ContextID: contextID}
	spec.MaxDurationMillis = t.withinDeadline(t.opts.Parent.Ceilings.MaxDurationMillis.Min(req.MaxDurationMillis.Or(t.opts.Parent.Ceilings.MaxDurationMillis)))
	c.remote = spec
	t.lock()
	defer t.unlock()
	if _, dup := t.children[agentID]; dup || agentID == "" || agentID == t.opts.ParentID {
		return Snapshot{}, errorf(CodeDuplicateAgentID, "agent_id", "agent %q cannot be readmitted: it is known already", shorten(agentID))
	}
	return t.enterLocked(c)
}

// SpawnedAgent reads the subagent tool's recorded result payload of a
// spawn (its {"action": "spawn", "agent": {...}} member): the agent ID it
// admitted; false for any other payload.
func SpawnedAgent(payload json.RawMessage) (string, bool) {
	var r struct {
		Action Action   `json:"action"`
		Agent  Snapshot `json:"agent"`
	}
	if json.Unmarshal(payload, &r) != nil || r.Action != ActionSpawn && r.Action != ActionSpawnRemote || r.Agent.AgentID == "" {
		return "", false
	}
	return r.Agent.AgentID, true
}

// SettledSnapshots reads the settled snapshots a recorded subagent result
// payload holds (inspect's, stop's and wait's), in order.
func SettledSnapshots(payload json.RawMessage) []Snapshot {
	var r struct {
		Snapshot *Snapshot  `json:"snapshot"`
		Settled  []Snapshot `json:"settled"`
	}
	if json.Unmarshal(payload, &r) != nil {
		return nil
	}
	out := r.Settled
	if r.Snapshot != nil {
		out = append(out, *r.Snapshot)
	}
	keep := out[:0]
	for _, s := range out {
		if s.State == StateSettled && s.AgentID != "" {
			keep = append(keep, s)
		}
	}
	return keep
}
