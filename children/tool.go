package children

import (
	"context"
	"errors"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/ledger/outcome"
)

// Tool is the subagent tool over a [Supervisor]: a tool catalog of one
// tool (its Tools and Call satisfy the root's ToolCatalog), with the input
// schema of REFERENCE §4.5. Every refused call is a recoverable
// {"action": "error", "code", "field", "message"} result the model can
// correct; a call ended by its context is cancelled.
type Tool struct {
	sup     Supervisor
	remotes []string
	spec    authority.ToolSpec
}

// NewTool returns the subagent tool over sup. remotes are the configured
// remote names: spawn_remote and remote_request are offered only when
// there is at least one (a *Tree's Remotes).
func NewTool(sup Supervisor, remotes []string) *Tool {
	remotes = append([]string(nil), remotes...)
	return &Tool{sup: sup, remotes: remotes, spec: authority.ToolSpec{
		ID: ToolID, Description: toolDescription, InputSchema: inputSchema(remotes), Resources: delegatedTo}}
}

// delegatedTo is the resource a subagent call names: the remote a
// spawn_remote delegates to (authority.ResourceRemote), which the layers
// decide and an approval request and its "allow for this task" grant are
// bound to; no other action names one.
func delegatedTo(args map[string]any) []authority.Resource {
	if args["action"] != string(ActionSpawnRemote) {
		return nil
	}
	rr, _ := args["remote_request"].(map[string]any)
	name, ok := rr["remote"].(string)
	if !ok {
		return nil
	}
	return []authority.Resource{{Kind: authority.ResourceRemote, Value: name}}
}

// Remotes returns the configured remote names the tool offers
// spawn_remote to, the remotes ParseArguments takes.
func (t *Tool) Remotes() []string { return append([]string(nil), t.remotes...) }

// Tools returns the one subagent tool's spec.
func (t *Tool) Tools() []authority.ToolSpec { return []authority.ToolSpec{t.spec} }

// The result payloads of REFERENCE §4.5.
type (
	spawnResult struct {
		Action Action   `json:"action"`
		Agent  Snapshot `json:"agent"`
	}
	snapshotResult struct {
		Action   Action   `json:"action"`
		Snapshot Snapshot `json:"snapshot"`
	}
	waitResult struct {
		Action    Action     `json:"action"`
		Settled   []Snapshot `json:"settled"`
		Remaining []string   `json:"remaining"`
	}
	errorResult struct {
		Action  string `json:"action"`
		Code    Code   `json:"code"`
		Field   string `json:"field,omitempty"`
		Message string `json:"message"`
	}
)

// Call runs one subagent call.
func (t *Tool) Call(ctx context.Context, call authority.Call) ledger.ToolResult {
	if call.Tool != ToolID {
		return refusal(errorf(CodeUnknownAction, "", "this catalog holds only the %s tool", ToolID))
	}
	a, err := ParseArguments(call.Arguments, t.remotes)
	if err != nil {
		return refusal(err)
	}
	switch a.Action {
	case ActionSpawn:
		s, err := t.sup.Spawn(ctx, a.Request)
		if err != nil {
			return refusal(err)
		}
		return ledger.Completed(spawnResult{Action: a.Action, Agent: s})
	case ActionSpawnRemote:
		s, err := t.sup.SpawnRemote(ctx, a.Remote)
		if err != nil {
			return refusal(err)
		}
		return ledger.Completed(spawnResult{Action: a.Action, Agent: s})
	case ActionInspect:
		s, err := t.sup.Inspect(ctx, a.AgentID)
		if err != nil {
			return refusal(err)
		}
		return ledger.Completed(snapshotResult{Action: a.Action, Snapshot: s})
	case ActionStop:
		s, err := t.sup.Stop(ctx, a.AgentID)
		if err != nil {
			return refusal(err)
		}
		return ledger.Completed(snapshotResult{Action: a.Action, Snapshot: s})
	default: // ActionWait
		w, err := t.sup.Wait(ctx, a.Wait)
		if err != nil {
			return refusal(err)
		}
		return ledger.Completed(waitResult{Action: a.Action, Settled: w.Settled, Remaining: w.Remaining})
	}
}

// refusal is a refused call's result: recoverable with its code, or
// cancelled or timed out when its context ended.
func refusal(err error) ledger.ToolResult {
	switch {
	case errors.Is(err, context.Canceled):
		return ledger.ToolResult{Status: outcome.ToolCancelled}
	case errors.Is(err, context.DeadlineExceeded):
		return ledger.ToolResult{Status: outcome.ToolTimedOut}
	}
	e := &Error{}
	if !errors.As(err, &e) {
		e = &Error{Code: CodeAdmission, Reason: err.Error()}
	}
	return ledger.ToolResult{Status: outcome.ToolRecoverableError,
		Output: errorResult{Action: "error", Code: e.Code, Field: e.Field, Message: e.Error()}}
}
