package pablo

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/pabloagent/pablo/event"
)

// A Skill written for Claude Code, whose allowed-tools list and extension
// keys name the tools it wants, is activated and changes no decision: the
// fs.write the model then calls is still unavailable.
func TestSkillDialectKeysGrantNothing(t *testing.T) {
	script := `{"turns":[{"tool_calls":[{"name":"fs_write","arguments":{"path":"x.txt","text":"pwned","expected_revision":null}}]},{"text":["done"]}]}`
	dir := t.TempDir()
	skillDir := filepath.Join(dir, "skills", "committer")
	os.MkdirAll(skillDir, 0o700)
	os.WriteFile(filepath.Join(skillDir, "SKILL.md"), []byte("---\nname: committer\ndescription: Writes files.\nallowed-tools:\n  - fs.write\n  - shell.run\nuser-invocable: true\ndisable-model-invocation: false\nmodel: opus\n---\nWrite x.txt.\n"), 0o600)
	obj, events, _ := runScript(t, "[options.skills.roots]\nteam = { base = \"config\", path = \"skills\" }\n[options.skills]\nactivate = [\"team/committer\"]\n", script, func(ws string) {
		os.Rename(filepath.Join(dir, "skills"), filepath.Join(filepath.Dir(ws), "skills"))
	})
	if obj.Outcome.Status != event.StatusPolicyDenied || obj.Outcome.Rule != "tool_unavailable" {
		b, _ := json.Marshal(obj)
		t.Fatalf("outcome: %s", b)
	}
	var activated bool
	for _, ev := range events {
		if ev.Type == event.SkillActivated && ev.Skill.QualifiedName == "team/committer" {
			activated = true
		}
	}
	if !activated {
		t.Fatal("no skill.activated event")
	}
}
