package providers

import (
	"encoding/json"
	"fmt"
	"strings"
)

// callArguments checks the streamed arguments of one proposed call at the
// end of its turn: trimmed, empty meaning {}, and a JSON object. call names
// the call as its wire does ("tool_use read", "function call read", "tool
// call 0 (read)") and field what the wire calls its arguments ("input",
// "arguments"). When cut is set the output limit ended the turn, which
// limit says in the wire's words ("stop_reason max_tokens"): arguments
// that are not an object were then cut off, and the failure says so and
// what to raise, rather than blaming the model's JSON.
func callArguments(raw, call, field string, cut bool, limit string) (json.RawMessage, error) {
	args := strings.TrimSpace(raw)
	if args == "" {
		args = "{}"
	}
	if json.Valid([]byte(args)) && args[0] == '{' {
		return json.RawMessage(args), nil
	}
	verb := "are"
	if field == "input" {
		verb = "is"
	}
	reason := fmt.Sprintf("%s's %s %s not a JSON object", call, field, verb)
	if cut {
		reason = fmt.Sprintf("the output limit (%s) cut %s off mid-%s; raise the model's max_output_tokens", limit, call, field)
	}
	return nil, &Error{Code: CodeMalformed, Delivery: ResponseReceived, Escaped: true, Reason: reason}
}
