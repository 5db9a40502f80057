// Package script is the scripted model: a JSON file of turns that a
// [Model] replays, turn N answering the request that follows N assistant
// turns. It reads nothing but its script, so it serves examples, tests,
// benchmarks and the CLI's demo offline.
//
// [Parse] decodes a script strictly and within bounds ([MaxBytes],
// [MaxTurns], [MaxDeltas], [MaxToolCalls], [MaxDepth]): the bytes are
// scanned once for duplicate keys, trailing data, nesting and counts before
// anything is decoded. [Load] reads a script file; every refusal is an
// [*Error] (errors.Is [ErrInvalid]) with the JSON pointer of what is wrong.
package script

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strconv"

	"github.com/pabloagent/pablo/internal/fsx"
)

// Script is what a [Model] replays: turn N of the script answers the model
// request that follows N assistant turns.
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
//
// "agents" scripts supervised children, each by the exact input it
// answers: {"agents": [{"input": "report A", "turns": [...]}]}. In a tool
// call's arguments the string "{{agent_id:CALL}}" stands for the agent ID
// the result of the earlier tool call CALL returned (a subagent spawn), and
// "{{result_id:CALL}}" for the result ID of that agent in the latest
// snapshot that names it: what a model would copy from the tool results it
// was shown. A reference to nothing the conversation holds fails the turn.
//
// Decoding is strict (unknown fields, field names in another case and
// duplicate keys are refused) and bounded: MaxBytes, MaxTurns, MaxDeltas,
// MaxToolCalls and MaxDepth.
type Script struct {
	Turns []Turn `json:"turns"`
	// Agents script supervised children: a child whose input is exactly
	// an agent's Input replays that agent's turns; the root replays Turns.
	Agents []AgentScript `json:"agents,omitempty"`
}

// AgentScript is the script of the children given one input.
type AgentScript struct {
	Input string `json:"input"`
	Turns []Turn `json:"turns"`
}

// Turn is one scripted model turn.
type Turn struct {
	Text      []string   `json:"text"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	Usage     *struct {
		InputTokens  uint64  `json:"input_tokens"`
		OutputTokens uint64  `json:"output_tokens"`
		CostMicroUSD *uint64 `json:"cost_microusd,omitempty"`
	} `json:"usage,omitempty"`
	Error    string `json:"error,omitempty"`
	Delivery string `json:"delivery,omitempty"`
}

// ToolCall is one scripted tool call.
type ToolCall struct {
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// Script bounds. They admit a 10,000-turn script with a tool call in every
// turn (the loop benchmarks) ten times over, and refuse a file whose
// decoding alone would cost hundreds of megabytes: the counts are checked
// while the file is scanned, before anything is decoded.
const (
	// MaxBytes bounds a script file.
	MaxBytes = 16 << 20
	// MaxTurns bounds the turns of a script.
	MaxTurns = 100_000
	// MaxDeltas bounds the text deltas of a script, all turns
	// together.
	MaxDeltas = 1_000_000
	// MaxToolCalls bounds the tool calls of a script, all turns
	// together.
	MaxToolCalls = 100_000
	// MaxDepth bounds how deeply a script's JSON nests (tool-call
	// arguments included).
	MaxDepth = 64
	// MaxAgents bounds the agent scripts of a script.
	MaxAgents = 256
)

// ErrInvalid is the kind of every script that is refused: errors.Is(err,
// ErrInvalid) holds for each *Error.
var ErrInvalid = errors.New("pablo: invalid script")

// Error says why a script is refused and where: Pointer is the JSON
// pointer of the offending value ("/turns/3/tool_calls/0/arguments/path"),
// empty for a problem of the file as a whole.
type Error struct {
	Pointer string
	Message string
	// Err is the underlying decoding or file error, if any.
	Err error
}

// Error says what is wrong, and where when the pointer is known.
func (e *Error) Error() string {
	if e.Pointer == "" {
		return "script: " + e.Message
	}
	return "script: at " + e.Pointer + ": " + e.Message
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *Error) Is(target error) bool { return target == ErrInvalid }

// Unwrap returns the underlying error, or nil.
func (e *Error) Unwrap() error { return e.Err }

// Parse decodes and checks a script strictly: unknown fields, duplicate
// keys (at any depth, tool-call arguments included), trailing data and a
// script past one of the bounds above are refused with an *Error.
func Parse(data []byte) (*Script, error) {
	if len(data) > MaxBytes {
		return nil, &Error{Message: fmt.Sprintf("the file exceeds %d bytes", MaxBytes)}
	}
	if err := scan(data); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s Script
	if err := dec.Decode(&s); err != nil {
		return nil, &Error{Message: err.Error(), Err: err}
	}
	if len(s.Turns) == 0 {
		return nil, &Error{Pointer: "/turns", Message: "no turns"}
	}
	if err := checkTurns("", s.Turns); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for i, a := range s.Agents {
		at := "/agents/" + strconv.Itoa(i)
		switch {
		case a.Input == "":
			return nil, &Error{Pointer: at + "/input", Message: "an agent script needs the input it answers"}
		case seen[a.Input]:
			return nil, &Error{Pointer: at + "/input", Message: "two agent scripts answer the same input"}
		case len(a.Turns) == 0:
			return nil, &Error{Pointer: at + "/turns", Message: "no turns"}
		}
		seen[a.Input] = true
		if err := checkTurns(at, a.Turns); err != nil {
			return nil, err
		}
	}
	return &s, nil
}

// checkTurns checks what decoding cannot: every tool call has a name.
func checkTurns(at string, turns []Turn) error {
	for i, t := range turns {
		for j, c := range t.ToolCalls {
			if c.Name == "" {
				return &Error{Pointer: at + "/turns/" + strconv.Itoa(i) + "/tool_calls/" + strconv.Itoa(j) + "/name", Message: "a tool call needs a name"}
			}
		}
	}
	return nil
}

// Load reads and parses a script file. The file is read through
// fsx: a FIFO or a device is refused at once, never waited on, and ctx ends
// the read.
func Load(ctx context.Context, path string) (*Script, error) {
	data, err := fsx.ReadFile(ctx, path, MaxBytes)
	if err != nil {
		msg := fmt.Sprintf("file %s: %v", path, err)
		if errors.Is(err, fs.ErrNotExist) {
			msg = fmt.Sprintf("file %s does not exist", path)
		}
		return nil, &Error{Message: msg, Err: err}
	}
	return Parse(data)
}
