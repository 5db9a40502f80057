package acp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/acp"
	"github.com/pabloagent/pablo/authority"
)

// Serve drives a session handler over a pair of streams, as `pablo acp
// --stdio` does over stdin and stdout: here a client on two pipes opens a
// session, sends one prompt and reads its updates and its stop reason.
func ExampleServe() {
	script, _ := pablo.ParseScript([]byte(`{"turns":[{"text":["Renewal is due ", "on 2027-01-01."]}]}`))
	set, _ := authority.New(authority.Config{})
	rt, _ := pablo.NewRuntime(pablo.RuntimeOptions{Model: pablo.NewScriptModel(script), Authority: set})
	sessions, _ := pablo.NewSessions(pablo.SessionOptions{
		Runtime: func(context.Context) (*pablo.Runtime, error) { return rt, nil },
	})

	clientIn, agentOut := io.Pipe()
	agentIn, clientOut := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- acp.Serve(context.Background(), sessions, agentIn, agentOut, acp.Options{})
		agentOut.Close()
	}()

	lines := bufio.NewScanner(clientIn)
	ask := func(id int, method string, params any) map[string]any {
		p, _ := json.Marshal(params)
		fmt.Fprintf(clientOut, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", id, method, p)
		for lines.Scan() {
			var m map[string]any
			json.Unmarshal(lines.Bytes(), &m)
			if m["method"] == "session/update" {
				u := m["params"].(map[string]any)["update"].(map[string]any)
				fmt.Printf("%s %q\n", u["sessionUpdate"], u["content"].(map[string]any)["text"])
				continue
			}
			return m["result"].(map[string]any)
		}
		return nil
	}
	ask(1, "initialize", map[string]any{"protocolVersion": 1})
	session := ask(2, "session/new", map[string]any{"cwd": os.TempDir(), "mcpServers": []any{}})["sessionId"]
	answer := ask(3, "session/prompt", map[string]any{"sessionId": session,
		"prompt": []any{map[string]any{"type": "text", "text": "When is the renewal due?"}}})
	fmt.Println(answer["stopReason"])

	clientOut.Close() // EOF: Serve returns
	fmt.Println(<-served)
	// Output:
	// agent_message_chunk "Renewal is due "
	// agent_message_chunk "on 2027-01-01."
	// end_turn
	// <nil>
}
