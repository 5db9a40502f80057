package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunUnderRepoWriteLeavesASubmoduleAlone runs `pablo run` with a
// scripted model whose shell.run, under the sandbox's repo-write, writes
// the work tree and then tries to rewrite a submodule's .git file (the
// way to make the host's next `git status` run a command of the model's
// choosing): the first lands, the second does not.
func TestRunUnderRepoWriteLeavesASubmoduleAlone(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	if _, err := os.Stat("/usr/bin/bwrap"); err != nil {
		t.Skip("needs bubblewrap")
	}
	dir := t.TempDir()
	git := func(d string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "protocol.file.allow=always"}, args...)...)
		cmd.Dir = d
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	sub, ws := filepath.Join(dir, "subsrc"), filepath.Join(dir, "work")
	os.MkdirAll(sub, 0o755)
	os.MkdirAll(ws, 0o755)
	git(sub, "init", "-q")
	os.WriteFile(filepath.Join(sub, "f"), []byte("f"), 0o644)
	git(sub, "add", "f")
	git(sub, "commit", "-qm", "f")
	git(ws, "init", "-q")
	git(ws, "submodule", "add", "-q", sub, "sub")
	git(ws, "commit", "-qm", "sub")
	gitfile, _ := os.ReadFile(filepath.Join(ws, "sub", ".git"))

	cfg := filepath.Join(dir, "d.toml")
	os.WriteFile(cfg, []byte("schema_version = 1\n[options.filesystem]\nwrite = true\n[options.shell]\nenabled = true\n[options.shell.sandbox]\nfilesystem = \"repo-write\"\n"), 0o600)
	script := filepath.Join(dir, "script.json")
	os.WriteFile(script, []byte(`{"turns":[{"tool_calls":[{"id":"c1","name":"shell_run","arguments":{"command":"echo x > note.txt","cwd":"."}},`+
		`{"id":"c2","name":"shell_run","arguments":{"command":"printf 'gitdir: ../evil\\n' > sub/.git","cwd":"."}}]},{"text":["done"]}]}`), 0o600)
	code, out, errOut := cli(t, "run", "go", "--json", "--script", script, "--config", cfg, "--bind", "workspace="+ws)
	if code != 0 {
		t.Fatalf("run: exit %d %s %s", code, out, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "note.txt")); string(b) != "x\n" {
		t.Errorf("the work tree's write did not land: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "sub", ".git")); string(b) != string(gitfile) || strings.Contains(string(b), "evil") {
		t.Errorf("the submodule's .git was rewritten: %q", b)
	}
}
