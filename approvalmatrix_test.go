package pablo

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/pabloagent/pablo/approval"
	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/mcp"
)

// answerFunc is an Approver from a function.
type answerFunc func(ctx context.Context, req approval.Request) (approval.Answer, error)

func (f answerFunc) Approve(ctx context.Context, req approval.Request) (approval.Answer, error) {
	return f(ctx, req)
}

// TestApprovalMatrix is docs/approvals.md's matrix, one case per cell: for
// each tool class, sandbox and policy, whether a call needs approval with
// no approval rule at all (and which privileged default asks), and the
// effect its approval request carries. The shell, workspace, Skill and
// subagent cells are decided as a task decides them (Deployment.Decide);
// the MCP cells run a real server.
func TestApprovalMatrix(t *testing.T) {
	const (
		literal  = "[options.shell.commands]\ndefault = \"deny\"\nallow = [{ id = \"t.ls\", executable = \"/usr/bin/ls\", args = [], match = \"prefix\" }]\n"
		sbDeny   = "[options.shell.sandbox]\nnetwork = \"deny\"\n"
		sbAllow  = "[options.shell.sandbox]\nnetwork = \"allow\"\n"
		sbUWA    = "[options.shell.sandbox]\nnetwork = \"unrestricted-with-approval\"\n"
		offDeny  = "[options.shell.sandbox]\nmode = \"off\"\nnetwork = \"deny\"\n"
		offAllow = "[options.shell.sandbox]\nmode = \"off\"\nnetwork = \"allow\"\n"
		class    = "[options.approvals]\nshell = \"required\"\n"
		gated    = "[options.approvals]\nsubagent = \"required\"\n"
		remote   = "[options.a2a.remotes.reviewer]\ncard_url = \"https://agents.example.com/.well-known/agent-card.json\"\nendpoint = \"https://agents.example.com/a2a\"\n"
	)
	read := json.RawMessage(`{"path":"a.txt"}`)
	cells := []struct {
		name   string
		extra  string
		tool   authority.ID
		args   json.RawMessage
		rule   string // the privileged default that asks, or empty
		effect authority.CallEffect
	}{
		{"ShellSandboxNetworkDenyNoPolicy", sbDeny, authority.ShellRun, lsCall, "", authority.EffectExecute},
		{"ShellSandboxNetworkDenyLiteralPolicy", sbDeny + literal, authority.ShellRun, lsCall, "", authority.EffectExecute},
		{"ShellSandboxNetworkAllowNoPolicy", sbAllow, authority.ShellRun, lsCall, authority.RuleApprovalShellNetwork, authority.EffectNetwork},
		{"ShellSandboxNetworkAllowLiteralPolicy", sbAllow + literal, authority.ShellRun, lsCall, authority.RuleApprovalShellNetwork, authority.EffectNetwork},
		{"ShellSandboxNetworkUnrestrictedWithApproval", sbUWA, authority.ShellRun, lsCall, authority.RuleApprovalUnrestrictedNetwork, authority.EffectNetwork},
		{"ShellSandboxNetworkUnrestrictedWithApprovalLiteralPolicy", sbUWA + literal, authority.ShellRun, lsCall, authority.RuleApprovalUnrestrictedNetwork, authority.EffectNetwork},
		{"ShellOffNetworkDenyNoPolicy", offDeny, authority.ShellRun, lsCall, authority.RuleApprovalUnconfinedShell, authority.EffectNetwork},
		{"ShellOffNetworkAllowNoPolicy", offAllow, authority.ShellRun, lsCall, authority.RuleApprovalUnconfinedShell, authority.EffectNetwork},
		{"ShellOffNetworkDenyLiteralPolicy", offDeny + literal, authority.ShellRun, lsCall, "", authority.EffectNetwork},
		{"ShellOffNetworkAllowLiteralPolicy", offAllow + literal, authority.ShellRun, lsCall, "", authority.EffectNetwork},
		{"FSRead", "", authority.FSRead, read, "", authority.EffectRead},
		{"FSList", "", authority.FSList, json.RawMessage(`{"path":"."}`), "", authority.EffectRead},
		{"FSSearch", "", authority.FSSearch, json.RawMessage(`{"path":".","query":"x"}`), "", authority.EffectRead},
		{"FSReadShellOff", offDeny, authority.FSRead, read, "", authority.EffectRead},
		{"FSWrite", "", authority.FSWrite, writeTop, "", authority.EffectWrite},
		{"FSEdit", "", authority.FSEdit, json.RawMessage(`{"path":"a.txt","expected_revision":"` + zeroRev + `","old_text":"x","new_text":"y"}`), "", authority.EffectWrite},
		{"FSWriteShellOff", offDeny, authority.FSWrite, writeTop, "", authority.EffectWrite},
		{"SkillRead", "[options.skills]\nroots = { team = { base = \"source\", path = \"skills\" } }\nactivate = [\"team/review\"]\n", authority.SkillRead, nil, "", authority.EffectRead},
		{"SubagentSpawn", "", authority.Subagent, spawnArgs, "", authority.EffectDelegate},
		{"SubagentSpawnRemote", remote, authority.Subagent, spawnRemoteArgs, "", authority.EffectDelegate},
		{"SubagentInspect", remote, authority.Subagent, inspectArgs, "", authority.EffectDelegate},
		{"SubagentWait", remote, authority.Subagent, waitArgs, "", authority.EffectDelegate},
		{"SubagentStop", remote, authority.Subagent, stopArgs, "", authority.EffectDelegate},
		{"SubagentSpawnClassRequired", remote + gated, authority.Subagent, spawnArgs, "options.approvals.subagent", authority.EffectDelegate},
		{"SubagentSpawnRemoteClassRequired", remote + gated, authority.Subagent, spawnRemoteArgs, "options.approvals.subagent", authority.EffectDelegate},
		{"SubagentInspectClassRequired", remote + gated, authority.Subagent, inspectArgs, "", authority.EffectDelegate},
		{"SubagentWaitClassRequired", remote + gated, authority.Subagent, waitArgs, "", authority.EffectDelegate},
		{"SubagentStopClassRequired", remote + gated, authority.Subagent, stopArgs, "", authority.EffectDelegate},
		{"ShellSandboxClassRequired", sbDeny + class, authority.ShellRun, lsCall, "options.approvals.shell", authority.EffectExecute},
		{"ShellOffLiteralPolicyClassRequired", offDeny + literal + class, authority.ShellRun, lsCall, "options.approvals.shell", authority.EffectNetwork},
	}
	for _, c := range cells {
		t.Run(c.name, func(t *testing.T) {
			d, err := loadString(t, rulesBase+c.extra, func(o *LoadOptions) {
				dir := filepath.Join(filepath.Dir(o.Config), "skills", "review")
				os.MkdirAll(dir, 0o700)
				os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: review\ndescription: Reviews.\n---\nReview it.\n"), 0o600)
			})
			if err != nil {
				t.Fatal(err)
			}
			dec, err := d.Decide(context.Background(), c.tool, c.args)
			if err != nil {
				t.Fatal(err)
			}
			if !dec.Allowed {
				t.Fatalf("%s denied: %+v", c.tool, dec)
			}
			got := ""
			if dec.NeedsApproval {
				got = authority.ApprovalSourceOf(dec).RuleID
			}
			if got != c.rule {
				t.Errorf("%s needs approval by %q, want %q: %+v", c.tool, got, c.rule, dec)
			}
			if e := authority.EffectOf(c.tool, dec); e != c.effect {
				t.Errorf("%s effect %s, want %s (sandbox %q)", c.tool, e, c.effect, dec.Sandbox)
			}
		})
	}
}

// The subagent tool's arguments of each action, as a model writes them.
var (
	spawnArgs       = json.RawMessage(`{"action":"spawn","request":{"input":"review a.txt","capabilities":{"tools":["fs.read"]}}}`)
	spawnRemoteArgs = json.RawMessage(`{"action":"spawn_remote","remote_request":{"remote":"reviewer","parts":[{"text":"review"}],"accepted_output_modes":["text/plain"]}}`)
	inspectArgs     = json.RawMessage(`{"action":"inspect","agent_id":"00000000-0000-4000-8000-000000000001"}`)
	waitArgs        = json.RawMessage(`{"action":"wait","agent_ids":["00000000-0000-4000-8000-000000000001"],"mode":"all","timeout_ms":1000}`)
	stopArgs        = json.RawMessage(`{"action":"stop","agent_id":"00000000-0000-4000-8000-000000000001"}`)
)

const zeroRev = "0000000000000000000000000000000000000000000000000000000000000000"

// TestMCPApprovalMatrix is the matrix's MCP rows, each through a real
// server in a task: a stdio server sandboxed with the network denied or
// allowed, one with the sandbox off, and a Streamable HTTP server. None
// needs approval by default (the host pinned what runs); with
// options.approvals.mcp each call asks, and its request carries the
// effect the transport and sandbox give it.
func TestMCPApprovalMatrix(t *testing.T) {
	bin := buildFaultServer(t)
	s := mcpserver.NewMCPServer("records", "1.0.0", mcpserver.WithToolCapabilities(false))
	s.AddTool(mcpgo.NewTool("env"), func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText("ok"), nil
	})
	srv := httptest.NewServer(mcpserver.NewStreamableHTTPServer(s))
	t.Cleanup(srv.Close)
	stdio := func(sandbox string) string {
		return "[options.mcp.servers.records]\ntransport = \"stdio\"\ncommand = \"" + bin + "\"\nargs = [\"-mode\", \"ok\"]\nsandbox = " + sandbox + "\n"
	}
	cells := []struct {
		name, server string
		sandbox      string
		effect       authority.CallEffect
	}{
		{"StdioSandboxNetworkDeny", stdio(`{ network = "deny" }`), "required filesystem=read-only network=deny", authority.EffectExecute},
		{"StdioSandboxNetworkAllow", stdio(`{ network = "allow" }`), "required filesystem=read-only network=allow", authority.EffectNetwork},
		{"StdioSandboxOff", stdio(`{ mode = "off" }`), "off", authority.EffectNetwork},
		{"StreamableHTTP", "[options.mcp.servers.records]\ntransport = \"http\"\nurl = \"" + srv.URL + "/mcp\"\n", "", authority.EffectNetwork},
	}
	script := `{"turns":[{"tool_calls":[{"id":"c1","name":"` + mcp.Alias("mcp/records/env") + `","arguments":{}}]},{"text":["done"]}]}`
	for _, c := range cells {
		t.Run(c.name, func(t *testing.T) {
			for _, gated := range []bool{false, true} {
				body := c.server
				if gated {
					body += "[options.approvals]\nmcp = \"required\"\n"
				}
				dir := t.TempDir()
				ws := filepath.Join(dir, "work")
				os.Mkdir(ws, 0o700)
				os.WriteFile(filepath.Join(dir, "script.json"), []byte(script), 0o600)
				doc := "schema_version = 1\n[options.model]\nprovider = \"script\"\nscript = { base = \"source\", path = \"script.json\" }\n" + body
				os.WriteFile(filepath.Join(dir, "deployment.toml"), []byte(doc), 0o600)
				d, err := Load(LoadOptions{Config: filepath.Join(dir, "deployment.toml"), Bindings: map[string]string{"workspace": ws}, LoopbackHTTP: true})
				if err != nil {
					t.Fatal(err)
				}
				rt, err := d.NewRuntime(context.Background(), HostOptions{})
				if err != nil {
					t.Fatal(err)
				}
				var mu sync.Mutex
				var asked []approval.Request
				ap := answerFunc(func(_ context.Context, req approval.Request) (approval.Answer, error) {
					mu.Lock()
					defer mu.Unlock()
					asked = append(asked, req)
					return approval.AllowOnce, nil
				})
				task, err := rt.StartTask(context.Background(), TaskRequest{Input: "go", Approver: ap})
				if err != nil {
					t.Fatal(err)
				}
				for range task.Events() {
				}
				obj := task.Wait()
				rt.Close()
				if obj.Outcome.Status != event.StatusCompleted {
					b, _ := json.Marshal(obj.Outcome)
					t.Fatalf("gated %v: outcome %s", gated, b)
				}
				if !gated {
					if len(asked) != 0 {
						t.Fatalf("asked %d times with no approval rule: an MCP call needs none by default", len(asked))
					}
					continue
				}
				if len(asked) != 1 {
					t.Fatalf("asked %d times under options.approvals.mcp", len(asked))
				}
				req := asked[0]
				if req.Tool != "mcp/records/env" || req.Effect != c.effect || req.Decision.Sandbox != c.sandbox {
					t.Fatalf("request %s effect %s sandbox %q, want effect %s sandbox %q", req.Tool, req.Effect, req.Decision.Sandbox, c.effect, c.sandbox)
				}
			}
		})
	}
}
