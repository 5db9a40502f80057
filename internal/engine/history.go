package engine

import (
	"fmt"

	"github.com/pabloagent/pablo/internal/idset"
	"github.com/pabloagent/pablo/model"
)

// requestBytes measures a request: instructions, messages and tool
// descriptors. It walks every message.
func requestBytes(req *model.Request) uint64 {
	n := uint64(len(req.Instructions))
	for i := range req.Messages {
		n += messageBytes(&req.Messages[i])
	}
	return n + toolDefsBytes(req.Tools)
}

// messageBytes is one message's part of requestBytes.
func messageBytes(m *model.Message) uint64 {
	n := len(m.Content) + len(m.ToolCallID) + 16
	for _, c := range m.ToolCalls {
		n += len(c.ID) + len(c.Name) + len(c.Arguments)
	}
	return uint64(n)
}

func toolDefsBytes(defs []model.ToolDef) uint64 {
	n := 0
	for _, d := range defs {
		n += len(d.Name) + len(d.Description) + len(d.Parameters)
	}
	return uint64(n)
}

// addHistory appends to the task's history, which only ever grows, and
// keeps its running measure, so that measuring a request costs the same at
// the last turn as at the first.
func (s *step) addHistory(ms ...model.Message) {
	for i := range ms {
		s.histBytes += messageBytes(&ms[i])
		if ms[i].Role == model.RoleAssistant {
			s.histTurns++
		}
		for _, c := range ms[i].ToolCalls {
			s.noteWireID(c.ID)
		}
	}
	s.history = append(s.history, ms...)
}

// requestBytes is requestBytes(req) from the running measure when req holds
// the task's history, as every request the loop makes does; any other
// request is walked (and counted in Task.historyWalks).
func (s *step) requestBytes(req *model.Request) uint64 {
	h := s.history
	if len(req.Messages) != len(h) || (len(h) > 0 && &req.Messages[0] != &h[0]) {
		if !s.conf.child {
			s.t.historyWalks++ // the root's step alone writes it
		}
		return requestBytes(req)
	}
	if len(req.Tools) != len(s.toolDefs) || (len(req.Tools) > 0 && &req.Tools[0] != &s.toolDefs[0]) {
		s.toolDefs, s.defsBytes = req.Tools, toolDefsBytes(req.Tools)
	}
	return uint64(len(req.Instructions)) + s.histBytes + s.defsBytes
}

// RequestBytes is the measure of req the ledger's context_bytes ceiling
// counts, walked over its messages and tools.
func RequestBytes(req *model.Request) uint64 { return requestBytes(req) }

// HistoryWalks is how many of the settled task's model requests were
// measured by walking their messages; the loop's own never are.
func (t *Task) HistoryWalks() int {
	<-t.finished
	return t.historyWalks
}

// conversation is the history an agent's requests carry and its running
// measure.
type conversation struct {
	history   []model.Message // append-only: grown by addHistory alone
	histBytes uint64          // messageBytes of every message of history
	histTurns int             // the assistant messages the task has added to history, after the conversation it continues (compaction does not lower it)
	// wireIDs holds every tool-call ID the conversation has used on the
	// wire (pairCalls keeps the ones it adds unique), in a set the
	// collector does not scan however long the task.
	wireIDs   idset.Set
	defsBytes uint64          // the tool descriptors' measure, while defs is toolDefs
	toolDefs  []model.ToolDef // the defs defsBytes measures
}

// transcript is what the task added to its conversation: its input and
// every message after the pinned prefix (the carried conversation, the
// input and the Skills' instructions, which the next task adds afresh).
// A compaction keeps that prefix, so the summary and the turns since are
// what follows it. Nil when the input never joined the history.
func (s *step) transcript() []model.Message {
	skip := len(s.conf.history) + 1 + len(s.conf.context)
	if s.conf.child || len(s.history) < skip {
		return nil
	}
	out := make([]model.Message, 0, 1+len(s.history)-skip)
	out = append(out, model.Message{Role: model.RoleUser, Content: s.conf.input})
	// Each message's calls are the transcript's own, not the model's, cut
	// from one array: a long task's transcript is one allocation, not one
	// a turn.
	n := 0
	for i := range s.history[skip:] {
		n += len(s.history[skip+i].ToolCalls)
	}
	calls := make([]model.ToolCall, 0, n)
	for _, m := range s.history[skip:] {
		if m.ToolCalls != nil {
			at := len(calls)
			calls = append(calls, m.ToolCalls...)
			m.ToolCalls = calls[at:len(calls):len(calls)]
		}
		out = append(out, m)
	}
	return out
}

// checkConversation accepts the conversation a task continues: user and
// assistant messages, and tool results each answering a call of the
// assistant message before it, every call answered before the next user
// or assistant message. It grants nothing: a call in it is history, never
// run again.
func checkConversation(h []model.Message) error {
	open := map[string]bool{} // the calls of the last assistant message not yet answered
	for i, m := range h {
		bad := func(why string) error {
			return fmt.Errorf("pablo: TaskRequest.History[%d]: %s", i, why)
		}
		switch m.Role {
		case model.RoleUser, model.RoleAssistant:
			if len(open) > 0 {
				return bad("a tool call of the assistant message before it has no result")
			}
			if m.ToolCallID != "" || (m.Role == model.RoleUser && len(m.ToolCalls) > 0) {
				return bad("a " + string(m.Role) + " message carries a tool result or a tool call")
			}
			for _, c := range m.ToolCalls {
				if c.ID == "" || open[c.ID] {
					return bad("a tool call without an ID, or with one repeated")
				}
				open[c.ID] = true
			}
		case model.RoleTool:
			if !open[m.ToolCallID] || len(m.ToolCalls) > 0 {
				return bad("a tool result that answers no open call of the assistant message before it")
			}
			delete(open, m.ToolCallID)
		default:
			return bad(fmt.Sprintf("the history a task continues holds user, assistant and tool messages, not %q", m.Role))
		}
	}
	if len(open) > 0 {
		return fmt.Errorf("pablo: TaskRequest.History: the last assistant message has a tool call without a result")
	}
	return nil
}
