package script

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/pabloagent/pablo/ledger/outcome"

	"github.com/pabloagent/pablo/internal/model"
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
	turn := model.Turn(req) - 1 // counted by the loop as it appends
	if turn < 0 {
		turn = 0
		for _, msg := range req.Messages {
			if msg.Role == model.RoleAssistant {
				turn++
			}
		}
	}
	if turn >= len(m.script.Turns) {
		return nil, &model.Error{Code: outcome.FailProviderRejected, Delivery: outcome.ResponseReceived, Err: fmt.Errorf("the script has no turn %d", turn+1)}
	}
	t := m.script.Turns[turn]
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
