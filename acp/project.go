package acp

import (
	"encoding/json"
	"strconv"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger/outcome"
)

// projector turns the events of one prompt into session/update frames, as
// REFERENCE §3.3 projects them:
//
//	assistant.text.delta → agent_message_chunk (coalesced, below)
//	tool.started         → tool_call (kind, status pending, rawInput)
//	first tool.output    → tool_call_update in_progress
//	tool.finished        → tool_call_update completed or failed, rawOutput
//	model.started/finished → _pablo/v1/model_attempt (pablo/model-route-v1)
//	skill.activated      → _pablo/v1/skill (pablo/skills-v1)
//	run.started, run.finished, other tool.output → nothing (run.finished is
//	the prompt's answer)
//
// Text: the first delta of each model operation goes out at once; later
// adjacent deltas gather until CoalesceBytes, the window (which the
// forwarder times) or any other event. Each frame's pablo/v2 metadata
// names the inclusive native seq range it covers.
type projector struct {
	sessionID  string
	ext        extensions
	deployment []byte // the deployment's JSON, encoded once
	maxBytes   int
	// maxRaw bounds a call's rawInput and rawOutput in a frame (0: none):
	// past it the update carries what was left out instead, so the frame
	// stays under the line bound and the call still settles.
	maxRaw int
	// cwd is the session's working directory as the client sent it: the
	// base of the locations and diff paths a tool call carries.
	cwd string

	fresh    bool // the next delta is the first of a model operation
	tree     bool // a child's event was seen: metadata names agents
	text     []byte
	pending  bool
	from, to event.Event // the first and last event of the pending text (metadata only)

	started    map[string]bool   // calls whose tool_call went out
	inProgress map[string]bool   // calls whose in_progress went out
	names      map[string]string // the capability of each call started
	buf        []byte
}

func newProjector(sessionID string, ext extensions, dep *event.DeploymentRef, maxBytes int) *projector {
	p := &projector{sessionID: sessionID, ext: ext, maxBytes: maxBytes, fresh: true,
		started: map[string]bool{}, inProgress: map[string]bool{}, names: map[string]string{}}
	if dep != nil {
		p.deployment, _ = json.Marshal(dep)
	}
	return p
}

// rawMargin is the room a frame keeps beside a call's raw input or
// output: the update's other fields and the pablo/v2 metadata.
const rawMargin = 64 << 10

// emitFunc hands one frame (newline included) to the writer and waits for
// it to be written.
type emitFunc func(frame []byte) error

// event projects ev. It reports whether text is left pending, for the
// forwarder to time.
func (p *projector) event(ev *event.Event, emit emitFunc) error {
	if ev.Agent.Depth > 0 {
		// A supervised child's event. A generic client sees the root's
		// subagent call and its result only; a pablo/v2 client also sees
		// the child's own updates, its agent and root_seq in their
		// metadata and its calls under IDs of their own.
		if !p.ext.v2 {
			return nil
		}
		p.tree = true
		if err := p.flush(emit); err != nil {
			return err
		}
		c := *ev
		if c.Call != nil {
			call := *c.Call
			call.ID = c.Agent.AgentID + "/" + call.ID
			c.Call = &call
		}
		if c.CallID != "" {
			c.CallID = c.Agent.AgentID + "/" + c.CallID
		}
		if c.Type == event.TextDelta {
			// Never coalesced with the root's text: each chunk is one
			// agent's.
			if c.Text == "" {
				return nil
			}
			return emit(p.chunk(&c, &c, c.Text))
		}
		if c.Type == event.ModelStarted {
			defer func(fresh bool) { p.fresh = fresh }(p.fresh) // the root's text keeps its own
		}
		ev = &c
	}
	if ev.Type == event.TextDelta {
		return p.delta(ev, emit)
	}
	if err := p.flush(emit); err != nil {
		return err
	}
	switch ev.Type {
	case event.ModelStarted, event.ModelFinished:
		if ev.Type == event.ModelStarted {
			p.fresh = true
		}
		if p.ext.route {
			return emit(p.extension(MethodModelAttempt, ev, nil))
		}
	case event.SkillActivated:
		if p.ext.skills {
			return emit(p.extension(MethodSkill, ev, ev.Skill))
		}
	case event.CompactionStarted, event.CompactionFinished:
		if p.ext.compaction && ev.Compaction != nil {
			return emit(p.compaction(ev))
		}
	case event.ToolStarted:
		if ev.Call == nil {
			return nil
		}
		p.started[ev.Call.ID] = true
		p.names[ev.Call.ID] = ev.Call.Name
		u := sdk.SessionUpdateToolCall{SessionUpdate: "tool_call", ToolCallId: sdk.ToolCallId(ev.Call.ID),
			Title: ev.Call.Name, Kind: toolKind(ev.Call.Name), Status: sdk.ToolCallStatusPending}
		if len(ev.Call.Arguments) > 0 {
			u.RawInput = p.raw(ev.Call.Arguments, "")
			u.Locations, u.Content = startRender(p.cwd, ev.Call.Name, ev.Call.Arguments)
			if p.over(ev.Call.Arguments) {
				u.Content = nil // the arguments alone fill the frame
			}
		}
		return emit(p.update(ev, ev, u))
	case event.ToolOutput:
		if p.inProgress[ev.CallID] || !p.started[ev.CallID] {
			return nil
		}
		p.inProgress[ev.CallID] = true
		u := sdk.SessionToolCallUpdate{SessionUpdate: "tool_call_update", ToolCallId: sdk.ToolCallId(ev.CallID),
			Status: sdk.Ptr(sdk.ToolCallStatusInProgress)}
		return emit(p.update(ev, ev, u))
	case event.ToolFinished:
		status := sdk.ToolCallStatusFailed
		var r struct {
			Status string `json:"status"`
		}
		if json.Unmarshal(ev.Result, &r) == nil && r.Status == string(outcome.ToolCompleted) {
			status = sdk.ToolCallStatusCompleted
		}
		var raw any
		if len(ev.Result) > 0 {
			raw = p.raw(ev.Result, r.Status)
		}
		if !p.started[ev.CallID] {
			// A call refused before it was admitted has no tool_call yet:
			// it is announced and settled in one update.
			p.started[ev.CallID] = true
			u := sdk.SessionUpdateToolCall{SessionUpdate: "tool_call", ToolCallId: sdk.ToolCallId(ev.CallID),
				Title: ev.Name, Kind: toolKind(ev.Name), Status: status, RawOutput: raw}
			return emit(p.update(ev, ev, u))
		}
		u := sdk.SessionToolCallUpdate{SessionUpdate: "tool_call_update", ToolCallId: sdk.ToolCallId(ev.CallID),
			Status: sdk.Ptr(status), RawOutput: raw}
		if !p.over(ev.Result) {
			name := p.names[ev.CallID]
			if name == "" {
				name = ev.Name
			}
			u.Locations, u.Content = finishRender(p.cwd, name, ev.Result)
		}
		return emit(p.update(ev, ev, u))
	}
	return nil
}

// raw is a call's input or output as a frame carries it: itself, or past
// maxRaw a note of its size (and the result's status).
func (p *projector) raw(v json.RawMessage, status string) any {
	if p.maxRaw <= 0 || len(v) <= p.maxRaw {
		return v
	}
	cut := map[string]any{"truncated": true, "bytes": len(v)}
	if status != "" {
		cut["status"] = status
	}
	return cut
}

// over reports whether v alone is past maxRaw: then the update carries no
// content rendered from it either, so the frame stays under the bound.
func (p *projector) over(v json.RawMessage) bool { return p.maxRaw > 0 && len(v) > p.maxRaw/2 }

// toolKind is the ACP kind of a capability.
func toolKind(name string) sdk.ToolKind {
	switch name {
	case "shell.run":
		return sdk.ToolKindExecute
	case "fs.read", "fs.list", "fs.search":
		return sdk.ToolKindRead
	case "fs.write", "fs.edit":
		return sdk.ToolKindEdit
	}
	return sdk.ToolKindOther
}

func (p *projector) delta(ev *event.Event, emit emitFunc) error {
	if ev.Text == "" {
		return nil
	}
	if p.fresh {
		p.fresh = false
		return emit(p.chunk(ev, ev, ev.Text))
	}
	if !p.pending {
		p.pending = true
		p.from = *ev
		p.text = p.text[:0]
	}
	p.to = *ev
	p.text = append(p.text, ev.Text...)
	if len(p.text) >= p.maxBytes {
		return p.flush(emit)
	}
	return nil
}

// flush sends the pending text, if any.
func (p *projector) flush(emit emitFunc) error {
	if !p.pending {
		return nil
	}
	p.pending = false
	return emit(p.chunk(&p.from, &p.to, string(p.text)))
}

// chunk encodes an agent_message_chunk. Its update is written by hand, in
// the bytes the SDK's encoder produces (its keys sorted, HTML escaped),
// which spends two encoding passes and a map per update
// (TestChunkEncodingMatchesTheSDK holds the two equal).
func (p *projector) chunk(from, to *event.Event, text string) []byte {
	b := p.head()
	b = append(b, `{"content":{"text":`...)
	b = appendJSONString(b, text)
	b = append(b, `,"type":"text"},"sessionUpdate":"agent_message_chunk"}`...)
	return p.tail(b, from, to)
}

// update encodes any other update.
func (p *projector) update(from, to *event.Event, u any) []byte {
	b := p.head()
	enc, err := json.Marshal(u)
	if err != nil {
		// The updates are built here from valid JSON: unreachable.
		enc = []byte(`{}`)
	}
	b = append(b, enc...)
	return p.tail(b, from, to)
}

func (p *projector) head() []byte {
	b := p.buf[:0]
	b = append(b, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":`...)
	b = appendJSONString(b, p.sessionID)
	return append(b, `,"update":`...)
}

func (p *projector) tail(b []byte, from, to *event.Event) []byte {
	if p.ext.v2 {
		b = append(b, `,"_meta":{"pablo/v2":`...)
		b = p.correlation(b, from, to)
		b = append(b, '}')
	}
	b = append(b, "}}\n"...)
	p.buf = b
	// The frame is handed to the writer and written before the next is
	// built, so it can share the buffer; callers that keep a frame copy it.
	return b
}

// extension encodes a _pablo/v1/* notification: the session, the
// correlation and the event's own record.
func (p *projector) extension(method string, ev *event.Event, skill any) []byte {
	b := p.buf[:0]
	b = append(b, `{"jsonrpc":"2.0","method":`...)
	b = appendJSONString(b, method)
	b = append(b, `,"params":{"sessionId":`...)
	b = appendJSONString(b, p.sessionID)
	b = append(b, `,"type":`...)
	b = appendJSONString(b, string(ev.Type))
	if skill != nil {
		enc, _ := json.Marshal(skill)
		b = append(b, `,"skill":`...)
		b = append(b, enc...)
		// Instructions are content: never sent (the reference's
		// content-free default).
		b = append(b, `,"instructions":null,"content_redacted":true`...)
	}
	b = append(b, `,"pablo/v2":`...)
	b = p.correlation(b, ev, ev)
	b = append(b, "}}\n"...)
	p.buf = b
	return b
}

// compaction encodes a _pablo/v1/compaction notification: the session,
// the event's type, its compaction-v1 record and summary_bytes, the
// summary as null (content is never sent: the ACP server has no content
// capture) and the correlation, whose optional compaction member is the
// same record.
func (p *projector) compaction(ev *event.Event) []byte {
	b := p.buf[:0]
	b = append(b, `{"jsonrpc":"2.0","method":`...)
	b = appendJSONString(b, MethodCompaction)
	b = append(b, `,"params":{"sessionId":`...)
	b = appendJSONString(b, p.sessionID)
	b = append(b, `,"type":`...)
	b = appendJSONString(b, string(ev.Type))
	enc, _ := json.Marshal(ev.Compaction)
	b = append(b, `,"compaction":`...)
	b = append(b, enc...)
	b = append(b, `,"summary":null,"summary_bytes":`...)
	n := "0"
	if ev.SummaryBytes != nil {
		n = *ev.SummaryBytes
	}
	b = appendJSONString(b, n)
	b = append(b, `,"content_redacted":true,"pablo/v2":`...)
	b = p.correlation(b, ev, ev)
	b = append(b, "}}\n"...)
	p.buf = b
	return b
}

// correlation appends the pablo/v2 correlation metadata of the events
// from..to.
func (p *projector) correlation(b []byte, from, to *event.Event) []byte {
	b = append(b, `{"schema_version":`...)
	b = appendJSONString(b, event.SchemaVersion)
	b = append(b, `,"run_id":`...)
	b = appendJSONString(b, from.RunID)
	b = append(b, `,"session_id":`...)
	b = appendJSONString(b, from.SessionID)
	b = append(b, `,"seq_start":`...)
	b = strconv.AppendUint(b, from.Seq, 10)
	b = append(b, `,"seq_end":`...)
	b = strconv.AppendUint(b, to.Seq, 10)
	b = append(b, `,"timestamp_unix_micros":`...)
	b = strconv.AppendInt(b, from.TimestampUnixMicros, 10)
	b = append(b, `,"trace_id":`...)
	b = appendJSONString(b, from.TraceID)
	if p.deployment != nil {
		b = append(b, `,"deployment":`...)
		b = append(b, p.deployment...)
	}
	if from.ModelRoute != nil {
		enc, _ := json.Marshal(from.ModelRoute)
		b = append(b, `,"model_route":`...)
		b = append(b, enc...)
	}
	if from.Compaction != nil {
		// The compaction-v1 record, as the reference lists it among the
		// optional members; it holds no summary text.
		enc, _ := json.Marshal(from.Compaction)
		b = append(b, `,"compaction":`...)
		b = append(b, enc...)
	}
	if p.tree || from.Agent.Depth > 0 {
		// Once the prompt's tree has children, every update names its
		// agent and its place in the tree's order.
		enc, _ := json.Marshal(from.Agent)
		b = append(b, `,"agent":`...)
		b = append(b, enc...)
		b = append(b, `,"root_seq":`...)
		b = strconv.AppendUint(b, from.RootSeq, 10)
	}
	return append(b, '}')
}

// appendJSONString appends s as encoding/json writes a string (HTML
// characters escaped, invalid UTF-8 replaced by U+FFFD).
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' || c >= 0x80 {
			// Invalid UTF-8 becomes U+FFFD as itself, as the SDK's second
			// encoding pass writes it (not as \ufffd).
			enc, _ := json.Marshal(strings.ToValidUTF8(s, "\uFFFD"))
			return append(b, enc...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
