package providers

import (
	"errors"
	"testing"
)

// TestOnlyACallIDMayHoldInvalidBytes: a Chat Completions chunk whose
// bytes are not UTF-8 only inside a tool call's ID (local servers have
// sent such IDs) is taken, the call with a missing ID (the run loop makes
// one up); invalid bytes anywhere else in the chunk (text, the name, the
// arguments, a key, or an ID and anything else at once) are a malformed
// stream, never replaced.
func TestOnlyACallIDMayHoldInvalidBytes(t *testing.T) {
	call := func(id, name, args string) string {
		return `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"` + id + `","type":"function","function":{"name":"` + name + `","arguments":"` + args + `"}}]},"finish_reason":null}]}`
	}
	for _, c := range []struct {
		name  string
		frame string
		ok    bool
	}{
		{"ID", call("call_\xff\xfe", "fs_read", "{}"), true},
		{"IDEscapedQuote", call("\\\"\xff", "fs_read", "{}"), true},
		{"Name", call("c1", "fs_\xff", "{}"), false},
		{"Arguments", call("c1", "fs_read", "{\xff}"), false},
		{"IDAndName", call("\xff", "fs_\xff", "{}"), false},
		{"Text", `{"choices":[{"index":0,"delta":{"content":"\xff"},"finish_reason":null}]}`, false},
		{"Key", `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"\xff","\xff":1,"type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":null}]}`, false},
		{"DuplicateIDKey", `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"\xff","id":"\xfe","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":null}]}`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newChatStream(OpenAICompatible, func(string) error { return nil })
			err := p.frame([]byte(c.frame))
			if c.ok {
				if err != nil || len(p.calls) != 1 || p.calls[0].ID != "call_0" {
					t.Fatalf("err %v, calls %+v: want the call under a missing ID", err, p.calls)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Code != CodeMalformed {
				t.Fatalf("err %v, want malformed_stream", err)
			}
		})
	}
}
