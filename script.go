package pablo

import (
	"context"

	"github.com/pabloagent/pablo/internal/script"
	"github.com/pabloagent/pablo/model"
)

// Script is a deterministic replay model's script: turn N answers the
// model request that follows N assistant turns of its task (a session's
// earlier tasks' turns are not counted). It reads nothing but
// itself, so it serves examples, tests and benchmarks offline. The format
// is JSON:
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
// A Script is the parsed, checked script: build its model with
// [NewScriptModel]. Its zero value is a script of no turns.
type Script struct{ s *script.Script }

// ErrScript is the kind of every script that is refused: errors.Is(err,
// ErrScript) holds for each error of ParseScript.
var ErrScript = script.ErrInvalid

// ParseScript decodes and checks a script strictly and within bounds:
// unknown fields, field names in another case, duplicate keys (at any
// depth, tool-call arguments included), trailing data and a script past
// 16 MiB, 100,000 turns or tool calls, 1,000,000 text deltas or 64 levels
// of nesting are refused with an error naming the JSON pointer of what is
// wrong.
func ParseScript(data []byte) (*Script, error) { return wrapScript(script.Parse(data)) }

// LoadScript reads the script file at path and parses it as [ParseScript]
// does. A FIFO or a device is refused at once, never waited on, ctx ends
// the read, and a missing file is an error that says so; every error
// satisfies errors.Is(err, ErrScript). It is what `pablo run --script`
// reads its script with.
func LoadScript(ctx context.Context, path string) (*Script, error) {
	return wrapScript(script.Load(ctx, path))
}

// wrapScript is the public handle of a parsed script.
func wrapScript(s *script.Script, err error) (*Script, error) {
	if err != nil {
		return nil, err
	}
	return &Script{s: s}, nil
}

// NewScriptModel returns a Model that replays s. It is stateless and safe
// for concurrent use.
func NewScriptModel(s *Script) model.Model {
	if s == nil || s.s == nil {
		return script.NewModel(&script.Script{})
	}
	return script.NewModel(s.s)
}

// Turns is the number of turns the root agent replays.
func (s *Script) Turns() int {
	if s == nil || s.s == nil {
		return 0
	}
	return len(s.s.Turns)
}
