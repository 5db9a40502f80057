package children

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/pabloagent/pablo/internal/schema"
	"github.com/pabloagent/pablo/internal/textx"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/ledger/outcome"
)

// Spawn admits a local child. The request is checked (input 1..1,048,576
// bytes, at most 16 handoffs, an output schema in the bounded subset),
// narrowed against the parent ([Narrow]), its handoffs resolved against
// this root's settled children, and its capacity reserved in one step
// under the lock. The snapshot is the child's at admission: starting, or
// queued behind the active children.
func (t *Tree) Spawn(ctx context.Context, req Request) (Snapshot, error) {
	spec, err := t.specOf(req)
	if err != nil {
		return Snapshot{}, err
	}
	c := &child{id: t.ids.NewID(), kind: KindLocal}
	spec.AgentID, spec.ParentID = c.id, t.opts.ParentID
	t.lock()
	defer t.unlock()
	if spec.Handoffs, err = t.resolveLocked(req.Handoffs); err != nil {
		return Snapshot{}, err
	}
	if n := spec.InputBytes(); n > t.capacity.InputBytes {
		return Snapshot{}, errorf(CodeAdmission, "request", "the input, overlay, context and inline handoffs hold %d bytes, over the child's %d", n, t.capacity.InputBytes)
	}
	c.spec, c.bytes = spec, spec.InputBytes()
	return t.enterLocked(c)
}

// enterLocked admits c and starts it when a slot is free. The caller
// holds the lock.
func (t *Tree) enterLocked(c *child) (Snapshot, error) {
	now, err := t.admitLocked(c)
	if err != nil {
		return Snapshot{}, err
	}
	t.registerLocked(c)
	if now {
		t.startLocked(c)
	}
	return t.snapshotLocked(c), nil
}

// specOf checks a request and narrows it: everything of a spawn that
// needs no lock.
func (t *Tree) specOf(req Request) (Spec, error) {
	if n := len(req.Input); n < 1 || n > MaxInputBytes {
		return Spec{}, errorf(CodeOutOfRange, "request.input", "the input must hold 1..%d bytes, got %d", MaxInputBytes, n)
	}
	if len(req.Handoffs) > MaxHandoffs {
		return Spec{}, errorf(CodeOutOfRange, "request.handoffs", "at most %d handoffs, got %d", MaxHandoffs, len(req.Handoffs))
	}
	spec := Spec{Input: req.Input, Overlay: req.Overlay, Context: slices.Clone(req.Context)}
	if len(req.OutputSchema) > 0 && string(req.OutputSchema) != "null" {
		if _, err := schema.Compile(req.OutputSchema, schema.DefaultLimits()); err != nil {
			return Spec{}, &Error{Code: CodeInvalidOutputSchema, Field: "request.output_schema", Reason: err.Error(), Err: err}
		}
		spec.OutputSchema = append(json.RawMessage{}, req.OutputSchema...)
	}
	scope, err := Narrow(t.opts.Parent, Scope{Capabilities: req.Capabilities, Ceilings: req.Ceilings})
	if err != nil {
		return Spec{}, err
	}
	scope.Ceilings.MaxContextBytes = scope.Ceilings.MaxContextBytes.Min(ledger.Max(uint64(t.capacity.ChildContextBytes)))
	scope.Ceilings.MaxDurationMillis = t.withinDeadline(scope.Ceilings.MaxDurationMillis)
	spec.Capabilities, spec.Ceilings = scope.Capabilities, scope.Ceilings
	return spec, nil
}

// withinDeadline cuts a duration ceiling to what remains of the root's
// deadline.
func (t *Tree) withinDeadline(l ledger.Limit) ledger.Limit {
	if t.opts.Deadline.IsZero() {
		return l
	}
	left := t.opts.Deadline.Sub(t.clock.Now())
	if left < 0 {
		left = 0
	}
	return l.Min(limitMillis(left))
}

// resolveLocked checks each handoff against this root's settled children
// and copies what it passes. The caller holds the lock.
func (t *Tree) resolveLocked(hs []Handoff) ([]ResolvedHandoff, error) {
	if len(hs) == 0 {
		return nil, nil
	}
	out := make([]ResolvedHandoff, 0, len(hs))
	for i, h := range hs {
		field := "request.handoffs/" + strconv.Itoa(i)
		for _, prev := range hs[:i] {
			if prev == h {
				return nil, errorf(CodeOutOfRange, field, "the same handoff is named twice")
			}
		}
		src, ok := t.results[h.ResultID]
		if !ok {
			if c, known := t.children[h.SourceAgentID]; known && c.state == StateSettled && c.result.Outcome.Status != outcome.Completed {
				return nil, errorf(CodeHandoffRefused, field, "agent %s did not complete (%s): only a completed child's result can be handed off", c.id, c.result.Outcome.Status)
			} else if known {
				return nil, errorf(CodeUnknownResult, field+"/result_id", "agent %s has no result %q: hand off the result_id of its settled snapshot", h.SourceAgentID, textx.Shorten(h.ResultID, 64))
			}
			return nil, errorf(CodeUnknownResult, field+"/result_id", "no settled child of this root has result %q", textx.Shorten(h.ResultID, 64))
		}
		if src.id != h.SourceAgentID {
			return nil, errorf(CodeForeignAgent, field+"/source_agent_id", "result %s belongs to agent %s, not %q", h.ResultID, src.id, textx.Shorten(h.SourceAgentID, 64))
		}
		r := ResolvedHandoff{Handoff: h}
		res := src.result
		switch {
		case res.Outcome.Status != outcome.Completed:
			return nil, errorf(CodeHandoffRefused, field, "agent %s did not complete (%s): only a completed child's result can be handed off", src.id, res.Outcome.Status)
		case src.outputOmitted != "":
			return nil, errorf(CodeHandoffRefused, field, "agent %s's result is oversized (%d bytes, %s): it cannot be handed off", src.id, src.outputBytes, src.outputOmitted)
		}
		switch h.Kind {
		case HandoffInline:
			if err := validReceipt(res.Validation); err != nil {
				return nil, errorf(CodeHandoffRefused, field, "agent %s's output %s: only a schema-valid structured output can be handed off inline", src.id, err)
			}
			if len(res.StructuredOutput) == 0 || !json.Valid(res.StructuredOutput) {
				return nil, errorf(CodeHandoffRefused, field, "agent %s has no structured output to hand off inline", src.id)
			}
			r.Inline = &InlineHandoff{Output: res.StructuredOutput, Validation: res.Validation, Repair: res.Repair,
				Accounting: res.Accounting, TraceID: res.TraceID}
		case HandoffArtifact:
			if res.Artifact == nil {
				return nil, errorf(CodeHandoffRefused, field, "agent %s's result names no artifact", src.id)
			}
			a := *res.Artifact
			r.Artifact = &a
		default:
			return nil, errorf(CodeOutOfRange, field+"/kind", "kind must be inline or artifact, got %q", textx.Shorten(string(h.Kind), 32))
		}
		out = append(out, r)
	}
	return out, nil
}

// validReceipt checks an output-validation-v1 receipt says valid.
func validReceipt(raw json.RawMessage) error {
	if len(raw) == 0 {
		return errString("was never validated (the child had no output schema)")
	}
	var rec struct {
		SchemaVersion string        `json:"schema_version"`
		Status        schema.Status `json:"status"`
	}
	if err := json.Unmarshal(raw, &rec); err != nil || rec.SchemaVersion != schema.RecordVersion {
		return errString("has no output-validation-v1 receipt")
	}
	if rec.Status != schema.StatusValid {
		return errString("is " + string(rec.Status))
	}
	return nil
}

type errString string

func (e errString) Error() string { return string(e) }
