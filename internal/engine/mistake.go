package engine

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/internal/textx"
	"github.com/pabloagent/pablo/ledger/outcome"
	"github.com/pabloagent/pablo/model"
)

// Recovery is how the run loop answers a model's mistakes (options.tools,
// a Go extension). Seed 004 keeps them apart: a misselection (a tool that
// is not offered, arguments that fail the schema) needs the model to
// choose again, so it goes back to the model as a typed tool result; a
// denial (a policy decision refusing the call) needs newly authorized
// scope, so by default it ends the task, as the reference does. Either
// way the call is recorded exactly as when it ends the task: denied (or
// invalid), never dispatched.
type Recovery struct {
	// MaxErrors bounds the mistakes returned to the model in a row, per
	// agent; the next one ends the task with the outcome it always had.
	// Zero returns none: the reference's contract.
	MaxErrors int
	// ReportDenials returns a policy denial to the model too (under the
	// same bound), naming the rule and saying a retry is futile.
	ReportDenials bool
}

// mistakeKind is how a call went wrong.
type mistakeKind int

const (
	mistakeUnavailable mistakeKind = iota + 1 // not offered
	mistakeArguments                          // arguments fail the schema
	mistakeDenied                             // a policy decision refused it
)

// mistake is a call the loop refused before it reached a tool, as the
// model is told about it.
type mistake struct {
	kind     mistakeKind
	tool     string // as the model wrote it
	pointer  string // the offending argument (mistakeArguments)
	rule     string // the contract's kind (extra_field, wrong_type, invalid_arguments)
	keyword  string // the schema keyword that failed (required, type, ...)
	decision authority.Decision
}

// mistakeResult is the tool result a recovered mistake goes back as.
type mistakeResult struct {
	// Status is invalid_arguments (the reference's), tool_unavailable or
	// policy_denied.
	Status     string        `json:"status"`
	Tool       string        `json:"tool"`
	PolicyRule any           `json:"policy_rule"`
	Error      mistakeDetail `json:"error"`
	// Tools are the tools the model may call.
	Tools []string `json:"tools"`
	// Left is how many more mistakes in a row the task survives.
	Left int `json:"recoverable_errors_left"`
}

type mistakeDetail struct {
	Pointer *string `json:"pointer,omitempty"`
	Rule    string  `json:"rule"`
	// Keyword is the JSON Schema keyword the arguments failed.
	Keyword string `json:"schema_keyword,omitempty"`
	Message string `json:"message"`
}

// answerMistake returns nil, and the model a tool result for call, when the
// outcome o that the call's mistake would end the task with may be
// recovered under the runtime's Recovery; otherwise it returns o. A
// ledger failure is never recovered.
func (s *step) answerMistake(call model.ToolCall, o *event.Outcome) *event.Outcome {
	b, ok := s.mistakeAnswer(o)
	s.mistake, s.answer = nil, nil
	if !ok {
		return o
	}
	s.misses++
	s.addHistory(model.Message{Role: model.RoleTool, ToolCallID: call.ID, Content: string(b)})
	return nil
}

// mistakeAnswer is the tool result the model gets for the mistake the
// outcome o would end the task with, and false when it ends the task
// (answerMistake). It is computed once per call: the settlement records it
// (so a resumed task gives the model the same history), and answerMistake
// returns it.
func (s *step) mistakeAnswer(o *event.Outcome) ([]byte, bool) {
	if s.answer != nil {
		return s.answer, true
	}
	m := s.mistake
	isMistake := o != nil && (o.Status == event.StatusPolicyDenied || o.Status == event.StatusFailed && o.Code == outcome.FailInvalidToolArguments)
	if m == nil || !isMistake {
		return nil, false
	}
	r := s.t.rt.opts.Recovery
	if r.MaxErrors <= 0 || s.misses >= r.MaxErrors || m.kind == mistakeDenied && !r.ReportDenials {
		return nil, false
	}
	b, err := json.Marshal(s.mistakeResult(m, r.MaxErrors-s.misses-1))
	if err != nil {
		return nil, false
	}
	s.answer = b
	return b, true
}

// mistakeResult is what the model is told: what it called, what failed
// and where, and what it may call instead. The model's own words (the
// tool name, the pointer) come back masked and bounded.
func (s *step) mistakeResult(m *mistake, left int) mistakeResult {
	sec := s.t.rt.opts.Secrets
	name := textx.Shorten(sec.String(m.tool), 256)
	if !utf8.ValidString(name) {
		name = "invalid"
	}
	res := mistakeResult{Tool: name, Left: left, Tools: make([]string, 0, len(s.defs))}
	for _, d := range s.defs {
		res.Tools = append(res.Tools, d.Name)
	}
	switch m.kind {
	case mistakeUnavailable:
		res.Status = "tool_unavailable"
		res.PolicyRule = "tool_unavailable"
		res.Error = mistakeDetail{Rule: "tool_unavailable", Message: "no tool of this name is offered to you; call one of tools, by its exact name"}
	case mistakeArguments:
		p := textx.Shorten(sec.String(m.pointer), 512)
		res.Status = "invalid_arguments"
		res.Error = mistakeDetail{Pointer: &p, Rule: m.rule, Keyword: m.keyword, Message: argumentMessage(m.rule, m.keyword, p)}
	case mistakeDenied:
		res.Status = "policy_denied"
		res.PolicyRule = ruleOf(m.decision.RuleID)
		msg := "denied by layer " + m.decision.Layer + " rule " + m.decision.RuleID
		if m.decision.Reason != "" {
			msg += ": " + sec.String(m.decision.Reason)
		}
		res.Error = mistakeDetail{Rule: m.decision.RuleID, Message: textx.Shorten(msg, 1024) + "; retrying this call is futile: the same policy denies it again"}
	}
	return res
}

// argumentMessage says what the schema rule wants of the argument at p.
func argumentMessage(rule, keyword, p string) string {
	where := "the argument at " + p
	if p == "" {
		where = "the arguments"
	}
	switch authority.ContractKind(rule) {
	case authority.ContractExtraField:
		return where + " is not a parameter of this tool; use only the parameters its schema declares"
	case authority.ContractWrongType:
		return where + " has the wrong type; give it the type the tool's schema declares"
	}
	if keyword == "required" {
		return where + " lacks a required parameter; give every parameter the tool's schema requires"
	}
	return where + " does not satisfy the tool's schema (a required parameter missing, or a value out of range); check the schema and call again"
}
