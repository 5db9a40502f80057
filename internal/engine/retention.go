package engine

import (
	"bytes"
	"encoding/json"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/ledger/outcome"
	"github.com/pabloagent/pablo/model"
)

// AuditNone is the audit level (seed 002) under which the ledger retains
// no content of a capability's calls: its arguments, live output and
// result are replaced in every ledger record by a marker saying so,
// while the call's identity, tool, status, digests, sizes and outcome
// are kept, as accounting and resume need them. Every other level
// (metadata, content) retains the content, masked, as a resume gives it
// back to the model.
const AuditNone = "none"

// CodeNotRetained is the code of what a resumed task's model gets in
// place of content the ledger did not retain under audit level none.
const CodeNotRetained = "not_retained"

// notRetainedArguments stands in the ledger for the arguments of a call
// whose capability is at audit level none: in its recorded model turn,
// its tool.started event and its approval.requested event. It is a JSON
// object, so a resumed history that carries it is still one a provider
// takes.
const notRetainedArguments = `{"not_retained":{"audit_level":"none"}}`

// notRetainedResult is what the ledger keeps in place of the result of a
// call whose capability is at audit level none, and so what a resumed
// task's model gets for it: the call's status and the size and digest of
// the (masked) result it was given when the call ran, and why the result
// is not there. The call is never run again.
type notRetainedResult struct {
	Status      string      `json:"status"`
	NotRetained notRetained `json:"not_retained"`
}

// notRetained says what was not retained, and why.
type notRetained struct {
	AuditLevel   string `json:"audit_level"`
	ResultBytes  int    `json:"result_bytes"`
	ResultDigest string `json:"result_digest"`
	Message      string `json:"message"`
}

// notRetainedMessage is the marker's message to a resumed model.
const notRetainedMessage = "this call ran and its result was given to you when it ran; the deployment's audit level for this tool is none, " +
	"so the ledger did not retain the result and a resumed task cannot give it back. The call is not run again: " +
	"call the tool again only if you need its result and repeating it is safe."

// unretained reports whether the ledger retains no content of the calls
// of capability id: its audit level is none.
func (s *step) unretained(id authority.ID) bool {
	f := s.t.rt.opts.AuditLevel
	return f != nil && f(string(id)) == AuditNone
}

// notRetainedJSON is the marker the ledger keeps in place of result, a
// call's result object (canonical JSON, masked) of status.
func notRetainedJSON(status string, result []byte) []byte {
	b, _ := json.Marshal(notRetainedResult{Status: status, NotRetained: notRetained{AuditLevel: AuditNone,
		ResultBytes: len(result), ResultDigest: sha256Tag(result), Message: notRetainedMessage}})
	return b
}

// isNotRetained reports whether args are the marker a recorded turn
// keeps for arguments the ledger did not retain.
func isNotRetained(args json.RawMessage) bool {
	return bytes.Equal(args, []byte(notRetainedArguments))
}

// retainedResponse is resp as the ledger keeps it: the arguments of each
// call to a capability at audit level none are replaced by the marker.
// resp itself is not changed (the live history keeps them).
func (s *step) retainedResponse(resp *model.Response) *model.Response {
	if s.t.rt.opts.AuditLevel == nil {
		return resp
	}
	var calls []model.ToolCall
	for i, c := range resp.ToolCalls {
		id, known := s.capabilityOf(c.Name)
		if !known || !s.unretained(id) {
			continue
		}
		if calls == nil {
			calls = append([]model.ToolCall(nil), resp.ToolCalls...)
		}
		calls[i].Arguments = json.RawMessage(notRetainedArguments)
	}
	if calls == nil {
		return resp
	}
	kept := *resp
	kept.ToolCalls = calls
	return &kept
}

// capabilityOf is the capability a model's tool name stands for, as
// resolve finds it.
func (s *step) capabilityOf(name string) (authority.ID, bool) {
	if id, ok := s.byWire[name]; ok {
		return id, true
	}
	if cand := authority.ID(name); s.owner[cand] != nil {
		return cand, true
	}
	return "", false
}

// emitAs is emit with recorded, rather than data, as the ledger's
// payload: the event's readers and the host's sink get data, the ledger
// keeps recorded (data without the content it does not retain).
func (s *step) emitAs(data, recorded event.EventData) *event.Outcome {
	if !s.payloads {
		return s.publish(nil, "", &data)
	}
	payload, err := json.Marshal(&recorded)
	if err != nil {
		return &event.Outcome{Status: event.StatusFailed, Code: outcome.FailEventSinkIO, Delivery: outcome.NotSent,
			Reason: s.reason("event %s could not be encoded: %v", data.Type, err)}
	}
	return s.publish(payload, "", &data)
}

// emitOutput emits one tool.output event of the live call; the ledger
// keeps its text only when it retains the call's content.
func (s *step) emitOutput(data event.EventData) *event.Outcome {
	if !s.live.unretained {
		return s.emit(data)
	}
	kept := data
	kept.Text = ""
	return s.emitAs(data, kept)
}

// unretainedArgumentsResult is the recoverable error a resumed task's
// model gets for a call of a recorded turn that had not run when the
// host stopped and whose arguments the ledger did not retain: it cannot
// be run as the model wrote it, so it is not run.
func unretainedArgumentsResult() []byte {
	b, _ := json.Marshal(ledger.RecoverableError("arguments_not_retained",
		"the host stopped before this call ran, and the deployment's audit level for this tool is none, so the ledger did not retain its arguments: it did not run; call it again").Output)
	return b
}
