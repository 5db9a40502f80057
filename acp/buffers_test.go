package acp_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/acp"
)

// A client that advertises fs.readTextFile serves the workspace reads: an
// fs.read that passed its checks asks fs/read_text_file for the file under
// the session's cwd and returns the editor's text (unsaved changes), marked
// from_client; a path the checks refuse is never asked for. A client that
// does not advertise it is never asked.
func TestWorkspaceReadsGoThroughTheClientsBuffers(t *testing.T) {
	t.Parallel()
	script := `{"turns":[{"tool_calls":[{"name":"fs_read","arguments":{"path":"a.txt"}},{"name":"fs_read","arguments":{"path":"../outside.txt"}}]},{"text":["done"]}]}`
	for _, advertised := range []bool{true, false} {
		sessions, ws := renderDeployment(t, script)
		p := serve(t, sessions, acp.Options{Clock: newFakeClock()})
		caps := map[string]any{}
		if advertised {
			caps["fs"] = map[string]any{"readTextFile": true}
		}
		if f := p.call(1, "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": caps}); f.Error != nil {
			t.Fatal(f.raw)
		}
		sid := p.newSession(2, ws)
		p.request(3, "session/prompt", textPrompt(sid, "read it"))
		var asked []string
		var result string
		for {
			f, ok := p.next()
			if !ok {
				t.Fatal("the output ended before the answer")
			}
			if f.Method == "fs/read_text_file" {
				var req struct {
					SessionID string `json:"sessionId"`
					Path      string `json:"path"`
				}
				jsonUnmarshal(t, f.Params, &req)
				if req.SessionID != sid {
					t.Errorf("fs/read_text_file for session %q", req.SessionID)
				}
				asked = append(asked, req.Path)
				p.send(`{"jsonrpc":"2.0","id":` + string(f.ID) + `,"result":{"content":"unsaved text\n"}}`)
				continue
			}
			if u := f.update(); u["sessionUpdate"] == "tool_call_update" && u["status"] == "completed" {
				raw, _ := json.Marshal(u["rawOutput"])
				result = string(raw)
			}
			if f.Method == "" && string(f.ID) == "3" {
				break
			}
		}
		if !advertised {
			if len(asked) != 0 || !strings.Contains(result, `"text":"alpha\n"`) || strings.Contains(result, "from_client") {
				t.Fatalf("a client without fs.readTextFile: asked %v, read %s", asked, result)
			}
			continue
		}
		if len(asked) != 1 || asked[0] != filepath.Join(ws, "a.txt") {
			t.Fatalf("the client was asked for %v, want only %s (read %s)", asked, filepath.Join(ws, "a.txt"), result)
		}
		if !strings.Contains(result, `"text":"unsaved text\n"`) || !strings.Contains(result, `"from_client":true`) {
			t.Fatalf("fs.read returned %s, want the client's text", result)
		}
	}
}
