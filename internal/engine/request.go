package engine

import (
	"context"
	"encoding/json"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/internal/output"
	"github.com/pabloagent/pablo/ledger"
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
}

// TaskInfo tells catalogs and hosts which task they serve, and gives them
// the part of its ledger a catalog records in (the root's TaskInfo).
type TaskInfo struct {
	TaskID     string
	AgentID    string
	Ledger     ledger.Recorder
	MCPServers []string
}

// Catalog is a set of admitted tools of one task: the root's ToolCatalog,
// whose method set it repeats, so every ToolCatalog is one.
type Catalog interface {
	Tools() []authority.ToolSpec
	Call(ctx context.Context, call authority.Call) ledger.ToolResult
}
