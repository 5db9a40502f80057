package tracefile

import "github.com/pabloagent/pablo/event"

// AuditLevel is seed 002's audit level of a tool capability: how much of
// its calls a trace keeps.
type AuditLevel string

// The audit levels.
const (
	// AuditNone keeps that the call happened and how it ended (its
	// tool.started and tool.finished records, name and status) and
	// nothing of its content: no arguments, no result, no byte counts,
	// no tool.output record.
	AuditNone AuditLevel = "none"
	// AuditMetadata is the trace without content: byte counts and a
	// result's status and policy_rule, the arguments and result null.
	AuditMetadata AuditLevel = "metadata"
	// AuditContent captures the call's arguments, output and result,
	// masked, for that capability only, whatever CaptureContent says.
	AuditContent AuditLevel = "content"
)

// Valid reports whether l is one of the levels.
func (l AuditLevel) Valid() bool { return l == AuditNone || l == AuditMetadata || l == AuditContent }

// toolLevel is the audit level of capability: its own (Options.Audit),
// else the tool profile's (Options.ToolAudit), else content when
// CaptureContent is set and metadata otherwise.
func (o *Options) toolLevel(capability string) AuditLevel {
	if l, ok := o.Audit[capability]; ok {
		return l
	}
	if o.ToolAudit != "" {
		return o.ToolAudit
	}
	if o.CaptureContent {
		return AuditContent
	}
	return AuditMetadata
}

// audited reports whether the writer sets any tool audit level, so the
// plain path needs no lookup otherwise.
func (o *Options) audited() bool { return o.ToolAudit != "" || len(o.Audit) > 0 }

// eventLevel is the audit level of a tool event, and false for an event
// that is no tool call's (model text, the run's records).
func (o *Options) eventLevel(ev *event.Event) (AuditLevel, bool) {
	switch ev.Type {
	case event.ToolStarted:
		if ev.Call != nil {
			return o.toolLevel(ev.Call.Name), true
		}
	case event.ToolOutput, event.ToolFinished:
		return o.toolLevel(ev.Name), true
	case event.ApprovalRequested:
		if ev.Approval != nil {
			return o.toolLevel(ev.Approval.Capability), true
		}
	}
	return "", false
}
