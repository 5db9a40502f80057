package pablo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/pabloagent/pablo/ledger"
)

// Script is a deterministic replay model: turn N of the script answers the
// model request that follows N assistant turns. It reads nothing but its
// script, so it serves examples, tests and benchmarks offline.
//
// The file format is JSON:
//
//	{"turns": [
//	  {"text": ["Reading ", "the evidence."],
//	   "tool_calls": [{"name": "fs.read", "arguments": {"path": "evidence.md"}}],
//	   "usage": {"input_tokens": 120, "output_tokens": 14}},
//	  {"text": ["INV-1042 was paid on 2026-10-02."]}
//	]}
//
// "text" is the list of streamed deltas. A tool call names a capability ID
// ("fs.read", "mcp/records/lookup") or its wire name ("fs_read"); its
// arguments are any JSON value, passed through as proposed. "usage" is
// optional: without it the turn's usage is unknown. "error" makes the turn
// fail with that failure code instead, e.g. {"error": "provider_rejected",
// "delivery": "not_sent"}.
type Script struct {
	Turns []ScriptTurn `json:"turns"`
}

// ScriptTurn is one scripted model turn.
type ScriptTurn struct {
	Text      []string         `json:"text"`
	ToolCalls []ScriptToolCall `json:"tool_calls,omitempty"`
	Usage     *struct {
		InputTokens  uint64  `json:"input_tokens"`
		OutputTokens uint64  `json:"output_tokens"`
		CostMicroUSD *uint64 `json:"cost_microusd,omitempty"`
	} `json:"usage,omitempty"`
	Error    string `json:"error,omitempty"`
	Delivery string `json:"delivery,omitempty"`
}

// ScriptToolCall is one scripted tool call.
type ScriptToolCall struct {
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// maxScriptBytes bounds a script file.
const maxScriptBytes = 16 << 20

// ParseScript decodes and checks a script strictly.
func ParseScript(data []byte) (*Script, error) {
	if len(data) > maxScriptBytes {
		return nil, fmt.Errorf("script exceeds %d bytes", maxScriptBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s Script
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("script: %w", err)
	}
	if dec.More() {
		return nil, errors.New("script: trailing data after the script object")
	}
	if len(s.Turns) == 0 {
		return nil, errors.New("script: no turns")
	}
	for i, t := range s.Turns {
		for j, c := range t.ToolCalls {
			if c.Name == "" {
				return nil, fmt.Errorf("script: turn %d tool call %d has no name", i+1, j+1)
			}
		}
	}
	return &s, nil
}

// LoadScript reads and parses a script file.
func LoadScript(path string) (*Script, error) {
	data, err := readBounded(path, maxScriptBytes)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, fmt.Errorf("script file %s does not exist", path)
		}
		return nil, fmt.Errorf("script file %s: %v", path, err)
	}
	return ParseScript(data)
}

// ScriptModel replays a Script. It is stateless and safe for concurrent use.
type ScriptModel struct {
	script *Script
}

// NewScriptModel returns a Model over s.
func NewScriptModel(s *Script) *ScriptModel { return &ScriptModel{script: s} }

// Info implements Model.
func (m *ScriptModel) Info() ModelInfo { return ModelInfo{Provider: "script", Model: "script"} }

// Generate implements Model.
func (m *ScriptModel) Generate(ctx context.Context, req *ModelRequest, emit func(string) error) (*ModelResponse, error) {
	turn := req.turn - 1 // counted by the loop as it appends
	if req.turn == 0 {
		turn = 0
		for _, msg := range req.Messages {
			if msg.Role == RoleAssistant {
				turn++
			}
		}
	}
	if turn >= len(m.script.Turns) {
		return nil, &ModelError{Code: ledger.FailProviderRejected, Delivery: ledger.ResponseReceived, Err: fmt.Errorf("the script has no turn %d", turn+1)}
	}
	t := m.script.Turns[turn]
	if t.Error != "" {
		d := ledger.Delivery(t.Delivery)
		if d == "" {
			d = ledger.NotSent
		}
		retry := ""
		switch t.Error {
		case "rate_limited", "service_unavailable":
			retry = t.Error
			t.Error = string(ledger.FailProviderRejected)
		}
		return nil, &ModelError{Code: ledger.FailureCode(t.Error), Delivery: d, RetryClass: retry, Err: errors.New("scripted failure")}
	}
	resp := &ModelResponse{FinishReason: FinishStop}
	size := 0
	for _, d := range t.Text {
		size += len(d)
	}
	text := make([]byte, 0, size)
	for _, d := range t.Text {
		if err := ctx.Err(); err != nil {
			return nil, &ModelError{Code: ledger.FailProviderTransport, Delivery: ledger.ResponseReceived, Err: err}
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
		resp.ToolCalls = append(resp.ToolCalls, ToolCall{ID: id, Name: c.Name, Arguments: args})
	}
	if len(resp.ToolCalls) > 0 {
		resp.FinishReason = FinishToolCalls
	}
	if t.Usage != nil {
		in, out := t.Usage.InputTokens, t.Usage.OutputTokens
		resp.Usage = ModelUsage{InputTokens: &in, OutputTokens: &out, CostMicroUSD: t.Usage.CostMicroUSD}
		resp.UsageReported = true
	}
	return resp, nil
}
