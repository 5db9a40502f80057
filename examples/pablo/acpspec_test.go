package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/pabloagent/pablo"
)

// TestProjectRuntimesAreBounded: the runtimes of sessions in other project
// directories are kept up to the bound; past it the least recently used
// one whose tasks have all settled is closed, never one with a task
// running, and a later prompt of its project builds it afresh.
func TestProjectRuntimesAreBounded(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "deployment.toml")
	os.WriteFile(filepath.Join(dir, "s.json"), []byte(`{"turns":[{"text":["x"]}]}`), 0o600)
	os.WriteFile(cfg, []byte("schema_version = 1\n[options.model]\nprovider = \"script\"\nscript = { base = \"source\", path = \"s.json\" }\n"), 0o600)
	d, err := pablo.Load(pablo.LoadOptions{Config: cfg, Bindings: map[string]string{"workspace": dir}})
	if err != nil {
		t.Fatal(err)
	}
	built, closed := map[string]int{}, map[string]int{}
	finish := map[string]func(){} // returns the lease of the last prompt of a project
	var current string
	s := &sessionRuntimes{max: 2,
		load: func(context.Context, pablo.SessionSpec) (*pablo.Deployment, error) { return d, nil },
		build: func(_ context.Context, _ *pablo.Deployment, hooks runtimeHooks) (*pablo.Runtime, func(context.Context) error, error) {
			p := current
			built[p]++
			finish[p] = hooks.finished
			return nil, func(context.Context) error { closed[p]++; return nil }, nil
		}}
	prompt := func(p string) {
		t.Helper()
		current = p
		if _, err := s.Runtime(context.Background(), pablo.SessionSpec{Workspace: "/projects/" + p}); err != nil {
			t.Fatal(err)
		}
	}
	prompt("a")
	prompt("b")
	finish["a"]() // a's task settled; b's still runs
	prompt("c")   // three sources: a, idle and least recently used, goes
	if closed["a"] != 1 || closed["b"] != 0 || len(s.bySpec) != 2 {
		t.Fatalf("after a third project: closed %v, %d kept", closed, len(s.bySpec))
	}
	prompt("d") // b and c still run: none can go
	if closed["b"] != 0 || closed["c"] != 0 || len(s.bySpec) != 3 {
		t.Fatalf("a source with a running task was closed: %v", closed)
	}
	finish["b"]()
	finish["c"]()
	finish["d"]()
	prompt("a") // a comes back: built afresh; b, the oldest idle, goes
	if built["a"] != 2 || closed["b"] != 1 || len(s.bySpec) != 2 {
		t.Fatalf("built %v closed %v, %d kept", built, closed, len(s.bySpec))
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if closed["c"]+closed["d"]+closed["a"] != 1+1+2 {
		t.Fatalf("Close left runtimes open: %v", closed)
	}
}
