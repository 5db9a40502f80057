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

func TestDoctorReportsMemoryThatIsNotReady(t *testing.T) {
	t.Parallel()
	mem := memoryRepo(t)
	notRepo := t.TempDir()
	os.WriteFile(filepath.Join(mem, "bad-ontology.toml"), []byte("[kinds.a]\nbogus = 1\n"), 0o644)
	for _, c := range []struct {
		name, ref, mem, extra, names string
		exit                         int
	}{
		{"a ref that resolves", "refs/heads/master", mem, "", "", 0},
		{"a ref that does not", "refs/heads/gone", mem, "", "options.memory.ref", doctorUnsupported},
		{"no git repository", "refs/heads/master", notRepo, "", "options.memory.repository", doctorUnsupported},
		{"an ontology that does not load", "refs/heads/master", mem, `ontology = { base = "binding", name = "memory", path = "bad-ontology.toml" }` + "\n", "options.memory.ontology", doctorUnsupported},
	} {
		cfg, ws := writeConfig(t, chatModel+`[options.memory]
repository = { base = "binding", name = "memory", path = "." }
ref = "`+c.ref+`"
graph_paths = ["records/"]
`+c.extra+`[options.memory.grants.query]
kinds = ["*"]
paths = ["*"]
`)
		code, rep, all := doctorJSON(t, map[string]string{"LOCAL_KEY": "k-123456"}, "--config", cfg, "--bind", "workspace="+ws, "--bind", "memory="+c.mem)
		if code != c.exit {
			t.Fatalf("%s: exit %d, want %d\n%s", c.name, code, c.exit, all)
		}
		if c.exit != 0 {
			f := namedCheck(rep, "graph memory")
			if f.Status != "failed" || !strings.Contains(all, c.names) {
				t.Errorf("%s: finding %+v, want graph memory failed naming %s\n%s", c.name, f, c.names, all)
			}
		}
	}
}
