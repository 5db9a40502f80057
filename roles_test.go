package pablo

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/graph"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/ledger/outcome"
)

// TestTaskRolesDecideItsTools: a tool whose configuration requires a role
// is denied to a task the host gave no role, the recorded decision naming
// the missing role, and runs for a task given it with TaskRequest.Roles;
// a role outside the grammar refuses the task at admission.
func TestTaskRolesDecideItsTools(t *testing.T) {
	t.Parallel()
	script := `{"turns":[{"text":["x"],"tool_calls":[{"id":"c1","name":"fs_list","arguments":{"path":"."}}]},{"text":["done"]}]}`
	for _, tc := range []struct {
		name  string
		roles []string
		want  outcome.Status
		more  string
	}{
		{"without the role", nil, event.StatusPolicyDenied, ""},
		{"another role", []string{"auditor"}, event.StatusPolicyDenied, ""},
		{"holding the role", []string{"auditor", "support-lead"}, event.StatusCompleted, ""},
		// The deployment's approval classes wrap its authority: the
		// wrapper binds roles too.
		{"under an approval gate", []string{"support-lead"}, event.StatusCompleted, "[options.approvals]\nfilesystem_write = \"required\"\n"},
		{"under an approval gate, without the role", nil, event.StatusPolicyDenied, "[options.approvals]\nfilesystem_write = \"required\"\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			ws := filepath.Join(dir, "work")
			os.Mkdir(ws, 0o700)
			d := scriptDeployment(t, dir, ws, script, "[options.shell]\nenabled = false\n[options.required_roles]\n\"fs.list\" = [\"support-lead\"]\n"+tc.more)
			store := ledger.NewMemoryStore()
			rt, err := d.NewRuntime(context.Background(), HostOptions{Store: store})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			task, err := rt.StartTask(context.Background(), TaskRequest{Input: "list", Roles: tc.roles})
			if err != nil {
				t.Fatal(err)
			}
			obj := task.Wait()
			if obj.Outcome.Status != tc.want {
				t.Fatalf("outcome %+v, want %s", obj.Outcome, tc.want)
			}
			if tc.want == event.StatusCompleted {
				return
			}
			rep, err := ledger.RecoverTask(context.Background(), store, *obj.RunID)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range rep.Completed {
				if c.CallID != "call_1_1" {
					continue
				}
				if dec := c.Decision; dec == nil || dec.Allowed || dec.MissingRole != "support-lead" || dec.RuleID != authority.RuleRoleRequired {
					t.Fatalf("recorded decision %+v, want support-lead missing", c.Decision)
				}
				return
			}
			t.Fatalf("no denied call recorded: %+v", rep.Completed)
		})
	}
	t.Run("invalid role", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		d := scriptDeployment(t, dir, dir, script, "[options.shell]\nenabled = false\n")
		rt, err := d.NewRuntime(context.Background(), HostOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close()
		if _, err := rt.StartTask(context.Background(), TaskRequest{Input: "list", Roles: []string{"Support Lead"}}); err == nil {
			t.Fatal("a task with an invalid role was admitted")
		}
	})
}

// TestGraphShowsRequiredRolesAdmitted: the tool profile's readiness check
// "required roles admitted" lists every required role; without them each
// capability requiring one is denied role_missing (an MCP server's own
// roles deny the server), and why names the role; holding them admits.
func TestGraphShowsRequiredRolesAdmitted(t *testing.T) {
	t.Parallel()
	d := graphDeployment(t, graphScriptModel+"[options.shell]\nenabled = false\n"+
		"[options.required_roles]\n\"fs.list\" = [\"support-lead\"]\n"+
		"[options.mcp.servers.records]\ntransport = \"stdio\"\ncommand = \"/bin/true\"\nroles = [\"records-reader\"]\n", "")
	for _, tc := range []struct {
		name     string
		roles    []string
		missing  []string
		admitted bool
	}{
		{"no roles", nil, []string{"records-reader", "support-lead"}, false},
		{"one role", []string{"support-lead"}, []string{"records-reader"}, false},
		{"every role", []string{"records-reader", "support-lead"}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := mustGraph(t, d, graph.Options{Roles: tc.roles})
			tools, _ := g.Node("tools")
			if tools.Attributes["required_roles"] != "records-reader,support-lead" {
				t.Errorf("tool profile attributes %v", tools.Attributes)
			}
			var missing []string
			admitted := false
			for _, r := range tools.Reasons {
				switch r.Code {
				case "role_missing":
					for _, m := range []string{"records-reader", "support-lead"} {
						if strings.Contains(r.Detail, `"`+m+`"`) {
							missing = append(missing, m)
						}
					}
				case "required_roles_admitted":
					admitted = true
				}
			}
			if !slices.Equal(missing, tc.missing) || admitted != tc.admitted {
				t.Errorf("tool profile reasons %+v, want missing %v admitted %t", tools.Reasons, tc.missing, tc.admitted)
			}
			for id, role := range map[string]string{"tool:fs.list": "support-lead", "mcp:records": "records-reader"} {
				n, _ := g.Node(id)
				want := graph.Ready
				if slices.Contains(tc.missing, role) {
					want = graph.Denied
					if len(n.Reasons) == 0 || n.Reasons[0].Code != "role_missing" || !strings.Contains(n.Reasons[0].Detail, role) {
						t.Errorf("%s reasons %+v, want role_missing naming %s", id, n.Reasons, role)
					}
				}
				if n.State != want {
					t.Errorf("%s is %s, want %s", id, n.State, want)
				}
			}
			e, err := d.Why(context.Background(), "fs.list", graph.Options{Roles: tc.roles})
			if err != nil {
				t.Fatal(err)
			}
			if held := slices.Contains(tc.roles, "support-lead"); e.Admitted != held || (!held && (e.Decision == nil || e.Decision.MissingRole != "support-lead")) {
				t.Errorf("why fs.list with %v: admitted %t decision %+v", tc.roles, e.Admitted, e.Decision)
			}
		})
	}
}

// TestASkillRequiringARoleIsTheTasksThatHoldIt: a Skill whose capability
// requires a role is activated for the deployment, and each task takes it
// only when it holds the role: a task without it gets neither its
// instructions nor skill.activated, and skill.read answers as for a Skill
// never activated; a task holding the role gets all three. why agrees.
func TestASkillRequiringARoleIsTheTasksThatHoldIt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	sk := filepath.Join(dir, "skills", "review")
	os.MkdirAll(sk, 0o700)
	os.WriteFile(filepath.Join(sk, "SKILL.md"), []byte("---\nname: review\ndescription: Review.\n---\nReview-instructions-here.\n"), 0o600)
	script := `{"turns":[{"tool_calls":[{"id":"r1","name":"skill_read","arguments":{"skill":"team/review","path":"SKILL.md"}}]},{"text":["done"]}]}`
	d := scriptDeployment(t, dir, ws, script, "[options.shell]\nenabled = false\n[options.tools]\nmax_recoverable_errors = 3\n"+
		"[options.required_roles]\n\"team/review\" = [\"lead\"]\n[options.skills]\nactivate = [\"team/review\"]\n[options.skills.roots]\nteam = { base = \"source\", path = \"skills\" }\n")
	for _, tc := range []struct {
		roles []string
		held  bool
	}{{nil, false}, {[]string{"lead"}, true}} {
		e, err := d.Why(context.Background(), "team/review", graph.Options{Roles: tc.roles})
		if err != nil {
			t.Fatal(err)
		}
		if e.Admitted != tc.held {
			t.Errorf("why team/review with roles %v: admitted %t, want %t", tc.roles, e.Admitted, tc.held)
		}
		rt, err := d.NewRuntime(context.Background(), HostOptions{})
		if err != nil {
			t.Fatal(err)
		}
		task, err := rt.StartTask(context.Background(), TaskRequest{Input: "review", Roles: tc.roles})
		if err != nil {
			t.Fatal(err)
		}
		activated, read := 0, ""
		for ev := range task.Events() {
			switch ev.Type {
			case event.SkillActivated:
				activated++
			case event.ToolFinished:
				read = string(ev.Result)
			}
		}
		obj := task.Wait()
		rt.Close()
		if obj.Outcome.Status != event.StatusCompleted {
			t.Fatalf("roles %v: outcome %+v", tc.roles, obj.Outcome)
		}
		if got := activated == 1; got != tc.held {
			t.Errorf("roles %v: %d skill.activated, want the Skill only with the role", tc.roles, activated)
		}
		if got := strings.Contains(read, "Review-instructions-here."); got != tc.held {
			t.Errorf("roles %v: skill.read answered %s", tc.roles, read)
		}
		if !tc.held && !strings.Contains(read, "not_activated") {
			t.Errorf("roles %v: skill.read answered %s, want not_activated", tc.roles, read)
		}
	}
}

// A child spawned without a Skill its parent holds cannot read it
// through skill.read: the Skill is not activated for it.
func TestChildReadsOnlyTheSkillsItWasGiven(t *testing.T) {
	t.Parallel()
	script := `{"turns":[
		{"tool_calls":[{"id":"s1","name":"subagent","arguments":{"action":"spawn","request":{"input":"read it","capabilities":{"tools":["skill.read"],"skills":[]}}}}]},
		{"tool_calls":[{"id":"w1","name":"subagent","arguments":{"action":"wait","agent_ids":["{{agent_id:s1}}"],"mode":"all","timeout_ms":60000}}]},
		{"text":["root done"]}],
		"agents":[{"input":"read it","turns":[
			{"tool_calls":[{"id":"r1","name":"skill_read","arguments":{"skill":"team/review","path":"SKILL.md"}}]},
			{"text":["child done"]}]}]}`
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	sk := filepath.Join(dir, "skills", "review")
	os.MkdirAll(sk, 0o700)
	os.WriteFile(filepath.Join(sk, "SKILL.md"), []byte("---\nname: review\ndescription: Review.\n---\nReview-instructions-here.\n"), 0o600)
	d := scriptDeployment(t, dir, ws, script, "[options.shell]\nenabled = false\n[options.children]\nenabled = true\n[options.tools]\nmax_recoverable_errors = 3\n"+
		"[options.skills]\nactivate = [\"team/review\"]\n[options.skills.roots]\nteam = { base = \"source\", path = \"skills\" }\n")
	rt, err := d.NewRuntime(context.Background(), HostOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	obj, events := runTask(t, rt, "go")
	if obj.Outcome.Status != event.StatusCompleted {
		t.Fatalf("outcome %+v", obj.Outcome)
	}
	read := ""
	for _, ev := range events {
		if ev.Type == event.ToolFinished && ev.Name == "skill.read" {
			read = string(ev.Result)
		}
	}
	if !strings.Contains(read, "not_activated") || strings.Contains(read, "Review-instructions-here.") {
		t.Fatalf("the child's skill.read answered %q, want not_activated", read)
	}
}
