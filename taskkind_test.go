package pablo

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/graph"
)

// kindDeployment is a deployment activating three Skills: team/review for
// task kind review, team/triage for triage, team/common for every kind.
// Its model reads team/triage's notes.md through skill.read, then answers.
func kindDeployment(t *testing.T) *Deployment {
	t.Helper()
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	for name, kinds := range map[string]string{"review": "review", "triage": "triage bugs", "common": ""} {
		sd := filepath.Join(dir, "skills", name)
		os.MkdirAll(sd, 0o700)
		meta := ""
		if kinds != "" {
			meta = "metadata:\n  task-kinds: " + kinds + "\n"
		}
		os.WriteFile(filepath.Join(sd, "SKILL.md"), []byte("---\nname: "+name+"\ndescription: The "+name+" Skill.\n"+meta+"---\nDo "+name+" things.\n"), 0o600)
		os.WriteFile(filepath.Join(sd, "notes.md"), []byte(name+" notes\n"), 0o600)
	}
	script := `{"turns":[{"tool_calls":[{"name":"skill_read","arguments":{"skill":"team/triage","path":"notes.md"}}]},{"text":["done"]}]}`
	return scriptDeployment(t, dir, ws, script, "[options.shell]\nenabled = false\n[options.tools]\nmax_recoverable_errors = 2\n"+
		"[options.skills]\nroots = { team = { base = \"source\", path = \"skills\" } }\nactivate = [\"team/review\", \"team/triage\", \"team/common\"]\n")
}

// runKind runs the kind deployment's task as a task of kind and returns
// the Skills it activated and skill.read's result.
func runKind(t *testing.T, kind string) (activated []string, read string) {
	t.Helper()
	rt, err := kindDeployment(t).NewRuntime(context.Background(), HostOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	task, err := rt.StartTask(context.Background(), TaskRequest{Input: "go", Kind: kind})
	if err != nil {
		t.Fatal(err)
	}
	for ev := range task.Events() {
		switch {
		case ev.Type == event.SkillActivated:
			activated = append(activated, ev.Skill.QualifiedName)
		case ev.Type == event.ToolFinished:
			b, _ := json.Marshal(ev)
			read += string(b)
		}
	}
	if obj := task.Wait(); obj.Outcome.Status != event.StatusCompleted {
		b, _ := json.Marshal(obj)
		t.Fatalf("kind %q: %s", kind, b)
	}
	return activated, read
}

// A task of a kind activates only the Skills for it (or for every kind),
// and cannot read another kind's Skill through skill.read: the read fails
// as for a Skill never activated.
func TestTaskKindFiltersSkills(t *testing.T) {
	activated, read := runKind(t, "review")
	if !slices.Equal(activated, []string{"team/review", "team/common"}) {
		t.Errorf("kind review activated %v, want team/review and team/common", activated)
	}
	if !strings.Contains(read, "not_activated") || strings.Contains(read, "triage notes") {
		t.Errorf("kind review read team/triage: %s", read)
	}
	activated, read = runKind(t, "bugs")
	if !slices.Equal(activated, []string{"team/triage", "team/common"}) || !strings.Contains(read, "triage notes") {
		t.Errorf("kind bugs: activated %v, read %s", activated, read)
	}
}

// A task that names no kind keeps every activated Skill, as before kinds.
func TestNoTaskKindKeepsEverySkill(t *testing.T) {
	activated, read := runKind(t, "")
	if !slices.Equal(activated, []string{"team/review", "team/triage", "team/common"}) || !strings.Contains(read, "triage notes") {
		t.Errorf("no kind: activated %v, read %s", activated, read)
	}
}

// A malformed kind is refused at admission.
func TestTaskKindMalformedIsRefused(t *testing.T) {
	rt, err := kindDeployment(t).NewRuntime(context.Background(), HostOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	for _, k := range []string{"Review", "two words", "-x", strings.Repeat("a", 65), "a\x00b"} {
		if _, err := rt.StartTask(context.Background(), TaskRequest{Input: "go", Kind: k}); err == nil || !strings.Contains(err.Error(), "TaskRequest.Kind") {
			t.Errorf("kind %q: %v", k, err)
		}
	}
}

// The graph for a task of a kind denies the Skills for other kinds
// (task_kind_mismatch); with no kind every Skill stays ready.
func TestGraphShowsTaskKind(t *testing.T) {
	d := kindDeployment(t)
	for kind, want := range map[string]graph.Readiness{"review": graph.Denied, "": graph.Ready} {
		g, err := d.Graph(context.Background(), graph.Options{TaskKind: kind})
		if err != nil {
			t.Fatal(err)
		}
		n, ok := g.Node("skill:team/triage")
		if !ok || n.State != want {
			t.Errorf("kind %q: triage node %+v, want %s", kind, n, want)
		}
		if kind != "" && (len(n.Reasons) == 0 || n.Reasons[0].Code != "task_kind_mismatch") {
			t.Errorf("kind %q: reasons %+v", kind, n.Reasons)
		}
		if n, _ := g.Node("skill:team/common"); n.State != graph.Ready {
			t.Errorf("kind %q: common node %+v", kind, n)
		}
	}
}
