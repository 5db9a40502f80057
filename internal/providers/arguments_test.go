package providers

import (
	"errors"
	"testing"
)

// A call's arguments must be a JSON object (empty means {}); when they are
// not, the failure blames the output limit if the limit ended the turn,
// in that wire's words, and the model's JSON otherwise. The three
// streaming wires keep their own messages through the one check.
func TestCallArgumentsNameTheCutOrTheBadJSON(t *testing.T) {
	t.Parallel()
	if a, err := callArguments("  ", "tool_use read", "input", false, ""); err != nil || string(a) != "{}" {
		t.Fatalf("empty arguments: %s %v", a, err)
	}
	if a, err := callArguments(` {"path":"a"} `, "tool_use read", "input", true, "stop_reason max_tokens"); err != nil || string(a) != `{"path":"a"}` {
		t.Fatalf("an object, even at the limit: %s %v", a, err)
	}
	for _, c := range []struct {
		call, field, limit string
		cut                bool
		want               string
	}{
		{"tool_use read", "input", "stop_reason max_tokens", false, "tool_use read's input is not a JSON object"},
		{"tool_use read", "input", "stop_reason max_tokens", true, "the output limit (stop_reason max_tokens) cut tool_use read off mid-input; raise the model's max_output_tokens"},
		{"function call read", "arguments", "incomplete: max_output_tokens", false, "function call read's arguments are not a JSON object"},
		{"function call read", "arguments", "incomplete: max_output_tokens", true, "the output limit (incomplete: max_output_tokens) cut function call read off mid-arguments; raise the model's max_output_tokens"},
		{"tool call 0 (read)", "arguments", "finish_reason length", false, "tool call 0 (read)'s arguments are not a JSON object"},
		{"tool call 0 (read)", "arguments", "finish_reason length", true, "the output limit (finish_reason length) cut tool call 0 (read) off mid-arguments; raise the model's max_output_tokens"},
	} {
		for _, raw := range []string{`{"path":"a`, `["a"]`} {
			_, err := callArguments(raw, c.call, c.field, c.cut, c.limit)
			var pe *Error
			if !errors.As(err, &pe) || pe.Code != CodeMalformed || pe.Delivery != ResponseReceived || !pe.Escaped || pe.Reason != c.want {
				t.Fatalf("%s %q: %+v, want %q", c.call, raw, pe, c.want)
			}
		}
	}
}
