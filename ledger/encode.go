package ledger

import (
	"strconv"
	"time"

	"github.com/pabloagent/pablo/internal/jsonx"
)

// encodeRecord returns the JSON stored for r. Event records, the bulk of any
// ledger, are written by hand (same shape as encoding/json would produce);
// the rest go through encoding/json.
func encodeRecord(r *Record) ([]byte, error) {
	if r.Kind == RecordCall && r.Call != nil && plainCall(r) {
		return appendCallRecord(r), nil
	}
	if r.Kind != RecordEvent || r.Task != nil || r.Agent != nil || r.Call != nil ||
		r.Decision != nil || r.Result != nil || r.Finish != nil || r.ProcessGroup != nil || r.Snapshot != nil {
		// Not json.Marshal: it would HTML-escape a result's Data, whose
		// bytes are its content address.
		return jsonx.Marshal(r)
	}
	if len(r.Event.Payload) > 0 && !validJSON(r.Event.Payload) {
		return nil, &InvalidError{Field: "event payload", Reason: "not valid JSON"}
	}
	e := &r.Event
	// The fixed text and two RFC 3339 times take under 200 bytes; the
	// rest is the strings (escaping may still grow them) and the payload.
	b := make([]byte, 0, 200+len(r.TaskID)+len(e.RootID)+len(e.ParentID)+len(e.AgentID)+len(e.Type)+len(e.Payload))
	b = append(b, `{"task_id":`...)
	b = jsonx.AppendString(b, r.TaskID)
	b = append(b, `,"n":`...)
	b = strconv.AppendUint(b, r.N, 10)
	b = append(b, `,"kind":"event","time":"`...)
	b = r.Time.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","event":{"root_seq":`...)
	b = strconv.AppendUint(b, e.RootSeq, 10)
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, e.Seq, 10)
	b = append(b, `,"root_id":`...)
	b = jsonx.AppendString(b, e.RootID)
	if e.ParentID != "" {
		b = append(b, `,"parent_id":`...)
		b = jsonx.AppendString(b, e.ParentID)
	}
	b = append(b, `,"agent_id":`...)
	b = jsonx.AppendString(b, e.AgentID)
	b = append(b, `,"type":`...)
	b = jsonx.AppendString(b, e.Type)
	b = append(b, `,"time":"`...)
	b = e.Time.AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	if len(e.Payload) > 0 {
		b = append(b, `,"payload":`...)
		b = append(b, e.Payload...)
	}
	return append(b, "}}"...), nil
}

// plainCall reports whether r is a call record with nothing but its call
// and, in the call, none of what a model call adds (bounds, usage, cost)
// nor an approval source: every transition of a tool call, which
// appendCallRecord writes by hand, as the bulk of a busy task's records.
func plainCall(r *Record) bool {
	c := r.Call
	e := &r.Event
	return e.RootSeq == 0 && e.Seq == 0 && e.RootID == "" && e.ParentID == "" && e.AgentID == "" && e.Type == "" && e.Time == (time.Time{}) && e.Payload == nil &&
		r.Task == nil && r.Agent == nil && r.Decision == nil && r.Result == nil &&
		r.Finish == nil && r.ProcessGroup == nil && r.Snapshot == nil &&
		c.TokenBound == (Limit{}) && c.CostBound == (Limit{}) && c.Usage == (Usage{}) &&
		c.CostMicroUSD == (Count{}) && c.ChargedTokens == (Count{}) && c.ChargedCost == (Count{}) &&
		c.Decision.ApprovalBy == nil && c.Decision.Egress == nil && c.Decision.MissingRole == ""
}

// appendCallRecord writes a plain call record (plainCall) as encoding/json
// writes it through CallRecord.MarshalJSON, field for field, without the
// copy of the call that MarshalJSON boxes and the second buffer the outer
// encoding compacts it into.
func appendCallRecord(r *Record) []byte {
	c := r.Call
	d := decisionOf(c.Decision)
	b := make([]byte, 0, 320+len(r.TaskID)+len(c.CallID)+len(c.AgentID)+len(c.Name)+len(c.ArgumentsDigest)+
		len(c.IdempotencyKey)+len(d.Layer)+len(d.RuleID)+len(d.Reason)+len(d.Sandbox)+len(c.Status)+len(c.Delivery)+len(c.Result)+len(c.Error))
	b = append(b, `{"task_id":`...)
	b = jsonx.AppendString(b, r.TaskID)
	b = append(b, `,"n":`...)
	b = strconv.AppendUint(b, r.N, 10)
	b = append(b, `,"kind":"call","time":"`...)
	b = r.Time.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","call":{"call_id":`...)
	b = jsonx.AppendString(b, c.CallID)
	b = append(b, `,"agent_id":`...)
	b = jsonx.AppendString(b, c.AgentID)
	b = append(b, `,"kind":`...)
	b = jsonx.AppendString(b, string(c.Kind))
	b = append(b, `,"state":`...)
	b = jsonx.AppendString(b, string(c.State))
	if c.Step != 0 {
		b = append(b, `,"step":`...)
		b = strconv.AppendUint(b, c.Step, 10)
	}
	b = appendNonEmpty(b, `,"name":`, c.Name)
	b = appendNonEmpty(b, `,"arguments_digest":`, c.ArgumentsDigest)
	if c.InputBytes != 0 {
		b = append(b, `,"input_bytes":`...)
		b = strconv.AppendUint(b, c.InputBytes, 10)
	}
	b = appendNonEmpty(b, `,"idempotency_key":`, c.IdempotencyKey)
	if d != (decisionJSON{}) {
		b = append(b, `,"decision":{"allowed":`...)
		b = strconv.AppendBool(b, d.Allowed)
		b = appendNonEmpty(b, `,"layer":`, d.Layer)
		b = appendNonEmpty(b, `,"rule_id":`, d.RuleID)
		b = appendNonEmpty(b, `,"reason":`, d.Reason)
		if d.NeedsApproval {
			b = append(b, `,"needs_approval":true`...)
		}
		b = appendNonEmpty(b, `,"sandbox":`, d.Sandbox)
		b = append(b, '}')
	}
	b = appendNonEmpty(b, `,"status":`, c.Status)
	b = appendNonEmpty(b, `,"delivery":`, string(c.Delivery))
	if c.OutputBytes != 0 {
		b = append(b, `,"output_bytes":`...)
		b = strconv.AppendUint(b, c.OutputBytes, 10)
	}
	b = appendNonEmpty(b, `,"result":`, string(c.Result))
	b = appendNonEmpty(b, `,"error":`, c.Error)
	if c.Counted {
		b = append(b, `,"counted":true`...)
	}
	return append(b, "}}"...)
}

// appendNonEmpty appends key and s, as omitempty writes a string field.
func appendNonEmpty(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return jsonx.AppendString(append(b, key...), s)
}
