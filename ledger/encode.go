package ledger

import (
	"encoding/json"
	"github.com/pabloagent/pablo/internal/jsonx"
	"strconv"
	"time"
)

// encodeRecord returns the JSON stored for r. Event records, the bulk of any
// ledger, are written by hand (same shape as encoding/json would produce);
// the rest go through encoding/json.
func encodeRecord(r *Record) ([]byte, error) {
	if r.Kind != RecordEvent || r.Task != nil || r.Agent != nil || r.Call != nil ||
		r.Decision != nil || r.Result != nil || r.Finish != nil || r.ProcessGroup != nil || r.Snapshot != nil {
		return json.Marshal(r)
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
