package acp

import (
	"encoding/json"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/event"
)

// replay sends a loaded session's earlier turns as updates, oldest first:
// each turn's prompt as a user_message_chunk, then its events projected
// as they were when it ran. A turn cut off by a crash ends with its calls
// of unknown outcome, each a failed tool_call_update whose rawOutput says
// the outcome is unknown: they are reported, never replayed.
func (c *conn) replay(sessionID, cwd string, ext extensions, turns []pablo.SessionTurn) error {
	p := newProjector(sessionID, ext, c.opts.Deployment, c.opts.CoalesceBytes)
	p.maxRaw, p.cwd = c.opts.MaxLine-rawMargin, cwd
	for i := range turns {
		turn := &turns[i]
		p.fresh = true
		if turn.Prompt != "" {
			b := p.head()
			b = append(b, `{"content":{"text":`...)
			b = appendJSONString(b, turn.Prompt)
			b = append(b, `,"type":"text"},"sessionUpdate":"user_message_chunk"}`...)
			var first *event.Event
			if len(turn.Events) > 0 {
				first = &turn.Events[0]
			} else {
				first = &event.Event{RunID: turn.TaskID, SessionID: sessionID}
			}
			if err := c.emit(p.tail(b, first, first)); err != nil {
				return err
			}
		}
		for j := range turn.Events {
			if err := p.event(&turn.Events[j], c.emit); err != nil {
				return err
			}
		}
		if err := p.flush(c.emit); err != nil {
			return err
		}
		for _, u := range turn.Unknown {
			raw, _ := json.Marshal(map[string]any{"status": "unknown_outcome", "delivery": u.Delivery, "name": u.Name})
			upd := sdk.SessionToolCallUpdate{SessionUpdate: "tool_call_update", ToolCallId: sdk.ToolCallId(u.CallID),
				Status: sdk.Ptr(sdk.ToolCallStatusFailed), RawOutput: json.RawMessage(raw)}
			ev := &event.Event{RunID: turn.TaskID, SessionID: sessionID}
			if !p.started[u.CallID] {
				p.started[u.CallID] = true
				tc := sdk.SessionUpdateToolCall{SessionUpdate: "tool_call", ToolCallId: sdk.ToolCallId(u.CallID), Title: u.Name,
					Kind: toolKind(u.Name), Status: sdk.ToolCallStatusFailed, RawOutput: json.RawMessage(raw)}
				if err := c.emit(p.update(ev, ev, tc)); err != nil {
					return err
				}
				continue
			}
			if err := c.emit(p.update(ev, ev, upd)); err != nil {
				return err
			}
		}
	}
	return nil
}
