package script

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/pabloagent/pablo/ledger/outcome"

	"github.com/pabloagent/pablo/model"
)

// Model replays a Script. It is stateless and safe for concurrent use.
type Model struct {
	script *Script
}

// NewModel returns a Model over s.
func NewModel(s *Script) *Model { return &Model{script: s} }

// Info implements model.Model.
func (m *Model) Info() model.Info { return model.Info{Provider: "script", Model: "script"} }

// Generate implements model.Model.
func (m *Model) Generate(ctx context.Context, req *model.Request, emit func(string) error) (*model.Response, error) {
	turns := m.turnsFor(req)
	turn := model.Turn(req) - 1 // counted by the loop as it appends
	if turn < 0 {
		turn = 0
		for _, msg := range req.Messages {
			if msg.Role == model.RoleAssistant {
				turn++
			}
		}
	}
	if turn >= len(turns) {
		return nil, &model.Error{Code: outcome.FailProviderRejected, Delivery: outcome.ResponseReceived, Err: fmt.Errorf("the script has no turn %d", turn+1)}
	}
	t := turns[turn]
	if t.Error != "" {
		d := outcome.Delivery(t.Delivery)
		if d == "" {
			d = outcome.NotSent
		}
		retry := ""
		switch t.Error {
		case "rate_limited", "service_unavailable":
			retry = t.Error
			t.Error = string(outcome.FailProviderRejected)
		}
		return nil, &model.Error{Code: outcome.FailureCode(t.Error), Delivery: d, RetryClass: retry, Err: errors.New("scripted failure")}
	}
	resp := &model.Response{FinishReason: model.FinishStop}
	size := 0
	for _, d := range t.Text {
		size += len(d)
	}
	text := make([]byte, 0, size)
	for _, d := range t.Text {
		if err := ctx.Err(); err != nil {
			return nil, &model.Error{Code: outcome.FailProviderTransport, Delivery: outcome.ResponseReceived, Err: err}
		}
		if err := emit(d); err != nil {
			return nil, err
		}
		text = append(text, d...)
	}
	resp.Text = string(text)
	for i, c := range t.ToolCalls {
		id := c.ID
		if id == "" {
			id = "call_" + strconv.Itoa(turn+1) + "_" + strconv.Itoa(i+1)
		}
		args := c.Arguments
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		if bytes.Contains(args, []byte("{{")) {
			var err error
			if args, err = resolveRefs(args, req.Messages); err != nil {
				return nil, &model.Error{Code: outcome.FailProviderRejected, Delivery: outcome.ResponseReceived, Err: err}
			}
		}
		resp.ToolCalls = append(resp.ToolCalls, model.ToolCall{ID: id, Name: c.Name, Arguments: args})
	}
	if len(resp.ToolCalls) > 0 {
		resp.FinishReason = model.FinishToolCalls
	}
	if t.Usage != nil {
		in, out := t.Usage.InputTokens, t.Usage.OutputTokens
		resp.Usage = model.Usage{InputTokens: &in, OutputTokens: &out, CostMicroUSD: t.Usage.CostMicroUSD}
		resp.UsageReported = true
	}
	return resp, nil
}

// turnsFor is the turns that answer req: an agent script's when the
// request's first user message is exactly its input, the root's otherwise.
func (m *Model) turnsFor(req *model.Request) []Turn {
	if len(m.script.Agents) > 0 {
		for _, msg := range req.Messages {
			if msg.Role != model.RoleUser {
				continue
			}
			for _, a := range m.script.Agents {
				if a.Input == msg.Content {
					return a.Turns
				}
			}
			break
		}
	}
	return m.script.Turns
}

// resolveRefs replaces the "{{agent_id:CALL}}" and "{{result_id:CALL}}"
// strings of args with the IDs the conversation's tool results hold.
func resolveRefs(args json.RawMessage, msgs []model.Message) (json.RawMessage, error) {
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return args, nil // passed through as proposed
	}
	var err error
	var walk func(any) any
	walk = func(x any) any {
		switch x := x.(type) {
		case map[string]any:
			for k, e := range x {
				x[k] = walk(e)
			}
		case []any:
			for i, e := range x {
				x[i] = walk(e)
			}
		case string:
			if r, ok, rerr := resolveRef(x, msgs); ok {
				if rerr != nil && err == nil {
					err = rerr
				}
				return r
			}
		}
		return x
	}
	v = walk(v)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// resolveRef resolves one reference string; ok is false for any other
// string.
func resolveRef(s string, msgs []model.Message) (string, bool, error) {
	kind, call, found := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(s, "{{"), "}}"), ":")
	if !found || !strings.HasPrefix(s, "{{") || !strings.HasSuffix(s, "}}") || (kind != "agent_id" && kind != "result_id") {
		return "", false, nil
	}
	agent := ""
	for _, msg := range msgs {
		if msg.Role == model.RoleTool && msg.ToolCallID == call {
			var r struct {
				Subagent struct {
					Agent struct {
						AgentID string `json:"agent_id"`
					} `json:"agent"`
				} `json:"subagent"`
			}
			if json.Unmarshal([]byte(msg.Content), &r) == nil {
				agent = r.Subagent.Agent.AgentID
			}
		}
	}
	if agent == "" {
		return "", true, fmt.Errorf("the script refers to %s, and no spawn result of call %q is in the conversation", s, call)
	}
	if kind == "agent_id" {
		return agent, true, nil
	}
	result := ""
	for _, msg := range msgs {
		if msg.Role != model.RoleTool {
			continue
		}
		var r struct {
			Subagent struct {
				Snapshot *snapshotIDs  `json:"snapshot"`
				Settled  []snapshotIDs `json:"settled"`
			} `json:"subagent"`
		}
		if json.Unmarshal([]byte(msg.Content), &r) != nil {
			continue
		}
		for _, sn := range append(r.Subagent.Settled, ptrList(r.Subagent.Snapshot)...) {
			if sn.AgentID == agent && sn.ResultID != "" {
				result = sn.ResultID
			}
		}
	}
	if result == "" {
		return "", true, fmt.Errorf("the script refers to %s, and no settled snapshot of agent %s with a result is in the conversation", s, agent)
	}
	return result, true, nil
}

// snapshotIDs are the IDs of a subagent snapshot.
type snapshotIDs struct {
	AgentID  string `json:"agent_id"`
	ResultID string `json:"result_id"`
}

func ptrList(s *snapshotIDs) []snapshotIDs {
	if s == nil {
		return nil
	}
	return []snapshotIDs{*s}
}
