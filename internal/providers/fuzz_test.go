package providers

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/pabloagent/pablo/model"
)

// parseChat runs the SSE reader and the Chat Completions state machine over
// raw bytes, as Generate does after the status line.
func parseChat(data []byte, emit func(string) error) (*model.Response, error) {
	p := newChatStream(OpenRouter, emit)
	r := NewSSEReader(bytes.NewReader(data), 1<<16, 10_000)
	for !p.done {
		f, err := r.Next()
		if err != nil {
			return nil, frameError(err, Limits{}.withDefaults())
		}
		if err := p.frame(f.Data); err != nil {
			return nil, err
		}
	}
	return p.result()
}

func parseResponses(data []byte, emit func(string) error) (*model.Response, error) {
	p := newResponsesStream(emit)
	r := NewSSEReader(bytes.NewReader(data), 1<<16, 10_000)
	for {
		f, err := r.Next()
		if err != nil {
			if errors.Is(err, io.EOF) && p.terminal {
				break
			}
			return nil, frameError(err, Limits{}.withDefaults())
		}
		if err := p.frame(f.Event, f.Data); err != nil {
			return nil, err
		}
		if p.sawDone {
			break
		}
	}
	return p.result()
}

// FuzzStreamParsers feeds arbitrary bytes to the SSE reader and both
// stream state machines: they must never panic, must fail only with an
// *Error, and the deltas they emit must add up to the returned text.
func FuzzStreamParsers(f *testing.F) {
	f.Add([]byte(chatWire{cost: true}.text([]string{"a", "b"}, true)))
	f.Add([]byte(chatWire{}.tools("t", []call{{"c1", "f", `{"a":1}`}, {"c2", "g", `{}`}}, true)))
	f.Add([]byte(respWire{}.text([]string{"a", "b"}, true)))
	f.Add([]byte(respWire{}.tools("t", []call{{"c1", "f", `{"a":1}`}}, true)))
	for _, fr := range (chatWire{}).hostileFrames() {
		f.Add([]byte(fr))
	}
	for _, fr := range (respWire{}).hostileFrames() {
		f.Add([]byte(fr))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, parse := range []func([]byte, func(string) error) (*model.Response, error){parseChat, parseResponses} {
			var emitted bytes.Buffer
			resp, err := parse(data, func(d string) error { emitted.WriteString(d); return nil })
			if err != nil {
				var e *Error
				if !errors.As(err, &e) {
					t.Fatalf("a failure that is not *Error: %T %v", err, err)
				}
				continue
			}
			if resp.Text != emitted.String() {
				t.Fatalf("text %q differs from the emitted deltas %q", resp.Text, emitted.String())
			}
			for _, c := range resp.ToolCalls {
				if len(c.Arguments) == 0 || c.Arguments[0] != '{' {
					t.Fatalf("tool call arguments %q are not an object", c.Arguments)
				}
			}
		}
	})
}
