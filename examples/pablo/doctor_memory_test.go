package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// memoryRepo writes a one-commit memory repository (on refs/heads/master)
// with go-git and returns its directory.
func memoryRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	repo, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(dir, "records"), 0o755)
	os.WriteFile(filepath.Join(dir, "records", "a.md"), []byte("---\nid: a\nkind: service\n---\n"), 0o644)
	wt, _ := repo.Worktree()
	wt.Add("records/a.md")
	sig := &object.Signature{Name: "t", Email: "t@invalid", When: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	if _, err := wt.Commit("one", &git.CommitOptions{Author: sig, Committer: sig}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestDoctorReportsAMemoryRefThatDoesNotResolve(t *testing.T) {
	t.Parallel()
	mem := memoryRepo(t)
	for _, c := range []struct {
		ref  string
		exit int
	}{{"refs/heads/master", 0}, {"refs/heads/gone", doctorUnsupported}} {
		cfg, ws := writeConfig(t, chatModel+`[options.memory]
repository = { base = "binding", name = "memory", path = "." }
ref = "`+c.ref+`"
graph_paths = ["records/"]
[options.memory.grants.query]
kinds = ["*"]
paths = ["*"]
`)
		code, rep, all := doctorJSON(t, map[string]string{"LOCAL_KEY": "k-123456"}, "--config", cfg, "--bind", "workspace="+ws, "--bind", "memory="+mem)
		if code != c.exit {
			t.Fatalf("ref %s: exit %d, want %d\n%s", c.ref, code, c.exit, all)
		}
		if c.exit != 0 {
			f := namedCheck(rep, "graph memory")
			if f.Status != "failed" || !strings.Contains(all, "options.memory.ref") {
				t.Errorf("ref %s: finding %+v, want graph memory failed naming options.memory.ref\n%s", c.ref, f, all)
			}
		}
	}
}
