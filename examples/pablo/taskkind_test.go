package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunKindFlagFiltersSkills: `pablo run --kind` is the task's kind:
// the task activates only the Skills for it (or for every kind); `pablo
// why --kind` shows another kind's Skill denied with task_kind_mismatch; an
// invalid kind is a usage error.
func TestRunKindFlagFiltersSkills(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	for name, kinds := range map[string]string{"review": "review", "triage": "triage"} {
		sd := filepath.Join(dir, "skills", name)
		os.MkdirAll(sd, 0o700)
		os.WriteFile(filepath.Join(sd, "SKILL.md"), []byte("---\nname: "+name+"\ndescription: The "+name+" Skill.\nmetadata:\n  task-kinds: "+kinds+"\n---\nDo it.\n"), 0o600)
	}
	cfg := filepath.Join(dir, "d.toml")
	os.WriteFile(cfg, []byte("schema_version = 1\n[options.model]\nprovider = \"script\"\nscript = { base = \"source\", path = \"s.json\" }\n[options.shell]\nenabled = false\n"+
		"[options.skills]\nroots = { team = { base = \"source\", path = \"skills\" } }\nactivate = [\"team/review\", \"team/triage\"]\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "s.json"), []byte(`{"turns":[{"text":["done"]}]}`), 0o600)
	deploy := []string{"--config", cfg, "--bind", "workspace=" + ws}
	for kind, want := range map[string][]string{"": {"team/review", "team/triage"}, "review": {"team/review"}} {
		trace := filepath.Join(t.TempDir(), "t.jsonl")
		args := append([]string{"run", "go", "--trace", trace}, deploy...)
		if kind != "" {
			args = append(args, "--kind", kind)
		}
		if code, out, errs := cli(t, args...); code != 0 {
			t.Fatalf("run --kind %q: exit %d %s %s", kind, code, out, errs)
		}
		b, _ := os.ReadFile(trace)
		got := strings.Count(string(b), `"type":"skill.activated"`)
		if got != len(want) {
			t.Errorf("run --kind %q: %d skill.activated events, want %v", kind, got, want)
		}
		for _, w := range want {
			if !strings.Contains(string(b), `"qualified_name":"`+w+`"`) {
				t.Errorf("run --kind %q: %s not activated", kind, w)
			}
		}
	}
	// Another kind's Skill is not admitted, so why exits 1, as for any
	// capability it reports denied; the Skill of the task's kind exits 0.
	if code, out, _ := cli(t, append([]string{"why", "team/triage", "--kind", "review"}, deploy...)...); code != 1 || !strings.Contains(out, "task_kind_mismatch") {
		t.Errorf("why team/triage --kind review: exit %d, want 1 naming task_kind_mismatch:\n%s", code, out)
	}
	if code, out, _ := cli(t, append([]string{"why", "team/triage", "--kind", "triage"}, deploy...)...); code != 0 || strings.Contains(out, "task_kind_mismatch") {
		t.Errorf("why team/triage --kind triage: exit %d, want 0:\n%s", code, out)
	}
	if code, _, errs := cli(t, append([]string{"run", "go", "--kind", "Two Words"}, deploy...)...); code != 2 || !strings.Contains(errs, "--kind") {
		t.Errorf("an invalid --kind: exit %d %s", code, errs)
	}
}
