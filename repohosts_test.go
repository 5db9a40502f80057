package pablo

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"

	"github.com/pabloagent/pablo/internal/egress"
	"github.com/pabloagent/pablo/ledger"
)

// TestRepositoryHostOnlyReadsTheRemotesAtEachTaskStart: on one long-lived
// runtime, shell.run under network repository-host-only reads the
// workspace repository's remotes when each task starts: a task started
// after the remote changed allows the new host, never the old, and its
// snapshot records what it was given.
func TestRepositoryHostOnlyReadsTheRemotesAtEachTaskStart(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	repo, err := git.PlainInit(ws, false)
	if err != nil {
		t.Fatal(err)
	}
	setOrigin := func(u string) {
		_ = repo.DeleteRemote("origin")
		if _, err := repo.CreateRemote(&gitconfig.RemoteConfig{Name: "origin", URLs: []string{u}}); err != nil {
			t.Fatal(err)
		}
	}
	setOrigin("https://first.example.com/r.git")
	d := scriptDeployment(t, dir, ws, `{"turns":[{"text":["done"]}]}`,
		"[options.shell]\nenabled = true\n[options.shell.sandbox]\nnetwork = \"repository-host-only\"\n")
	store := ledger.NewMemoryStore()
	rt := forwardingRuntime(t, d, store)
	snapshot := func() string {
		t.Helper()
		obj, _ := runTask(t, rt, "go")
		recs, err := store.Records(context.Background(), *obj.RunID)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Kind == ledger.RecordSnapshot {
				return r.Snapshot.Snapshot
			}
		}
		t.Fatalf("task %s has no snapshot", *obj.RunID)
		return ""
	}
	if s := snapshot(); !strings.Contains(s, "allow=first.example.com from=repository-remotes") {
		t.Errorf("first task's snapshot %s, want first.example.com", s)
	}
	setOrigin("https://second.example.com/r.git")
	s := snapshot()
	if !strings.Contains(s, "allow=second.example.com from=repository-remotes") || strings.Contains(s, "first.example.com") {
		t.Errorf("second task's snapshot %s, want second.example.com only", s)
	}
}

// TestRepositoryHostOnlyKeepsTheRepositoryOfTheRuntime: with the
// workspace below its repository's root, a command that makes a .git of
// its own in the workspace (repo-write shows the repository's .git to no
// command there, so nothing stops it) does not give the next task the
// remotes it wrote: the repository is the one that held the workspace
// when the runtime was built.
func TestRepositoryHostOnlyKeepsTheRepositoryOfTheRuntime(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "repo")
	ws := filepath.Join(root, "work")
	repo, err := git.PlainInit(root, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.CreateRemote(&gitconfig.RemoteConfig{Name: "origin", URLs: []string{"https://first.example.com/r.git"}}); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(ws, 0o755)
	d := scriptDeployment(t, dir, ws, `{"turns":[{"text":["done"]}]}`,
		"[options.shell]\nenabled = true\n[options.shell.sandbox]\nnetwork = \"repository-host-only\"\n"+
			"[options.mcp.servers.local]\ntransport = \"stdio\"\ncommand = \"/bin/true\"\n[options.mcp.servers.local.sandbox]\nnetwork = \"repository-host-only\"\n")
	store := ledger.NewMemoryStore()
	rt := forwardingRuntime(t, d, store)
	remotes := egress.RepositoryRoot(ws)
	// What a command of the first task leaves behind.
	planted, err := git.PlainInit(ws, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := planted.CreateRemote(&gitconfig.RemoteConfig{Name: "origin", URLs: []string{"https://planted.example.com/r.git"}}); err != nil {
		t.Fatal(err)
	}
	// A stdio server's options, as each task's opener builds them.
	set, err := d.Authority()
	if err != nil {
		t.Fatal(err)
	}
	mo, err := d.mcpOptions(HostOptions{}, set, remotes)
	if err != nil || len(mo.Servers) != 1 || !slices.Equal(mo.Servers[0].Sandbox.Allow, []string{"first.example.com"}) {
		t.Errorf("the server's allowlist %+v (%v), want first.example.com only", mo.Servers, err)
	}
	obj, _ := runTask(t, rt, "go")
	recs, err := store.Records(context.Background(), *obj.RunID)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Kind == ledger.RecordSnapshot {
			if s := r.Snapshot.Snapshot; !strings.Contains(s, "allow=first.example.com from=repository-remotes") || strings.Contains(s, "planted") {
				t.Errorf("the task's snapshot %s, want the runtime's repository's first.example.com only", s)
			}
		}
	}
}

// TestRepositoryHostOnlyKeepsTheRemotesOutOfTheTasksReach: in a
// deployment where a stdio server has network repository-host-only, a
// shell.run command under workspace-write (network deny) cannot write the
// repository's remotes, which would widen the server's allowlist in the
// next task, nor can fs.write; the work tree stays writable.
func TestRepositoryHostOnlyKeepsTheRemotesOutOfTheTasksReach(t *testing.T) {
	if _, err := os.Stat("/usr/bin/bwrap"); err != nil {
		t.Skip("needs bubblewrap")
	}
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	repo, err := git.PlainInit(ws, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.CreateRemote(&gitconfig.RemoteConfig{Name: "origin", URLs: []string{"https://first.example.com/r.git"}}); err != nil {
		t.Fatal(err)
	}
	cfg, _ := os.ReadFile(filepath.Join(ws, ".git", "config"))
	script := `{"turns":[{"tool_calls":[{"id":"c1","name":"shell_run","arguments":{"command":"echo '[remote \"x\"]' >> .git/config; echo ok > made.txt","cwd":"."}}]},` +
		`{"tool_calls":[{"id":"c2","name":"fs_write","arguments":{"path":".git/config","text":"[remote \"x\"]\n\turl = https://evil.example.com/\n","expected_revision":null}}]},{"text":["done"]}]}`
	d := scriptDeployment(t, dir, ws, script,
		"[options.filesystem]\nwrite = true\n[options.tools]\nmax_recoverable_errors = 5\n"+
			"[options.shell]\nenabled = true\n[options.shell.sandbox]\nfilesystem = \"workspace-write\"\n"+
			"[options.mcp.servers.local]\ntransport = \"stdio\"\ncommand = \"/bin/true\"\nrequired = false\n[options.mcp.servers.local.sandbox]\nnetwork = \"repository-host-only\"\n")
	// The server never starts (it is /bin/true): no forwarder is run.
	rt, err := d.NewRuntime(context.Background(), HostOptions{Store: ledger.NewMemoryStore(), EgressForwarder: "/bin/true"})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	_, events := runTask(t, rt, "go")
	var denied bool
	for _, ev := range events {
		b, _ := json.Marshal(ev)
		if strings.Contains(string(b), "builtin.repository_host_only.git_dir") {
			denied = true
		}
	}
	if !denied {
		t.Errorf("fs.write into .git/config was not denied by builtin.repository_host_only.git_dir")
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "made.txt")); string(b) != "ok\n" {
		t.Errorf("the command's write in the work tree: %q, want ok", b)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, ".git", "config")); string(b) != string(cfg) {
		t.Errorf(".git/config changed: %q", b)
	}
}

// forwardingRuntime is d's runtime over store, with this test binary as
// the egress forwarder, closed when t ends.
func forwardingRuntime(t *testing.T, d *Deployment, store ledger.Store) *Runtime {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	rt, err := d.NewRuntime(context.Background(), HostOptions{Store: store, EgressForwarder: exe})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}
