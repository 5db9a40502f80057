package pablo

import "github.com/pabloagent/pablo/internal/event"

// EventSchemaVersion is the native event and task contract revision.
const EventSchemaVersion = event.SchemaVersion

// The event types are defined in internal/event, where the event log and
// the trace writer use them too; these are their public names.
type (
	// EventType is the kind of an event.
	EventType = event.Type
	// Event is one entry of a task's typed event stream. Seq orders one
	// agent's events and RootSeq the whole task tree's, both from 1 with
	// no gaps.
	Event = event.Event
	// AgentRef places an event in the agent tree.
	AgentRef = event.AgentRef
	// EventData is the type-specific part of an event; only the fields of
	// its Type are set.
	EventData = event.EventData
	// EventCall is the call of a tool.started event.
	EventCall = event.Call
	// EventApproval is the approval of approval.requested and
	// approval.answered events.
	EventApproval = event.Approval
	// DeploymentRef identifies the deployment a task runs under.
	DeploymentRef = event.DeploymentRef
	// CompactionRecord is the compaction-v1 record of the
	// context.compaction.* events.
	CompactionRecord = event.Compaction
)

// The event kinds, in the order a run produces them:
// run.started → (model.started → deltas → model.finished →
// [tool.started → (approval.requested → approval.answered)? →
// tool.output* → tool.finished])* → run.finished.
const (
	EventRunStarted        = event.RunStarted
	EventSkillActivated    = event.SkillActivated
	EventModelStarted      = event.ModelStarted
	EventTextDelta         = event.TextDelta
	EventModelFinished     = event.ModelFinished
	EventToolStarted       = event.ToolStarted
	EventApprovalRequested = event.ApprovalRequested
	EventApprovalAnswered  = event.ApprovalAnswered
	EventToolOutput        = event.ToolOutput
	EventToolFinished      = event.ToolFinished
	EventRunFinished       = event.RunFinished
	// EventCompactionStarted and EventCompactionFinished bracket one
	// context compaction (before a model turn, or after a context
	// overflow): its record, a null summary and the summary's bytes.
	EventCompactionStarted  = event.CompactionStarted
	EventCompactionFinished = event.CompactionFinished
)
