package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/approval"
	"github.com/pabloagent/pablo/event"
)

// TestACPRuntimeIsReusedUntilTheDeploymentChanges: every prompt re-reads
// the deployment; the runtime is the same one while the fingerprint and
// the credential references stay, a new one when either changes, and a
// replaced runtime is closed only once the tasks started on it settled.
func TestACPRuntimeIsReusedUntilTheDeploymentChanges(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	os.WriteFile(filepath.Join(dir, "script.json"), []byte(`{"turns":[{"tool_calls":[{"name":"fs_list","arguments":{"path":"."}}]},{"text":["done"]}]}`), 0o600)
	cfg := filepath.Join(dir, "deployment.toml")
	base := "schema_version = 1\n[options.model]\nprovider = \"script\"\nscript = { base = \"source\", path = \"script.json\" }\n"
	write := func(extra string) {
		if err := os.WriteFile(cfg, []byte(base+extra), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("")
	// --ask fs.list: each task waits in its approval until it is
	// cancelled, touching no process or sandbox.
	p, err := parseArgs([]string{"--stdio", "--config", cfg, "--bind", "workspace=" + ws, "--ask", "fs.list"}, "acp")
	if err != nil {
		t.Fatal(err)
	}
	a := &acpHost{h: &host{stderr: os.Stderr, lookupEnv: func(string) (string, bool) { return "", false }, workDir: dir}, p: p}
	var mu sync.Mutex
	closed := map[*pablo.Runtime]bool{}
	src := &acpRuntimes{load: a.load, build: func(ctx context.Context, d *pablo.Deployment, hooks runtimeHooks) (*pablo.Runtime, func(context.Context) error, error) {
		rt, closeRT, err := a.build(ctx, d, hooks)
		if err != nil {
			return nil, nil, err
		}
		return rt, func(ctx context.Context) error {
			mu.Lock()
			closed[rt] = true
			mu.Unlock()
			return closeRT(ctx)
		}, nil
	}}
	isClosed := func(rt *pablo.Runtime) bool { mu.Lock(); defer mu.Unlock(); return closed[rt] }
	ctx := context.Background()
	// prompt is what the session handler does: take a runtime, start the
	// task on it. The task's fs.list waits for an approval that never
	// comes, until the task is cancelled.
	prompt := func() (*pablo.Runtime, *pablo.Task) {
		t.Helper()
		rt, err := src.Runtime(ctx)
		if err != nil {
			t.Fatal(err)
		}
		task, err := rt.StartTask(ctx, pablo.TaskRequest{Input: "list", Approver: waitForever{}})
		if err != nil {
			t.Fatal(err)
		}
		return rt, task
	}
	settle := func(task *pablo.Task) {
		t.Helper()
		task.Cancel()
		if obj := task.Wait(); obj.Outcome.Status != event.StatusCancelled {
			t.Fatalf("the task ended %s: %s", obj.Outcome.Status, obj.Outcome.Reason)
		}
	}
	next := func() *pablo.Runtime {
		t.Helper()
		rt, task := prompt()
		settle(task)
		return rt
	}

	rt1 := next()
	if rt := next(); rt != rt1 || src.builds != 1 {
		t.Fatalf("an unchanged deployment built a new runtime (%d builds)", src.builds)
	}
	// Rewriting the file with the same meaning keeps the runtime.
	write("\n# a comment changes the bytes, not the meaning\n")
	if rt := next(); rt != rt1 || src.builds != 1 {
		t.Fatalf("a comment rebuilt the runtime (%d builds)", src.builds)
	}

	write("[options.limits]\nmax_tool_calls = 7\n")
	rt2, running := prompt()
	if rt2 == rt1 || src.builds != 2 {
		t.Fatalf("a changed limit kept the runtime (%d builds)", src.builds)
	}
	if !isClosed(rt1) {
		t.Fatal("the replaced runtime had no task and was not closed")
	}

	// A task still running on a replaced runtime keeps it open.
	for ev, err := range running.Events() {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == event.ToolStarted {
			break
		}
	}
	withCredential := "[options.limits]\nmax_tool_calls = 7\n[credentials.records]\nconsumer = \"mcp.env\"\nsources = [{ kind = \"environment\", name = \"RECORDS_TOKEN\" }]\n"
	write(withCredential)
	rt3 := next()
	if rt3 == rt2 || src.builds != 3 {
		t.Fatalf("a new credential reference kept the runtime (%d builds)", src.builds)
	}
	if isClosed(rt2) {
		t.Fatal("a runtime was closed under its running task")
	}
	settle(running)
	if rt := next(); rt != rt3 || !isClosed(rt2) {
		t.Fatalf("after its task settled the replaced runtime is closed=%v (same runtime %v)", isClosed(rt2), rt == rt3)
	}

	// A runtime handed to a prompt is not closed by a rebuild that races
	// the prompt's start: the lease is taken before the task starts.
	leased, err := src.Runtime(ctx)
	if err != nil {
		t.Fatal(err)
	}
	write("[options.limits]\nmax_tool_calls = 8\n")
	rt4 := next()
	if rt4 == leased || isClosed(leased) {
		t.Fatalf("a leased runtime was closed before its task started (rebuilt: %v)", rt4 != leased)
	}
	late, err := leased.StartTask(ctx, pablo.TaskRequest{Input: "list", Approver: waitForever{}})
	if err != nil {
		t.Fatal(err)
	}
	settle(late)
	next()
	if !isClosed(leased) {
		t.Fatal("the leased runtime stayed open after its task settled")
	}

	// A deployment that no longer loads fails the prompt, and the next
	// good one is served again.
	write("[options.limits]\nmax_tool_calls = \"seven\"\n")
	if _, err := src.Runtime(ctx); err == nil {
		t.Fatal("a broken deployment gave a runtime")
	}
	write("[options.limits]\nmax_tool_calls = 8\n")
	if rt := next(); rt != rt4 {
		t.Fatal("the deployment came back unchanged and the runtime was rebuilt")
	}
	if err := src.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if !isClosed(rt4) {
		t.Fatal("Close left the current runtime open")
	}
}

// waitForever is an approver that answers only when the task ends.
type waitForever struct{}

func (waitForever) Approve(ctx context.Context, _ approval.Request) (approval.Answer, error) {
	<-ctx.Done()
	return approval.Reject, ctx.Err()
}

// TestACPRefusesWhatItCannotServe: --stdio is required, no positional
// task, --json is not a flag of acp, and a deployment whose trace file ACP
// does not write is refused before a frame is read.
func TestACPRefusesWhatItCannotServe(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "d.toml")
	os.WriteFile(cfg, []byte("schema_version = 1\n[options.model]\nprovider = \"script\"\nscript = { base = \"source\", path = \"s.json\" }\n[options.trace]\npath = { base = \"workspace\", path = \"t.jsonl\" }\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "s.json"), []byte(`{"turns":[{"text":["x"]}]}`), 0o600)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"acp", "--config", cfg, "--bind", "workspace=" + dir}, "needs --stdio"},
		{[]string{"acp", "--stdio", "hello", "--config", cfg, "--bind", "workspace=" + dir}, "takes no arguments"},
		{[]string{"acp", "--stdio", "--json", "--config", cfg, "--bind", "workspace=" + dir}, "--json"},
		{[]string{"acp", "--stdio", "--config", cfg, "--bind", "workspace=" + dir}, "/options/trace/path"},
	} {
		code, out, errs := cli(t, c.args...)
		if code != 2 || out != "" || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2, nothing on stdout, %q", c.args, code, out, errs, c.want)
		}
	}
}
