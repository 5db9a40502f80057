package acp_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/acp"
)

// pablo/skills-v1 sends each activation as _pablo/v1/skill (its record,
// never its instructions); pablo/output-v1 keeps output_validation in the
// terminal task, and output_repair stays out without
// pablo/output-repair-v1.
func TestSkillAndOutputExtensions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	os.MkdirAll(filepath.Join(dir, "skills", "review"), 0o700)
	os.Mkdir(ws, 0o700)
	os.WriteFile(filepath.Join(dir, "skills", "review", "SKILL.md"), []byte("---\nname: review\ndescription: Reviews evidence.\n---\nSECRET-INSTRUCTIONS: read the evidence first.\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "script.json"), []byte(`{"turns":[{"text":["{\"answer\":\"paid\"}"]}]}`), 0o600)
	doc := "schema_version = 1\n[options.model]\nprovider = \"script\"\nscript = { base = \"source\", path = \"script.json\" }\n" +
		"[options.shell]\nenabled = false\n[options.skills.roots]\nteam = { base = \"config\", path = \"skills\" }\n[options.skills]\nactivate = [\"team/review\"]\n" +
		"[options.output]\nschema = '{\"type\":\"object\",\"properties\":{\"answer\":{\"type\":\"string\"}},\"required\":[\"answer\"],\"additionalProperties\":false}'\n[options.output.repair]\nenabled = true\n"
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
	p := serve(t, sessions, acp.Options{Clock: newFakeClock()})
	p.initialize(acp.ExtV2, acp.ExtTaskV2, acp.ExtSkills, acp.ExtOutput)
	sid := p.newSession(2, ws)
	p.request(3, "session/prompt", textPrompt(sid, "Was it paid?"))
	frames, answer := p.until(3)
	skills := 0
	for _, f := range frames {
		if strings.Contains(f.raw, "SECRET-INSTRUCTIONS") {
			t.Fatalf("instructions in a frame: %s", f.raw)
		}
		if f.Method == acp.MethodSkill {
			skills++
			var n struct {
				Type            string         `json:"type"`
				Skill           map[string]any `json:"skill"`
				Instructions    *string        `json:"instructions"`
				ContentRedacted bool           `json:"content_redacted"`
			}
			jsonUnmarshal(t, f.Params, &n)
			if n.Type != "skill.activated" || n.Skill["qualified_name"] != "team/review" || n.Instructions != nil || !n.ContentRedacted {
				t.Fatalf("skill notification %s", f.raw)
			}
		}
	}
	if skills != 1 {
		t.Fatalf("%d skill notifications", skills)
	}
	if stopReasonOf(t, answer) != "end_turn" {
		t.Fatalf("answer %s", answer.raw)
	}
	var task map[string]json.RawMessage
	jsonUnmarshal(t, metaOf(t, answer.Result).Task, &task)
	if task["output_validation"] == nil || task["output_repair"] != nil {
		t.Fatalf("task %s", answer.raw)
	}
}
