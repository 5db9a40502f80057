package pablo

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/pabloagent/pablo/graph"

	"github.com/pabloagent/pablo/authority"
)

// TestGraphShowsApprovalGatedCapabilities: a capability every call of
// which waits for an approver is approval_gated in the graph, naming the
// rule, class key or privileged default that asks; it is usable (not in
// NotReady, and a Skill requiring it stays ready), why admits it and names
// the rule as its cause, and a gated node that cannot run at all for
// another reason takes that state instead.
func TestGraphShowsApprovalGatedCapabilities(t *testing.T) {
	const skill = "[options.skills]\nroots = { team = { base = \"source\", path = \"skills\" } }\n"
	cells := []struct {
		name, doc   string
		bwrap       string
		node        string
		state       graph.Readiness
		layer, rule string
	}{
		{"ToolRule", "[[authority]]\nid = \"ops\"\n[authority.policy.tools]\ndefault = \"allow\"\nallow = [{ id = \"ops.write\", value = \"fs.write\", approval = \"required\" }, { id = \"ops.read\", value = \"fs.read\" }]\n", "", "tool:fs.write", graph.ApprovalGated, "ops", "ops.write"},
		{"ClassKey", "[options.approvals]\nfilesystem_write = \"required\"\n", "", "tool:fs.edit", graph.ApprovalGated, "options.approvals", "options.approvals.filesystem_write"},
		{"PrivilegedDefault", "[options.shell]\nenabled = true\n[options.shell.sandbox]\nmode = \"off\"\n", "", "tool:shell.run", graph.ApprovalGated, authority.LayerDefaults, authority.RuleApprovalUnconfinedShell},
		{"NotGated", "[options.shell]\nenabled = true\n[options.shell.sandbox]\nmode = \"off\"\n[options.shell.commands]\ndefault = \"deny\"\nallow = [{ id = \"t.ls\", executable = \"/usr/bin/ls\", args = [], match = \"prefix\" }]\n", "", "tool:shell.run", graph.Ready, "", ""},
		{"GatedButSandboxMissing", "[options.shell]\nenabled = true\n[options.shell.sandbox]\nnetwork = \"allow\"\n", "/nonexistent/bwrap", "tool:shell.run", graph.Unsupported, "", ""},
	}
	for _, c := range cells {
		t.Run(c.name, func(t *testing.T) {
			d, err := loadString(t, "schema_version = 1\n[options.filesystem]\nwrite = true\n"+skill+c.doc, func(o *LoadOptions) {
				dir := filepath.Join(filepath.Dir(o.Config), "skills", "review")
				os.MkdirAll(dir, 0o700)
				os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: review\ndescription: Reviews.\nallowed-tools: "+c.node[len("tool:"):]+"\n---\nReview.\n"), 0o600)
			})
			if err != nil {
				t.Fatal(err)
			}
			g, err := d.Graph(context.Background(), graph.Options{Bubblewrap: c.bwrap})
			if err != nil {
				t.Fatal(err)
			}
			n, ok := g.Node(c.node)
			if !ok || n.State != c.state {
				t.Fatalf("%s: %+v, want %s", c.node, n, c.state)
			}
			if sk, _ := g.Node("skill:team/review"); c.state.Usable() && sk.State != graph.Ready {
				t.Errorf("a Skill requiring %s is %s: an approval gate does not block what requires it", c.node, sk.State)
			}
			for _, nr := range g.NotReady() {
				if nr.ID == c.node && c.state.Usable() {
					t.Errorf("%s is listed not ready", c.node)
				}
			}
			if c.state != graph.ApprovalGated {
				if len(g.ApprovalGated()) != 0 && c.state == graph.Ready {
					t.Errorf("gated nodes %+v, want none", g.ApprovalGated())
				}
				return
			}
			if len(n.Reasons) != 1 || n.Reasons[0].Code != "approval_required" || n.Reasons[0].Layer != c.layer || n.Reasons[0].Rule != c.rule {
				t.Errorf("reasons %+v, want approval_required by layer %q rule %q", n.Reasons, c.layer, c.rule)
			}
			e, err := d.Why(context.Background(), n.Capability, graph.Options{Bubblewrap: c.bwrap})
			if err != nil {
				t.Fatal(err)
			}
			if !e.Admitted || len(e.Causes) != 1 || e.Causes[0].Rule != c.rule || e.Decision == nil || e.Decision.ApprovalBy == nil || e.Decision.ApprovalBy.RuleID != c.rule {
				t.Errorf("why %s: %+v, want admitted with the cause %s", n.Capability, e, c.rule)
			}
		})
	}
}
