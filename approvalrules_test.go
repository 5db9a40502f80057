package pablo

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/deployment"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/internal/engine"
)

// The pieces of the deployments these tests decide under.
const (
	rulesBase = "schema_version = 1\n[options.filesystem]\nwrite = true\n[options.shell]\nenabled = true\n[options.children]\nenabled = true\n" +
		"[options.mcp.servers.rec]\ntransport = \"stdio\"\ncommand = \"/bin/true\"\n"
	shellOff = "[options.shell.sandbox]\nmode = \"off\"\n"
	lsPolicy = "[options.shell.commands]\ndefault = \"deny\"\nallow = [{ id = \"opts.ls\", executable = \"/usr/bin/ls\", args = [], match = \"prefix\" }]\n"
)

var (
	lsCall    = json.RawMessage(`{"command":"ls","cwd":"."}`)
	writeDocs = json.RawMessage(`{"path":"docs/a.txt","text":"x","expected_revision":null}`)
	writeTop  = json.RawMessage(`{"path":"b.txt","text":"x","expected_revision":null}`)
)

// opsLayer is an [[authority]] layer "ops" whose table sub (such as
// "policy.tools") holds one allow rule for value.
func opsLayer(sub, id, value, approval string) string {
	a := ""
	if approval != "" {
		a = ", approval = " + approval
	}
	return "[[authority]]\nid = \"ops\"\n[authority." + sub + "]\ndefault = \"allow\"\nallow = [{ id = \"" + id + "\", value = \"" + value + "\"" + a + " }]\n"
}

// decideOne loads doc and decides one call of tool with args (nil: the
// capability alone), as a task of the deployment and policy check do.
func decideOne(t *testing.T, doc string, tool authority.ID, args json.RawMessage) authority.Decision {
	t.Helper()
	d, err := loadString(t, doc)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := d.Decide(context.Background(), tool, args)
	if err != nil {
		t.Fatal(err)
	}
	if !dec.Allowed {
		t.Fatalf("%s denied: %+v", tool, dec)
	}
	return dec
}

// TestApprovalRuleOnEveryRuleKind: approval = "required" on an allow rule
// of every kind (an authority layer's tools, roots, MCP servers and tools,
// command rules; ordinary policy; options.approvals; a privileged default)
// makes the calls that rule allows ask, and the decision names the layer
// and rule that asked. A call the rule does not cover does not ask.
func TestApprovalRuleOnEveryRuleKind(t *testing.T) {
	const req = `"required"`
	cells := []struct {
		name        string
		extra       string
		tool        authority.ID
		args        json.RawMessage
		layer, rule string // empty: no approval
	}{
		{"AuthorityToolsShell", opsLayer("policy.tools", "ops.shell", "shell.run", req), authority.ShellRun, lsCall, "ops", "ops.shell"},
		{"AuthorityToolsOtherTool", "[[authority]]\nid = \"ops\"\n[authority.policy.tools]\ndefault = \"deny\"\nallow = [{ id = \"ops.shell\", value = \"shell.run\", approval = \"required\" }, { id = \"ops.read\", value = \"fs.read\" }]\n", authority.FSRead, json.RawMessage(`{"path":"a.txt"}`), "", ""},
		{"AuthorityToolsSubagent", opsLayer("policy.tools", "ops.children", "subagent", req), authority.Subagent, nil, "ops", "ops.children"},
		{"AuthorityToolsFSWrite", opsLayer("policy.tools", "ops.write", "fs.write", req), authority.FSWrite, writeTop, "ops", "ops.write"},
		{"AuthorityWriteRootsInside", opsLayer("policy.write_roots", "ops.docs", "docs", req), authority.FSWrite, writeDocs, "ops", "ops.docs"},
		{"AuthorityWriteRootsOutside", "[[authority]]\nid = \"ops\"\n[authority.policy.write_roots]\ndefault = \"deny\"\nallow = [{ id = \"ops.docs\", value = \"docs\", approval = \"required\" }, { id = \"ops.top\", value = \"b.txt\" }]\n", authority.FSWrite, writeTop, "", ""},
		{"AuthorityMCPServer", opsLayer("mcp.servers", "ops.rec", "rec", req), "mcp/rec/lookup", nil, "ops", "ops.rec"},
		{"AuthorityMCPTool", opsLayer("mcp.tools", "ops.lookup", "mcp/rec/lookup", req), "mcp/rec/lookup", nil, "ops", "ops.lookup"},
		{"AuthorityMCPOtherTool", "[[authority]]\nid = \"ops\"\n[authority.mcp.tools]\ndefault = \"deny\"\nallow = [{ id = \"ops.lookup\", value = \"mcp/rec/lookup\", approval = \"required\" }, { id = \"ops.write\", value = \"mcp/rec/write\" }]\n", "mcp/rec/write", nil, "", ""},
		{"AuthorityMCPLauncher", opsLayer("mcp.launchers", "ops.true", "/bin/true", req), "mcp/rec/lookup", nil, "ops", "ops.true"},
		{"AuthorityCommandRule", shellOff + "[[authority]]\nid = \"ops\"\n[authority.shell.commands]\ndefault = \"deny\"\nallow = [{ id = \"ops.ls\", executable = \"/usr/bin/ls\", args = [], match = \"prefix\", approval = \"required\" }]\n", authority.ShellRun, lsCall, "ops", "ops.ls"},
		{"OrdinaryPolicyTools", "[options.policy.tools]\ndefault = \"allow\"\nallow = [{ id = \"p.write\", value = \"fs.write\", approval = \"required\" }]\n", authority.FSWrite, writeTop, "options/policy", "p.write"},
		{"OrdinaryCommandRule", shellOff + "[options.shell.commands]\ndefault = \"deny\"\nallow = [{ id = \"o.ls\", executable = \"/usr/bin/ls\", args = [], match = \"prefix\", approval = \"required\" }]\n", authority.ShellRun, lsCall, "options/shell", "o.ls"},
		{"MCPPolicyTools", "[[options.mcp.policies]]\ntools = { default = \"allow\", allow = [{ id = \"m.lookup\", value = \"mcp/rec/lookup\", approval = \"required\" }] }\n", "mcp/rec/lookup", nil, "options/mcp/policies/0", "m.lookup"},
		{"ClassKeyShell", "[options.approvals]\nshell = \"required\"\n", authority.ShellRun, lsCall, "options.approvals", "options.approvals.shell"},
		{"ClassKeyMCP", "[options.approvals]\nmcp = \"required\"\n", "mcp/rec/lookup", nil, "options.approvals", "options.approvals.mcp"},
		{"ClassKeySubagent", "[options.approvals]\nsubagent = \"required\"\n", authority.Subagent, nil, "options.approvals", "options.approvals.subagent"},
		{"ClassKeyFSEdit", "[options.approvals]\nfilesystem_write = \"required\"\n", authority.FSEdit, nil, "options.approvals", "options.approvals.filesystem_write"},
		{"PrivilegedUnconfinedShell", shellOff, authority.ShellRun, lsCall, authority.LayerDefaults, authority.RuleApprovalUnconfinedShell},
		{"PrivilegedShellNetwork", "[options.shell.sandbox]\nnetwork = \"allow\"\n", authority.ShellRun, lsCall, authority.LayerDefaults, authority.RuleApprovalShellNetwork},
		{"RuleWithoutApproval", opsLayer("policy.tools", "ops.shell", "shell.run", ""), authority.ShellRun, lsCall, "", ""},
	}
	for _, c := range cells {
		t.Run(c.name, func(t *testing.T) {
			dec := decideOne(t, rulesBase+c.extra, c.tool, c.args)
			if c.rule == "" {
				if dec.NeedsApproval || dec.ApprovalBy != nil {
					t.Fatalf("%s asks: %+v", c.tool, dec)
				}
				return
			}
			if !dec.NeedsApproval || dec.ApprovalBy == nil || *dec.ApprovalBy != (authority.ApprovalSource{Layer: c.layer, RuleID: c.rule}) {
				t.Fatalf("%s: %+v (by %+v), want approval required by layer %q rule %q", c.tool, dec, dec.ApprovalBy, c.layer, c.rule)
			}
		})
	}
}

// TestNoLayerRemovesAnApproval: a requirement a lower layer set stays
// whatever a higher layer, ordinary policy, a command policy, a child's
// or a child's narrowing says; the decision keeps naming the
// lowest layer that asked.
func TestNoLayerRemovesAnApproval(t *testing.T) {
	const req = `"required"`
	ops := opsLayer("policy.tools", "ops.shell", "shell.run", req)
	cells := []struct {
		name        string
		doc         string
		tool        authority.ID
		args        json.RawMessage
		layer, rule string
	}{
		{"HigherAuthorityLayerAllowsWithout", ops + "[[authority]]\nid = \"team\"\n[authority.policy.tools]\ndefault = \"deny\"\nallow = [{ id = \"team.shell\", value = \"shell.run\" }]\n", authority.ShellRun, lsCall, "ops", "ops.shell"},
		{"OrdinaryPolicyAllowsWithout", ops + "[options.policy.tools]\ndefault = \"deny\"\nallow = [{ id = \"p.shell\", value = \"shell.run\" }]\n", authority.ShellRun, lsCall, "ops", "ops.shell"},
		{"CommandPolicyAllowsWithout", ops + shellOff + lsPolicy, authority.ShellRun, lsCall, "ops", "ops.shell"},
		{"MCPPolicyAllowsWithout", opsLayer("mcp.tools", "ops.lookup", "mcp/rec/lookup", req) + "[[options.mcp.policies]]\ntools = { default = \"deny\", allow = [{ id = \"m.lookup\", value = \"mcp/rec/lookup\" }] }\n", "mcp/rec/lookup", nil, "ops", "ops.lookup"},
		{"LaterRuleOfTheSameSetAllowsWithout", "[[authority]]\nid = \"ops\"\n[authority.policy.write_roots]\ndefault = \"deny\"\nallow = [{ id = \"ops.all\", value = \".\" }, { id = \"ops.docs\", value = \"docs\", approval = \"required\" }]\n", authority.FSWrite, writeDocs, "ops", "ops.docs"},
		{"ClassKeyUnderARuleWithout", "[options.approvals]\nfilesystem_write = \"required\"\n" + opsLayer("policy.tools", "ops.write", "fs.write", ""), authority.FSWrite, writeTop, "options.approvals", "options.approvals.filesystem_write"},
	}
	for _, c := range cells {
		t.Run(c.name, func(t *testing.T) {
			dec := decideOne(t, rulesBase+c.doc, c.tool, c.args)
			if !dec.NeedsApproval || dec.ApprovalBy == nil || *dec.ApprovalBy != (authority.ApprovalSource{Layer: c.layer, RuleID: c.rule}) {
				t.Fatalf("%+v (by %+v), want approval still required by layer %q rule %q", dec, dec.ApprovalBy, c.layer, c.rule)
			}
		})
	}
	t.Run("ChildNarrowing", func(t *testing.T) {
		d, err := loadString(t, rulesBase+ops)
		if err != nil {
			t.Fatal(err)
		}
		set, err := d.Authority()
		if err != nil {
			t.Fatal(err)
		}
		gate, err := engine.AskGate(set, nil, d.c.Options.Approvals)
		if err != nil {
			t.Fatal(err)
		}
		child, err := gate.Narrow(authority.Narrowing{ID: "child:c1", Tools: []authority.ID{authority.ShellRun}})
		if err != nil {
			t.Fatal(err)
		}
		dec := child.Decide(authority.Request{Capability: authority.ShellRun})
		if !dec.Allowed || dec.ApprovalBy == nil || dec.ApprovalBy.RuleID != "ops.shell" {
			t.Fatalf("a child decides shell.run %+v, want allowed and asking under ops.shell", dec)
		}
	})
}

// TestApprovalValuesOnlyAdd: "required" is the only value a rule's
// approval takes, on allow rules only; any other value, one on a deny
// rule, or one on shell.cwd_roots is a config error naming where, so no
// layer can write a requirement away.
func TestApprovalValuesOnlyAdd(t *testing.T) {
	for _, c := range []struct{ name, doc, want string }{
		{"PolicyRuleNone", opsLayer("policy.tools", "ops.shell", "shell.run", `"none"`), "approval"},
		{"PolicyRuleOptional", opsLayer("policy.tools", "ops.shell", "shell.run", `"optional"`), "approval"},
		{"PolicyRuleFalse", opsLayer("policy.tools", "ops.shell", "shell.run", `false`), "approval"},
		{"PolicyRuleEmpty", opsLayer("policy.tools", "ops.shell", "shell.run", `""`), "approval"},
		{"PolicyRuleCase", opsLayer("policy.tools", "ops.shell", "shell.run", `"Required"`), "approval"},
		{"MCPRuleNever", opsLayer("mcp.servers", "ops.rec", "rec", `"never"`), "approval"},
		{"CommandRuleNone", "[options.shell.commands]\ndefault = \"deny\"\nallow = [{ id = \"o.ls\", executable = \"/usr/bin/ls\", args = [], match = \"prefix\", approval = \"none\" }]\n", "approval"},
		{"DenyRule", "[options.policy.tools]\ndefault = \"allow\"\ndeny = [{ id = \"p.shell\", value = \"shell.run\", approval = \"required\" }]\n", "allow rules only"},
		{"DenyCommandRule", "[options.shell.commands]\ndefault = \"allow\"\ndeny = [{ id = \"o.ls\", executable = \"/usr/bin/ls\", args = [], match = \"prefix\", approval = \"required\" }]\n", "allow rules only"},
		{"RemoteEntryNone", remoteEntry(`approval = "none"`), "approval"},
		{"RemoteEntryFalse", remoteEntry(`approval = false`), "approval"},
		{"RemoteOption", "[options.a2a.remotes.r]\ncard_url = \"https://agents.example.com/card\"\nendpoint = \"https://agents.example.com/a2a\"\napproval = \"required\"\n", "approval"},
		{"CWDRoots", "[options.shell.cwd_roots]\ndefault = \"allow\"\nallow = [{ id = \"o.cwd\", value = \"docs\", approval = \"required\" }]\n", "cwd_roots"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := loadString(t, rulesBase+c.doc)
			var ce *deployment.Error
			if !errors.Is(err, ErrConfig) || !errors.As(err, &ce) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want a config error saying %q", err, c.want)
			}
		})
	}
}

// remoteEntry is remote r configured and admitted by the ops layer's
// a2a_remotes entry, with extra written into that entry.
func remoteEntry(extra string) string {
	return "[options.a2a.remotes.r]\ncard_url = \"https://agents.example.com/card\"\nendpoint = \"https://agents.example.com/a2a\"\n" +
		"[[authority]]\nid = \"ops\"\n[authority.a2a_remotes]\nr = { card_url = \"https://agents.example.com/card\", endpoint = \"https://agents.example.com/a2a\", " + extra + " }\n"
}

// TestNoChannelDenialNamesTheRequirement: with no approval channel, a call
// that needs approval is denied policy_denied under what required it (a
// layer's rule, a class key, a privileged default), never a generic rule,
// and the call never runs.
func TestNoChannelDenialNamesTheRequirement(t *testing.T) {
	write := `{"turns":[{"tool_calls":[{"id":"c1","name":"fs_write","arguments":{"path":"docs/a.txt","text":"x","expected_revision":null}}]},{"text":["done"]}]}`
	shell := `{"turns":[{"tool_calls":[{"id":"c1","name":"shell_run","arguments":{"command":"ls","cwd":"."}}]},{"text":["done"]}]}`
	for _, c := range []struct {
		name, extra, script string
		layer, rule         string
	}{
		{"AuthorityRule", opsLayer("policy.write_roots", "ops.docs", "docs", `"required"`), write, "ops", "ops.docs"},
		{"ClassKey", "[options.approvals]\nfilesystem_write = \"required\"\n", write, "options.approvals", "options.approvals.filesystem_write"},
		{"CommandRule", shellOff + "[options.shell.commands]\ndefault = \"deny\"\nallow = [{ id = \"o.ls\", executable = \"/usr/bin/ls\", args = [], match = \"prefix\", approval = \"required\" }]\n", shell, "options/shell", "o.ls"},
		{"PrivilegedDefault", shellOff, shell, authority.LayerDefaults, authority.RuleApprovalUnconfinedShell},
	} {
		t.Run(c.name, func(t *testing.T) {
			var ws string
			d, err := loadString(t, "schema_version = 1\n[options.model]\nprovider = \"script\"\nscript = { base = \"source\", path = \"s.json\" }\n[options.filesystem]\nwrite = true\n[options.shell]\nenabled = true\n"+c.extra, func(o *LoadOptions) {
				os.WriteFile(filepath.Join(filepath.Dir(o.Config), "s.json"), []byte(c.script), 0o600)
				ws = o.Bindings["workspace"]
				os.Mkdir(filepath.Join(ws, "docs"), 0o700)
			})
			if err != nil {
				t.Fatal(err)
			}
			rt, err := d.NewRuntime(context.Background(), HostOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			task, err := rt.StartTask(context.Background(), TaskRequest{Input: "go"})
			if err != nil {
				t.Fatal(err)
			}
			var finished json.RawMessage
			for ev := range task.Events() {
				if ev.Type == event.ToolFinished {
					finished = ev.Result
				}
			}
			obj := task.Wait()
			rule, _ := json.Marshal(obj.Outcome.Rule)
			if obj.Outcome.Status != event.StatusPolicyDenied || string(rule) != `{"configured":{"id":"`+c.rule+`"}}` {
				t.Fatalf("outcome %s rule %s, want policy_denied under %s", obj.Outcome.Status, rule, c.rule)
			}
			if !strings.Contains(string(finished), `"policy_denied"`) {
				t.Errorf("tool.finished %s, want policy_denied", finished)
			}
			if _, err := os.Stat(filepath.Join(ws, "docs", "a.txt")); err == nil {
				t.Error("the denied write ran")
			}
		})
	}
}
