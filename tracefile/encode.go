package tracefile

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/internal/jsonx"
)

// Trace records. Each embeds the event and shadows its content fields
// (encoding/json lets the shallower field win), so content is null unless
// captured and byte counts are always present.
type (
	traceText struct {
		event.Event
		Text      *string `json:"text"`
		TextBytes int     `json:"text_bytes"`
	}
	traceToolStarted struct {
		event.Event
		Call traceCall `json:"call"`
	}
	traceCall struct {
		ID             string          `json:"id"`
		Name           string          `json:"name"`
		Arguments      json.RawMessage `json:"arguments"`
		ArgumentsBytes int             `json:"arguments_bytes"`
		Sandbox        string          `json:"sandbox,omitempty"`
	}
	traceToolFinished struct {
		event.Event
		Result      json.RawMessage `json:"result"`
		ResultBytes int             `json:"result_bytes"`
	}
	traceApproval struct {
		event.Event
		Approval traceApprovalBody `json:"approval"`
	}
	// traceApprovalBody is an approval whose arguments (a request's) are
	// content: null unless captured, their byte count always.
	traceApprovalBody struct {
		event.Approval
		Arguments      json.RawMessage `json:"arguments,omitempty"`
		ArgumentsBytes *int            `json:"arguments_bytes,omitempty"`
	}
	traceRunFinished struct {
		event.Event
		Outcome *traceOutcome `json:"outcome"`
	}
	traceOutcome struct {
		event.Outcome
		Output      *string `json:"output"`
		OutputBytes int     `json:"output_bytes"`
	}
)

var jsonNull = json.RawMessage("null")

// plainText reports whether ev is a text delta or a tool output that
// carries nothing but its text and, for an output, its call, name and
// stream: the lines of a streamed answer, which appendText writes by hand.
func plainText(ev *event.Event) bool {
	d := &ev.EventData
	return (d.Type == event.TextDelta || d.Type == event.ToolOutput) &&
		d.Deployment == nil && d.Provider == "" && d.Model == "" && d.ModelRoute == nil &&
		d.Status == "" && d.FinishReason == "" && d.Usage == nil && d.OutputBytes == nil && d.Call == nil &&
		len(d.Result) == 0 && d.Skill == nil && d.Compaction == nil && len(d.Summary) == 0 && d.SummaryBytes == nil && d.Approval == nil && d.Outcome == nil && d.Accounting == nil && d.Masked == 0 && d.RetryInMS == nil && d.Egress == nil && d.Resume == nil && d.RemoteTask == nil
}

// appendText appends the line encode writes for a plainText event,
// with text as its captured (masked) text, field for field in the same
// order, for a fraction of the cost: a streamed answer writes one per
// delta. (The JSON values are the same;
// encoding/json spells U+2028, U+2029 and invalid UTF-8 as escapes.)
func appendText(b []byte, ev *event.Event, capture bool, text string, header []byte) []byte {
	b = append(b, `{"schema_version":`...)
	b = jsonx.AppendString(b, ev.SchemaVersion)
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, ev.Seq, 10)
	b = append(b, `,"root_seq":`...)
	b = strconv.AppendUint(b, ev.RootSeq, 10)
	b = append(b, `,"timestamp_unix_micros":`...)
	b = strconv.AppendInt(b, ev.TimestampUnixMicros, 10)
	b = append(b, header...)
	b = append(b, `,"type":`...)
	b = jsonx.AppendString(b, string(ev.Type))
	for _, f := range [...]struct{ key, value string }{{`,"call_id":`, ev.CallID}, {`,"name":`, ev.Name}, {`,"stream":`, ev.Stream}} {
		if f.value != "" {
			b = append(b, f.key...)
			b = jsonx.AppendString(b, f.value)
		}
	}
	b = append(b, `,"text":`...)
	if capture {
		b = jsonx.AppendString(b, text)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"text_bytes":`...)
	b = strconv.AppendInt(b, int64(len(ev.Text)), 10)
	return append(b, "}\n"...)
}

// header returns appendHeader's bytes for ev, encoded again only when the
// run or the agent changed: every event of an agent has the same. tw.mu
// must be held.
func (tw *Writer) header(ev *event.Event) []byte {
	h := &tw.hdrOf
	if tw.hdr == nil || h.RunID != ev.RunID || h.SessionID != ev.SessionID || h.TraceID != ev.TraceID || h.Agent != ev.Agent {
		tw.hdr = appendHeader(tw.hdr[:0], ev)
		tw.hdrOf = event.Event{RunID: ev.RunID, SessionID: ev.SessionID, TraceID: ev.TraceID, Agent: ev.Agent}
	}
	return tw.hdr
}

// appendHeader appends ev's run and agent fields as a trace line has them,
// from run_id to the end of the agent object.
func appendHeader(b []byte, ev *event.Event) []byte {
	b = append(b, `,"run_id":`...)
	b = jsonx.AppendString(b, ev.RunID)
	b = append(b, `,"session_id":`...)
	b = jsonx.AppendString(b, ev.SessionID)
	b = append(b, `,"trace_id":`...)
	b = jsonx.AppendString(b, ev.TraceID)
	b = append(b, `,"agent":{"agent_id":`...)
	b = jsonx.AppendString(b, ev.Agent.AgentID)
	b = append(b, `,"root_run_id":`...)
	b = jsonx.AppendString(b, ev.Agent.RootRunID)
	b = append(b, `,"root_session_id":`...)
	b = jsonx.AppendString(b, ev.Agent.RootSessionID)
	if ev.Agent.ParentAgentID != "" {
		b = append(b, `,"parent_agent_id":`...)
		b = jsonx.AppendString(b, ev.Agent.ParentAgentID)
	}
	b = append(b, `,"kind":`...)
	b = jsonx.AppendString(b, ev.Agent.Kind)
	b = append(b, `,"depth":`...)
	b = strconv.AppendInt(b, int64(ev.Agent.Depth), 10)
	return append(b, '}')
}

// encode renders ev through encoding/json as one JSONL line (Write's
// plain path writes the same values by hand); content appears only when
// captured and allowed.
func (tw *Writer) encode(ev event.Event, allowContent bool) ([]byte, error) {
	return tw.encodeAs(ev, tw.opts.CaptureContent, allowContent)
}

// encodeAs is encode with content captured when capture (the tool's audit
// level, or CaptureContent) and allowContent say so; a tool call whose
// audit level is none keeps neither content nor its byte counts.
func (tw *Writer) encodeAs(ev event.Event, captured, allowContent bool) ([]byte, error) {
	capture := captured && allowContent
	none := false
	if tw.opts.audited() {
		l, ok := tw.opts.eventLevel(&ev)
		none = ok && l == AuditNone
	}
	var v any = &ev
	switch ev.Type {
	case event.TextDelta, event.ToolOutput:
		r := &traceText{Event: ev, TextBytes: len(ev.Text)}
		if capture {
			s := tw.maskString(ev.Text)
			r.Text = &s
		}
		v = r
	case event.ToolStarted:
		if ev.Call != nil {
			r := &traceToolStarted{Event: ev, Call: traceCall{ID: ev.Call.ID, Name: ev.Call.Name, Arguments: jsonNull, ArgumentsBytes: len(ev.Call.Arguments), Sandbox: ev.Call.Sandbox}}
			if none {
				r.Call.ArgumentsBytes = 0
			}
			if capture && len(ev.Call.Arguments) > 0 {
				r.Call.Arguments = tw.maskJSON(ev.Call.Arguments)
			}
			v = r
		}
	case event.ToolFinished:
		r := &traceToolFinished{Event: ev, Result: jsonNull, ResultBytes: len(ev.Result)}
		if none {
			r.ResultBytes = 0
		} else if len(ev.Result) > 0 {
			if capture {
				r.Result = tw.maskJSON(ev.Result)
			} else {
				r.Result = resultShape(ev.Result)
			}
		}
		v = r
	case event.ApprovalRequested, event.ApprovalAnswered:
		if ev.Approval != nil {
			r := &traceApproval{Event: ev, Approval: traceApprovalBody{Approval: *ev.Approval}}
			if ev.Type == event.ApprovalRequested {
				n := len(ev.Approval.Arguments)
				r.Approval.ArgumentsBytes, r.Approval.Arguments = &n, jsonNull
				if capture && n > 0 {
					r.Approval.Arguments = tw.maskJSON(ev.Approval.Arguments)
				}
			}
			v = r
		}
	case event.RunFinished:
		if ev.Outcome != nil {
			o := &traceOutcome{Outcome: *ev.Outcome}
			if ev.Outcome.Output != nil {
				o.OutputBytes = len(*ev.Outcome.Output)
				if capture {
					s := tw.maskString(*ev.Outcome.Output)
					o.Output = &s
				}
			}
			v = &traceRunFinished{Event: ev, Outcome: o}
		}
	}
	// Without HTML escaping, as appendText writes and as the reference's
	// traces read; Encode ends the line.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func (tw *Writer) maskString(s string) string {
	if tw.opts.Mask == nil {
		return s
	}
	return string(tw.opts.Mask([]byte(s)))
}

// maskJSON masks a JSON value's bytes; a masker that breaks the JSON
// yields null rather than a corrupt line.
func (tw *Writer) maskJSON(raw json.RawMessage) json.RawMessage {
	if tw.opts.Mask == nil {
		return raw
	}
	out := tw.opts.Mask(append([]byte(nil), raw...))
	if !json.Valid(out) {
		return jsonNull
	}
	return out
}

// resultShape keeps a tool result's status and policy_rule and nulls every
// other member: the shape without the content.
func resultShape(raw json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return jsonNull
	}
	for k := range m {
		if k != "status" && k != "policy_rule" {
			m[k] = jsonNull
		}
	}
	out, err := json.Marshal(m)
	if err != nil {
		return jsonNull
	}
	return out
}
