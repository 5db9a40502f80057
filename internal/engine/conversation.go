package engine

import (
	"encoding/json"
	"fmt"

	"github.com/pabloagent/pablo/children"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/model"
)

// TurnOf is the messages a settled task adds to its session's
// conversation: those it added when it completed, or else its prompt and a
// note of how it ended (a task cut short leaves no well-formed turns to
// carry).
func TurnOf(prompt string, o *event.Outcome, transcript []model.Message) []model.Message {
	if o != nil && o.Status == event.StatusCompleted && len(transcript) > 0 {
		return transcript
	}
	return []model.Message{{Role: model.RoleUser, Content: prompt}, {Role: model.RoleAssistant, Content: answerOf(o)}}
}

// answerOf is the answer a later prompt sees for a turn that ended in o.
func answerOf(o *event.Outcome) string {
	switch {
	case o == nil:
		return "(no answer: the task was cut off)"
	case o.Status == event.StatusCompleted && o.Output != nil:
		return *o.Output
	}
	return "(no answer: the task ended " + string(o.Status) + ")"
}

// History is the conversation a new prompt carries: the messages of the
// latest turns that fit budget bytes, oldest first; a turn that does not
// fit is left out whole, and so is every turn before it.
func History(turns [][]model.Message, budget int) []model.Message {
	from := len(turns)
	for i := len(turns) - 1; i >= 0; i-- {
		n := turnBytes(turns[i])
		if n > budget {
			break
		}
		budget -= n
		from = i
	}
	var msgs []model.Message
	for _, t := range turns[from:] {
		msgs = append(msgs, t...)
	}
	return msgs
}

// turnBytes measures a turn's messages: their content, tool call IDs,
// names and arguments.
func turnBytes(ms []model.Message) int {
	n := 0
	for _, m := range ms {
		n += len(m.Content) + len(m.ToolCallID)
		for _, c := range m.ToolCalls {
			n += len(c.ID) + len(c.Name) + len(c.Arguments)
		}
	}
	return n
}

// ReplayEvents rebuilds the events of the stored task taskID of session
// sessionID from its records, and its outcome when its root agent
// settled (nil for a task a crash cut off).
func ReplayEvents(recs []ledger.Record, taskID, sessionID string) ([]event.Event, *event.Outcome, error) {
	var root string
	if len(recs) > 0 && recs[0].Task != nil {
		root = recs[0].Task.RootAgentID
	}
	var events []event.Event
	var outcome *event.Outcome
	for _, r := range recs {
		if r.Kind != ledger.RecordEvent {
			continue
		}
		ev := event.Event{SchemaVersion: event.SchemaVersion, Seq: r.Event.Seq, RootSeq: r.Event.RootSeq, TimestampUnixMicros: r.Event.Time.UnixMicro(),
			RunID: taskID, SessionID: sessionID,
			Agent: event.AgentRef{AgentID: r.Event.AgentID, RootRunID: taskID, RootSessionID: sessionID, ParentAgentID: r.Event.ParentID, Kind: "root"}}
		if r.Event.AgentID != root {
			ev.Agent.Kind, ev.Agent.Depth = string(children.KindLocal), 1
		}
		if len(r.Event.Payload) > 0 {
			if err := json.Unmarshal(r.Event.Payload, &ev.EventData); err != nil {
				return events, outcome, fmt.Errorf("pablo: session task %s: event %d: %w", taskID, r.Event.RootSeq, err)
			}
		}
		ev.Type = event.Type(r.Event.Type)
		if ev.Type == event.RunFinished && ev.Outcome != nil && ev.Agent.AgentID == root {
			outcome = ev.Outcome
		}
		events = append(events, ev)
	}
	return events, outcome, nil
}
