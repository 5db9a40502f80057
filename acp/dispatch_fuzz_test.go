package acp

import (
	"bytes"
	"context"
	"errors"
	"os"
	"testing"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/authority"
)

// FuzzDispatch: whatever messages follow initialize, Serve never panics,
// writes only whole frames, and ends at the end of the input or for one
// of its reasons.
func FuzzDispatch(f *testing.F) {
	cwd := os.TempDir()
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"` + cwd + `","mcpServers":[]}}`,
		`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"x","prompt":[{"type":"text","text":"hi"}]}}`,
		`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":1}}`,
		`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":{"a":1}}}`,
		`{"jsonrpc":"2.0","id":[1],"result":{}}`,
		`{"jsonrpc":"2.0","id":3,"method":"session/list","params":{"cursor":"-1"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"initialize","params":null}`,
		`{"jsonrpc":"1.0","id":5}`,
		`{"id":6,"method":"session/close","params":{"sessionId":""}}`,
		`{"jsonrpc":"2.0","id":7,"id":8,"method":"session/new","params":{"cwd":"` + cwd + `","mcpServers":[]}}`,
		`{"jsonrpc":"2.0","id":{"a":1},"method":"session/list","params":{}}`,
		`{"jsonrpc":"2.0","id":9,"ID":[9],"method":"initialize","params":{"protocolVersion":1}}`,
		`{"jsonrpc":"2.0","id":10,"method":"session/new","method":"session/list","params":{},"params":{}}`,
		`{"jsonrpc":"1.0","jsonrpc":"2.0","id":11,"result":{},"result":{}}`,
		`{"jsonrpc":"2.0","method":"session/cancel","paramſ":{},"params":{"sessionId":"x"}}`,
	} {
		f.Add([]byte(s + "\n"))
	}
	script, _ := pablo.ParseScript([]byte(`{"turns":[{"text":["ok"]}]}`))
	set, _ := authority.New(authority.Config{})
	rt, _ := pablo.NewRuntime(pablo.RuntimeOptions{Model: pablo.NewScriptModel(script), Authority: set})
	sessions, _ := pablo.NewSessions(pablo.SessionOptions{Runtime: func(context.Context) (*pablo.Runtime, error) { return rt, nil }})
	f.Fuzz(func(t *testing.T, data []byte) {
		in := append([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`+"\n"), data...)
		var out bytes.Buffer
		err := Serve(context.Background(), sessions, bytes.NewReader(in), &out, Options{MaxLine: 4096, Durable: true})
		if err != nil && !errors.Is(err, ErrFrame) && !errors.Is(err, ErrMessageLimit) && !errors.Is(err, ErrInputLimit) {
			t.Fatalf("Serve: %v", err)
		}
		for _, line := range bytes.SplitAfter(out.Bytes(), []byte("\n")) {
			if len(line) == 0 {
				continue
			}
			if line[len(line)-1] != '\n' || !bytes.HasPrefix(line, []byte(`{"jsonrpc":"2.0",`)) {
				t.Fatalf("not a frame: %q", line)
			}
		}
	})
}
