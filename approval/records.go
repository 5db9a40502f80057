package approval

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger"
)

// Record is one approval request of a task and how it was
// answered, as the task's ledger retains them: who asked (the agent),
// about exactly which call (its ID, capability, arguments digest,
// resources and effect), under which rule, the answer, the channel it
// came from and what the call it bound then did. Every value is masked,
// as the events were.
type Record struct {
	TaskID          string                   `json:"task_id"`
	RequestID       string                   `json:"request_id"`
	AgentID         string                   `json:"agent_id"`
	CallID          string                   `json:"call_id"`
	Capability      string                   `json:"capability"`
	ArgumentsDigest string                   `json:"arguments_digest"`
	Resources       []event.ApprovalResource `json:"resources,omitempty"`
	Effect          string                   `json:"effect"`
	// Layer and RuleID name the decision that asked for approval.
	Layer  string `json:"layer,omitempty"`
	RuleID string `json:"rule_id,omitempty"`
	// Answer is the approval.answered event's answer (allow_once,
	// allow_for_task, reject, reject_for_task, unanswered, no_channel);
	// empty when the task ended before it was recorded.
	Answer     string `json:"answer,omitempty"`
	Channel    string `json:"channel,omitempty"`
	LateAnswer string `json:"late_answer,omitempty"`
	// IdempotencyKey and CallStatus are the bound call's, from its own
	// records: the key its side effect carried and how it settled
	// (empty while it never settled).
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	CallStatus     string `json:"call_status,omitempty"`
}

// Records reads the approval requests of one task from store, in the
// order they were asked: a host's audit of who approved what, from the
// ledger alone (after a restart, on another host). It reads the
// approval.requested and approval.answered events the ledger retained
// (a store keeps event payloads) and binds each to its call's records.
func Records(ctx context.Context, store ledger.Store, taskID string) ([]Record, error) {
	recs, err := store.Records(ctx, taskID)
	if err != nil {
		return nil, err
	}
	type callKey struct{ agent, call string }
	var out []Record
	byRequest := map[callKey]int{} // (agent, request ID) → index in out
	calls := map[callKey]*ledger.CallRecord{}
	settled := map[callKey]string{}
	for _, r := range recs {
		switch r.Kind {
		case ledger.RecordCall:
			if c := r.Call; c != nil && c.Kind == ledger.ToolCallKind {
				k := callKey{c.AgentID, c.CallID}
				if c.State == ledger.CallAdmitted {
					calls[k] = c
				} else if c.State == ledger.CallSettled {
					settled[k] = c.Status
				}
			}
		case ledger.RecordEvent:
			typ := event.Type(r.Event.Type)
			if typ != event.ApprovalRequested && typ != event.ApprovalAnswered {
				continue
			}
			var data event.EventData
			if err := json.Unmarshal(r.Event.Payload, &data); err != nil || data.Approval == nil {
				return nil, fmt.Errorf("approval: task %s: the %s event at root_seq %d holds no approval", taskID, typ, r.Event.RootSeq)
			}
			a := data.Approval
			k := callKey{r.Event.AgentID, a.RequestID}
			i, seen := byRequest[k]
			if !seen {
				i = len(out)
				byRequest[k] = i
				out = append(out, Record{TaskID: taskID, RequestID: a.RequestID, AgentID: r.Event.AgentID, CallID: a.CallID,
					Capability: a.Capability, ArgumentsDigest: a.ArgumentsDigest, Resources: a.Resources, Effect: a.Effect})
			}
			if typ == event.ApprovalRequested {
				out[i].Layer, out[i].RuleID = a.Layer, a.RuleID
			} else {
				out[i].Answer, out[i].Channel, out[i].LateAnswer = a.Answer, a.Channel, a.LateAnswer
			}
		}
	}
	for i := range out {
		k := callKey{out[i].AgentID, out[i].CallID}
		if c := calls[k]; c != nil {
			if c.ArgumentsDigest != out[i].ArgumentsDigest {
				return nil, fmt.Errorf("approval: task %s: approval %s names arguments %s, but its call %s was admitted with %s",
					taskID, out[i].RequestID, out[i].ArgumentsDigest, c.CallID, c.ArgumentsDigest)
			}
			out[i].IdempotencyKey = c.IdempotencyKey
		}
		out[i].CallStatus = settled[k]
	}
	return out, nil
}
