package pablo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/pabloagent/pablo/internal/fsx"
	"github.com/pabloagent/pablo/internal/model"
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
//
// Decoding is strict (unknown fields, field names in another case and
// duplicate keys are refused) and
// bounded: MaxScriptBytes, MaxScriptTurns, MaxScriptDeltas,
// MaxScriptToolCalls and MaxScriptDepth.
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

// Script bounds. They admit a 10,000-turn script with a tool call in every
// turn (the loop benchmarks) ten times over, and refuse a file whose
// decoding alone would cost hundreds of megabytes: the counts are checked
// while the file is scanned, before anything is decoded.
const (
	// MaxScriptBytes bounds a script file.
	MaxScriptBytes = 16 << 20
	// MaxScriptTurns bounds the turns of a script.
	MaxScriptTurns = 100_000
	// MaxScriptDeltas bounds the text deltas of a script, all turns
	// together.
	MaxScriptDeltas = 1_000_000
	// MaxScriptToolCalls bounds the tool calls of a script, all turns
	// together.
	MaxScriptToolCalls = 100_000
	// MaxScriptDepth bounds how deeply a script's JSON nests (tool-call
	// arguments included).
	MaxScriptDepth = 64
)

// ErrScript is the kind of every script that is refused: errors.Is(err,
// ErrScript) holds for each *ScriptError.
var ErrScript = errors.New("pablo: invalid script")

// ScriptError says why a script is refused and where: Pointer is the JSON
// pointer of the offending value ("/turns/3/tool_calls/0/arguments/path"),
// empty for a problem of the file as a whole.
type ScriptError struct {
	Pointer string
	Message string
	// Err is the underlying decoding or file error, if any.
	Err error
}

func (e *ScriptError) Error() string {
	if e.Pointer == "" {
		return "script: " + e.Message
	}
	return "script: at " + e.Pointer + ": " + e.Message
}

// Is makes errors.Is(err, ErrScript) true.
func (e *ScriptError) Is(target error) bool { return target == ErrScript }

// Unwrap returns the underlying error, or nil.
func (e *ScriptError) Unwrap() error { return e.Err }

// ParseScript decodes and checks a script strictly: unknown fields,
// duplicate keys (at any depth, tool-call arguments included), trailing
// data and a script past one of the bounds above are refused with a
// *ScriptError.
func ParseScript(data []byte) (*Script, error) {
	if len(data) > MaxScriptBytes {
		return nil, &ScriptError{Message: fmt.Sprintf("the file exceeds %d bytes", MaxScriptBytes)}
	}
	if err := scanScript(data); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s Script
	if err := dec.Decode(&s); err != nil {
		return nil, &ScriptError{Message: err.Error(), Err: err}
	}
	if len(s.Turns) == 0 {
		return nil, &ScriptError{Pointer: "/turns", Message: "no turns"}
	}
	for i, t := range s.Turns {
		for j, c := range t.ToolCalls {
			if c.Name == "" {
				return nil, &ScriptError{Pointer: "/turns/" + strconv.Itoa(i) + "/tool_calls/" + strconv.Itoa(j) + "/name", Message: "a tool call needs a name"}
			}
		}
	}
	return &s, nil
}

// scanScript walks the script's bytes once, without decoding it: it
// refuses duplicate keys, trailing data, nesting past MaxScriptDepth and
// counts past the bounds. It checks only the structure it needs; the
// decoder that follows judges everything else about the JSON.
func scanScript(data []byte) error {
	sc := &scriptScan{data: data}
	if err := sc.value(0); err != nil {
		return err
	}
	sc.space()
	if sc.i < len(sc.data) {
		return &ScriptError{Message: "trailing data after the script object"}
	}
	return nil
}

// scriptScan is one scan: the bytes, the position, the path to the current
// value and the counts so far.
type scriptScan struct {
	data                 []byte
	i                    int
	path                 []scanStep
	turns, deltas, calls int
}

// scanStep is one step of a path: an object key or an array index.
type scanStep struct {
	key   string
	index int
	isKey bool
}

func (sc *scriptScan) fail(format string, args ...any) error {
	var b strings.Builder
	for _, p := range sc.path {
		b.WriteByte('/')
		if p.isKey {
			b.WriteString(strings.ReplaceAll(strings.ReplaceAll(p.key, "~", "~0"), "/", "~1"))
		} else {
			b.WriteString(strconv.Itoa(p.index))
		}
	}
	return &ScriptError{Pointer: b.String(), Message: fmt.Sprintf(format, args...)}
}

func (sc *scriptScan) syntax() error {
	return &ScriptError{Message: fmt.Sprintf("not JSON (offset %d)", sc.i)}
}

func (sc *scriptScan) space() {
	for sc.i < len(sc.data) {
		switch sc.data[sc.i] {
		case ' ', '\t', '\n', '\r':
			sc.i++
		default:
			return
		}
	}
}

// value scans one JSON value at depth.
func (sc *scriptScan) value(depth int) error {
	if depth > MaxScriptDepth {
		return sc.fail("nesting deeper than %d levels", MaxScriptDepth)
	}
	sc.space()
	if sc.i >= len(sc.data) {
		return sc.syntax()
	}
	switch sc.data[sc.i] {
	case '{':
		return sc.object(depth)
	case '[':
		return sc.array(depth)
	case '"':
		_, err := sc.str()
		return err
	}
	// A scalar: the decoder checks its spelling.
	for sc.i < len(sc.data) {
		switch sc.data[sc.i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return nil
		}
		sc.i++
	}
	return nil
}

// str scans a string and returns its decoded text.
func (sc *scriptScan) str() (string, error) {
	start := sc.i
	sc.i++
	escaped := false
	for sc.i < len(sc.data) {
		switch sc.data[sc.i] {
		case '\\':
			escaped = true
			sc.i += 2
			continue
		case '"':
			sc.i++
			raw := sc.data[start:sc.i]
			if !escaped {
				return string(raw[1 : len(raw)-1]), nil
			}
			var out string
			if err := json.Unmarshal(raw, &out); err != nil {
				return "", sc.syntax()
			}
			return out, nil
		}
		sc.i++
	}
	return "", sc.syntax()
}

// inArguments reports whether the object being scanned lies in a tool
// call's arguments (/turns/N/tool_calls/M/arguments/...), whose keys are
// the tool's and may be spelled any way.
func (sc *scriptScan) inArguments() bool {
	p := sc.path
	return len(p) >= 5 && p[0].key == "turns" && p[2].key == "tool_calls" && p[4].isKey && p[4].key == "arguments"
}

// lowerName reports whether k is spelled as every field of a script is:
// lowercase ASCII letters and underscores.
func lowerName(k string) bool {
	for i := 0; i < len(k); i++ {
		if c := k[i]; (c < 'a' || c > 'z') && c != '_' {
			return false
		}
	}
	return k != ""
}

func (sc *scriptScan) object(depth int) error {
	sc.i++ // '{'
	sc.space()
	if sc.i < len(sc.data) && sc.data[sc.i] == '}' {
		sc.i++
		return nil
	}
	var keys []string
	var set map[string]bool
	for {
		sc.space()
		if sc.i >= len(sc.data) || sc.data[sc.i] != '"' {
			return sc.syntax()
		}
		key, err := sc.str()
		if err != nil {
			return err
		}
		if !sc.inArguments() && !lowerName(key) {
			// encoding/json matches a field name in any case ("Turns",
			// "TEXT"), which would let a second spelling of a key win.
			sc.path = append(sc.path, scanStep{key: key, isKey: true})
			return sc.fail("unknown field %q: field names are lowercase, spelled exactly", key)
		}
		sc.path = append(sc.path, scanStep{key: key, isKey: true})
		// Most objects have a few keys: a list, then a set past eight.
		dup := false
		if set != nil {
			dup = set[key]
			set[key] = true
		} else {
			for _, k := range keys {
				dup = dup || k == key
			}
			keys = append(keys, key)
			if len(keys) > 8 {
				set = map[string]bool{}
				for _, k := range keys {
					set[k] = true
				}
			}
		}
		if dup {
			return sc.fail("duplicate key %q", key)
		}
		sc.space()
		if sc.i >= len(sc.data) || sc.data[sc.i] != ':' {
			return sc.syntax()
		}
		sc.i++
		if err := sc.value(depth + 1); err != nil {
			return err
		}
		sc.path = sc.path[:len(sc.path)-1]
		if done, err := sc.after('}'); done || err != nil {
			return err
		}
	}
}

func (sc *scriptScan) array(depth int) error {
	sc.i++ // '['
	sc.space()
	if sc.i < len(sc.data) && sc.data[sc.i] == ']' {
		sc.i++
		return nil
	}
	for n := 0; ; n++ {
		sc.path = append(sc.path, scanStep{index: n})
		if err := sc.count(); err != nil {
			return err
		}
		if err := sc.value(depth + 1); err != nil {
			return err
		}
		sc.path = sc.path[:len(sc.path)-1]
		if done, err := sc.after(']'); done || err != nil {
			return err
		}
	}
}

// after reads what follows a member or an element: a comma (more follow)
// or the closing byte (done).
func (sc *scriptScan) after(closing byte) (done bool, err error) {
	sc.space()
	if sc.i >= len(sc.data) {
		return false, sc.syntax()
	}
	switch sc.data[sc.i] {
	case ',':
		sc.i++
		return false, nil
	case closing:
		sc.i++
		return true, nil
	}
	return false, sc.syntax()
}

// count charges an array element at the current path against the bounds.
func (sc *scriptScan) count() error {
	p := sc.path
	if len(p) < 2 || !p[0].isKey || p[0].key != "turns" || len(sc.path) == 3 || len(p) > 4 {
		return nil
	}
	switch {
	case len(p) == 2:
		if sc.turns++; sc.turns > MaxScriptTurns {
			return sc.fail("more than %d turns", MaxScriptTurns)
		}
	case p[2].isKey && p[2].key == "text":
		if sc.deltas++; sc.deltas > MaxScriptDeltas {
			return sc.fail("more than %d text deltas", MaxScriptDeltas)
		}
	case p[2].isKey && p[2].key == "tool_calls":
		if sc.calls++; sc.calls > MaxScriptToolCalls {
			return sc.fail("more than %d tool calls", MaxScriptToolCalls)
		}
	}
	return nil
}

// LoadScript reads and parses a script file. The file is read through
// fsx: a FIFO or a device is refused at once, never waited on, and ctx ends
// the read.
func LoadScript(ctx context.Context, path string) (*Script, error) {
	data, err := fsx.ReadFile(ctx, path, MaxScriptBytes)
	if err != nil {
		msg := fmt.Sprintf("file %s: %v", path, err)
		if errors.Is(err, fs.ErrNotExist) {
			msg = fmt.Sprintf("file %s does not exist", path)
		}
		return nil, &ScriptError{Message: msg, Err: err}
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
	turn := model.Turn(req) - 1 // counted by the loop as it appends
	if turn < 0 {
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
