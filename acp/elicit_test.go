package acp_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/acp"
	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/mcp"
)

// buildFaultServer builds the repository's fault MCP server, whose
// "elicit" mode asks the client for a deploy target.
func buildFaultServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "fault")
	if out, err := exec.Command("go", "build", "-o", bin, "../examples/mcpservers/fault").CombinedOutput(); err != nil {
		t.Fatalf("build the fault server: %v\n%s", err, out)
	}
	return bin
}

// elicitDeployment loads a deployment whose scripted model calls the
// fault server's ask tool once (the server then elicits its form).
func elicitDeployment(t *testing.T, bin string) (*pablo.Sessions, string) {
	t.Helper()
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	alias := mcp.Alias(authority.MCPTool("records", "ask"))
	script := `{"turns":[{"text":["Asking."],"tool_calls":[{"name":"` + alias + `","arguments":{}}]},{"text":["Done."]}]}`
	os.WriteFile(filepath.Join(dir, "script.json"), []byte(script), 0o600)
	doc := "schema_version = 1\n[options.model]\nprovider = \"script\"\nscript = { base = \"source\", path = \"script.json\" }\n" +
		"[options.shell]\nenabled = false\n" +
		"[options.mcp.servers.records]\ntransport = \"stdio\"\ncommand = \"" + bin + "\"\nargs = [\"-mode\", \"elicit\"]\n"
	os.WriteFile(filepath.Join(dir, "deployment.toml"), []byte(doc), 0o600)
	d, err := pablo.Load(pablo.LoadOptions{Config: filepath.Join(dir, "deployment.toml"), Bindings: map[string]string{"workspace": ws}})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := d.NewRuntime(context.Background(), pablo.HostOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	sessions, err := pablo.NewSessions(pablo.SessionOptions{Runtime: func(context.Context) (*pablo.Runtime, error) { return rt, nil }})
	if err != nil {
		t.Fatal(err)
	}
	return sessions, ws
}

// An MCP server's form elicitation during a prompt's call reaches a client
// that negotiated pablo/elicitation-v1 as _pablo/v1/elicitation, bound to
// the session, the server and the call's tool, with the form rebuilt from
// the validated fields; the client's answer goes back to the server only
// when it fits the form (with the form's defaults for what it left out):
// an answer outside the form, an unknown action or an error answer
// declines, cancel cancels. A client that did not negotiate the extension
// is never asked, and the server gets a decline.
func TestElicitationReachesTheClientThroughTheExtension(t *testing.T) {
	t.Parallel()
	bin := buildFaultServer(t)
	cases := []struct {
		name   string
		ext    bool
		answer string // a result; "" sends an error answer
		server string // what the server reports it got
	}{
		{"accept", true, `{"action":"accept","content":{"target":"production"}}`, `action accept content {\"notify\":false,\"target\":\"production\"}`},
		{"an answer outside the form", true, `{"action":"accept","content":{"target":"the moon"}}`, "action decline content null"},
		{"a field the form lacks", true, `{"action":"accept","content":{"target":"staging","token":"x"}}`, "action decline content null"},
		{"accept without content", true, `{"action":"accept"}`, "action decline content null"},
		{"decline", true, `{"action":"decline"}`, "action decline content null"},
		{"cancel", true, `{"action":"cancel"}`, "action cancel content null"},
		{"an unknown action", true, `{"action":"maybe"}`, "action decline content null"},
		{"an error answer", true, "", "action decline content null"},
		{"not negotiated", false, "", "action decline content null"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sessions, ws := elicitDeployment(t, bin)
			p := serve(t, sessions, acp.Options{Clock: newFakeClock()})
			if tc.ext {
				p.initialize(acp.ExtElicitation)
			} else {
				p.initialize()
			}
			sid := p.newSession(2, ws)
			p.request(3, "session/prompt", textPrompt(sid, "Deploy."))
			var all []frame
			for {
				f, ok := p.next()
				if !ok {
					t.Fatal("the connection ended before the answer")
				}
				all = append(all, f)
				if f.Method == acp.MethodElicitation {
					if !tc.ext {
						t.Fatalf("a client that did not negotiate the extension was asked: %s", f.raw)
					}
					var req struct {
						SessionID       string `json:"sessionId"`
						Server          string `json:"server"`
						Tool            string `json:"tool"`
						Message         string `json:"message"`
						RequestedSchema struct {
							Type       string `json:"type"`
							Properties map[string]struct {
								Type    string   `json:"type"`
								Enum    []string `json:"enum"`
								Default any      `json:"default"`
							} `json:"properties"`
							Required []string `json:"required"`
						} `json:"requestedSchema"`
					}
					jsonUnmarshal(t, f.Params, &req)
					s := req.RequestedSchema
					if req.SessionID != sid || req.Server != "records" || req.Tool != "mcp/records/ask" || req.Message != "Where should the release go?" ||
						s.Type != "object" || len(s.Properties) != 2 || s.Properties["target"].Type != "string" ||
						strings.Join(s.Properties["target"].Enum, ",") != "staging,production" || s.Properties["target"].Default != "staging" ||
						s.Properties["notify"].Type != "boolean" || strings.Join(s.Required, ",") != "target" {
						t.Fatalf("the request is not the form: %s", f.raw)
					}
					if tc.answer == "" {
						p.send(`{"jsonrpc":"2.0","id":` + string(f.ID) + `,"error":{"code":-32603,"message":"no"}}`)
					} else {
						p.send(`{"jsonrpc":"2.0","id":` + string(f.ID) + `,"result":` + tc.answer + `}`)
					}
				}
				if f.Method == "" && string(f.ID) == "3" {
					break
				}
			}
			if got := stopReasonOf(t, all[len(all)-1]); got != "end_turn" {
				t.Fatalf("stop %q", got)
			}
			asked, got := false, false
			var raws []string
			for _, f := range all {
				raws = append(raws, f.raw)
				asked = asked || f.Method == acp.MethodElicitation
				got = got || strings.Contains(f.raw, tc.server)
			}
			if asked != tc.ext || !got {
				t.Fatalf("asked %v; the server's report %q not in the frames:\n%s", asked, tc.server, strings.Join(raws, "\n"))
			}
		})
	}
}
