package pablo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/event"
)

// TestFilesystemRepoWriteScopeReachesTheTools: options.filesystem.scope =
// "repo-write" bounds the runtime's fs.write: a file in the work tree is
// written, a write into .git is denied by builtin.repo_write.git_dir and
// ends the task policy_denied; a workspace in no repository fails the
// runtime's build.
func TestFilesystemRepoWriteScopeReachesTheTools(t *testing.T) {
	script := `{"turns":[{"tool_calls":[{"id":"c1","name":"fs_write","arguments":{"path":"a.txt","text":"x","expected_revision":null}},` +
		`{"id":"c2","name":"fs_write","arguments":{"path":".git/hooks/pre-commit","text":"x","expected_revision":null}}]},{"text":["done"]}]}`
	body := "[options.filesystem]\nwrite = true\nscope = \"repo-write\"\n"
	var ws string
	obj, events, _ := runScript(t, body, script, func(w string) {
		ws = w
		os.MkdirAll(filepath.Join(w, ".git", "hooks"), 0o755)
	})
	if _, err := os.Stat(filepath.Join(ws, "a.txt")); err != nil {
		t.Errorf("the work tree's file was not written: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ws, ".git", "hooks", "pre-commit")); err == nil {
		t.Error("the hook was written")
	}
	if obj.Outcome.Status != event.StatusPolicyDenied {
		t.Fatalf("outcome %+v, want policy_denied", obj.Outcome)
	}
	found := false
	for _, e := range events {
		if e.Type == event.ToolFinished && e.CallID == "call_1_2" {
			found = true
			if !strings.Contains(string(e.Result), authority.RuleRepoGitDir) {
				t.Errorf("call_1_2 result %s does not name %s", e.Result, authority.RuleRepoGitDir)
			}
		}
	}
	if !found {
		t.Error("no tool.finished for the write into .git")
	}

	dir := t.TempDir()
	plain := filepath.Join(dir, "work")
	os.Mkdir(plain, 0o700)
	d := scriptDeployment(t, dir, plain, script, "[options.shell]\nenabled = false\n"+body)
	if rt, err := d.NewRuntime(t.Context(), HostOptions{}); err == nil {
		rt.Close()
		t.Error("a repo-write runtime over a workspace in no repository was built")
	}
}
