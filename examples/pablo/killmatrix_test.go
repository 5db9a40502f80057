package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// crashHost is the pablo binary the crash tests kill: built once per test
// binary with the pablofault tag (fault_on.go), so it can stop dead at a
// named ledger barrier, with the counting MCP server beside it.
var crashHost struct {
	once         sync.Once
	dir          string
	bin, counter string
	err          error
}

// crashBinaries builds the fault-tagged pablo and the counter MCP server
// once and returns their paths.
func crashBinaries(t *testing.T) (bin, counter string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and kills processes")
	}
	crashHost.once.Do(func() {
		crashHost.dir, crashHost.err = os.MkdirTemp("", "pablo-crash-")
		if crashHost.err != nil {
			return
		}
		crashHost.bin = filepath.Join(crashHost.dir, "pablo")
		crashHost.counter = filepath.Join(crashHost.dir, "counter")
		for _, b := range [][]string{{"-tags", "pablofault", "-o", crashHost.bin, "."}, {"-o", crashHost.counter, "../mcpservers/counter"}} {
			if out, err := exec.Command("go", append([]string{"build"}, b...)...).CombinedOutput(); err != nil {
				crashHost.err = fmt.Errorf("go build %v: %v\n%s", b, err, out)
				return
			}
		}
	})
	if crashHost.err != nil {
		t.Fatal(crashHost.err)
	}
	return crashHost.bin, crashHost.counter
}

// crashTask is the task every kill point interrupts: in order, a model
// call, an fs.write, an idempotent MCP call, a shell.run that appends to a
// file, and a spawned child that writes a file of its own, each a turn of
// the root's script.
type crashTask struct {
	dir, ws, cfg, counterLog string
	// env is added to each command's environment; args to `pablo run`'s.
	env, args []string
}

const crashScript = `{"turns":[
 {"text":["writing"],"tool_calls":[{"name":"fs_write","arguments":{"path":"out.txt","text":"one\n","expected_revision":null}}]},
 {"tool_calls":[{"name":"mcp/counter/bump","arguments":{"label":"a"}}]},
 {"tool_calls":[{"name":"shell_run","arguments":{"command":"echo x >> append.log","cwd":"."}}]},
 {"tool_calls":[{"id":"s0","name":"subagent","arguments":{"action":"spawn","request":{"input":"child","capabilities":{"tools":["fs.write"]}}}}]},
 {"tool_calls":[{"name":"subagent","arguments":{"action":"wait","agent_ids":["{{agent_id:s0}}"],"mode":"all","timeout_ms":60000}}]},
 {"text":["done"]}],
 "agents":[{"input":"child","turns":[
  {"tool_calls":[{"name":"fs_write","arguments":{"path":"child.txt","text":"two\n","expected_revision":null}}]},
  {"text":["child done"]}]}]}`

// newCrashTask lays out a workspace, the script and a deployment whose
// store is store (a bbolt path, or "" for one in the task's directory).
func newCrashTask(t *testing.T, counter string, extraConfig ...string) *crashTask {
	t.Helper()
	dir := t.TempDir()
	c := &crashTask{dir: dir, ws: filepath.Join(dir, "work"), cfg: filepath.Join(dir, "deployment.toml"), counterLog: filepath.Join(dir, "counter.log")}
	if err := os.Mkdir(c.ws, 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "script.json"), []byte(crashScript), 0o600)
	cfg := `schema_version = 1
[options.model]
provider = "script"
script = { base = "source", path = "script.json" }
[options.filesystem]
write = true
[options.children]
enabled = true
[options.mcp.servers.counter]
transport = "stdio"
command = "` + counter + `"
args = ["-log", "` + c.counterLog + `"]
required = true
[options.mcp.servers.counter.sandbox]
mode = "off"
` + strings.Join(extraConfig, "")
	if err := os.WriteFile(c.cfg, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return c
}

// killAt runs `pablo run` on store with the fault spec, waits on the
// signal FIFO until the host stands at that barrier, and SIGKILLs its
// process group there. Nothing is timed: the host tells the test where it
// is, and a host that ends before it gets there fails the test.
func (c *crashTask) killAt(t *testing.T, bin, store, spec string) {
	t.Helper()
	fifo := filepath.Join(c.dir, "barrier")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// O_RDWR: the open never blocks, and the read below waits for the
	// host's line.
	r, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd := exec.Command(bin, append([]string{"run", "go", "--config", c.cfg, "--bind", "workspace=" + c.ws, "--store", store, "--json"}, c.args...)...)
	cmd.Env = append(append(os.Environ(), c.env...), "PABLO_FAULT="+spec, "PABLO_FAULT_SIGNAL="+fifo)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(r).ReadString('\n')
		line <- s
	}()
	select {
	case got := <-line:
		if strings.TrimSpace(got) != spec {
			t.Fatalf("the host stopped at %q, want %q", got, spec)
		}
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	case err := <-exited:
		r.Close()
		t.Fatalf("the host ended (%v) before barrier %s\nstdout: %s\nstderr: %s", err, spec, stdout.String(), stderr.String())
	case <-time.After(2 * time.Minute):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		t.Fatalf("the host never reached barrier %s\nstderr: %s", spec, stderr.String())
	}
}

// crashReport is what `ledger recover --json` says of the killed task.
type crashReport struct {
	Tasks []struct {
		TaskID      string         `json:"task_id"`
		RootAgentID string         `json:"root_agent_id"`
		Outcome     any            `json:"outcome"`
		Completed   []recoveredRef `json:"completed"`
		Unknown     []recoveredRef `json:"unknown"`
		Retryable   []recoveredRef `json:"retryable"`
		Agents      []struct {
			AgentID  string `json:"agent_id"`
			ParentID string `json:"parent_id"`
			Outcome  *struct {
				Status string `json:"status"`
				Reason string `json:"reason"`
			} `json:"outcome"`
		} `json:"agents"`
	} `json:"tasks"`
}

type recoveredRef struct {
	AgentID        string `json:"agent_id"`
	CallID         string `json:"call_id"`
	Kind           string `json:"kind"`
	Name           string `json:"name"`
	IdempotencyKey string `json:"idempotency_key"`
	Delivery       string `json:"delivery"`
	Status         string `json:"status"`
	Result         string `json:"result"`
	Error          string `json:"error"`
}

// recover runs `ledger recover --json` on store, with env added to the
// task's.
func (c *crashTask) recover(t *testing.T, bin, store string, env ...string) crashReport {
	t.Helper()
	cmd := exec.Command(bin, "ledger", "recover", "--store", store, "--json")
	cmd.Env = append(append(os.Environ(), c.env...), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if code := exitCode(err); code != 0 && code != 1 {
		t.Fatalf("recover: %v\n%s\n%s", err, out, stderr.String())
	}
	var rep crashReport
	if jerr := json.Unmarshal(out, &rep); jerr != nil {
		t.Fatalf("recover: %v %v\n%s\n%s", err, jerr, out, stderr.String())
	}
	return rep
}

// killPoints are the barriers of crashTask, each a PABLO_FAULT spec: the
// first model call before and after its dispatch is durable, and each
// tool call (the root's fs.write, MCP call, shell append and spawn, and
// the child's own fs.write) before its dispatch, after it, before its
// settlement (the effect happened, nothing says so) and after it.
func killPoints() []string {
	points := []string{"before-dispatch:model:*:1", "after-dispatch:model:*:1"}
	for _, call := range []string{"fs.write:1", "mcp/counter/bump:1", "shell.run:1", "subagent:1", "fs.write:2"} {
		for _, when := range []string{"before-dispatch", "after-dispatch", "before-settle", "after-settle"} {
			points = append(points, when+":tool:"+call)
		}
	}
	return points
}

// effects are what crashTask's side effects left behind: the bytes of the
// root's and the child's file, the lines the shell appended, and the MCP
// server's calls and executions by idempotency key.
type effects struct {
	out, child  string
	appended    int
	calls, runs map[string]int
}

func (c *crashTask) effects(t *testing.T) effects {
	t.Helper()
	var e effects
	if b, err := os.ReadFile(filepath.Join(c.ws, "out.txt")); err == nil {
		e.out = string(b)
	}
	if b, err := os.ReadFile(filepath.Join(c.ws, "child.txt")); err == nil {
		e.child = string(b)
	}
	if b, err := os.ReadFile(filepath.Join(c.ws, "append.log")); err == nil {
		e.appended = strings.Count(string(b), "x\n")
	}
	e.calls, e.runs = map[string]int{}, map[string]int{}
	b, _ := os.ReadFile(c.counterLog)
	for line := range strings.Lines(string(b)) {
		verb, key, _ := strings.Cut(strings.TrimSpace(line), " ")
		switch verb {
		case "call":
			e.calls[key]++
		case "exec":
			e.runs[key]++
		}
	}
	return e
}

// class is what the ledger says of a call: "completed", "unknown",
// "retryable", or "" when it holds no trace of it.
func (r *crashReport) class(match func(recoveredRef) bool) (string, recoveredRef) {
	task := r.Tasks[0]
	for _, c := range []struct {
		name  string
		calls []recoveredRef
	}{{"completed", task.Completed}, {"unknown", task.Unknown}, {"retryable", task.Retryable}} {
		for _, call := range c.calls {
			if match(call) {
				return c.name, call
			}
		}
	}
	return "", recoveredRef{}
}

// TestKillAtEveryBarrierLeavesALedgerThatTellsWhatHappened kills a real
// `pablo run` (SIGKILL of its process group) at each barrier of killPoints
// on a bbolt ledger, and checks what `ledger recover --json` says against
// what the world shows: a call killed before its dispatch was durable left
// no trace and no effect; one killed after it is an unknown outcome whose
// effect did not happen (after-dispatch) or did, exactly once
// (before-settle); one killed after its settlement is completed with its
// effect exactly once. Every effect the world shows belongs to a call the
// ledger lists as completed or unknown, the MCP server saw every key at
// most once, and nothing is retryable: no call here was admitted durably
// without its dispatch. Then `pablo resume` continues the task to its end
// (checkResumed), and resuming it once more is refused as task_settled.
func TestKillAtEveryBarrierLeavesALedgerThatTellsWhatHappened(t *testing.T) {
	bin, counter := crashBinaries(t)
	for _, spec := range killPoints() {
		t.Run(spec, func(t *testing.T) {
			t.Parallel()
			c := newCrashTask(t, counter)
			store := filepath.Join(c.dir, "ledger.db")
			c.killAt(t, bin, store, spec)
			rep := c.recover(t, bin, store)
			if len(rep.Tasks) != 1 || rep.Tasks[0].Outcome != nil {
				t.Fatalf("want one task without an outcome: %+v", rep)
			}
			was := c.effects(t)
			checkKillPoint(t, spec, &rep, was)
			_, obj := c.resume(t, bin, store, rep.Tasks[0].TaskID)
			after := c.recover(t, bin, store)
			checkResumed(t, spec, &rep, was, obj, &after, c.effects(t))
			if code, again := c.resume(t, bin, store, rep.Tasks[0].TaskID); code != 2 || !strings.Contains(again.raw, "task_settled") {
				t.Errorf("resuming the settled task again: exit %d %s, want 2 and task_settled", code, again.raw)
			}
		})
	}
}

// checkKillPoint checks the recovery report of a task killed at spec
// against the effects the world shows.
func checkKillPoint(t *testing.T, spec string, rep *crashReport, e effects) {
	t.Helper()
	task := rep.Tasks[0]
	root := func(c recoveredRef) bool { return c.AgentID == task.RootAgentID }
	named := func(name string, ofRoot bool) func(recoveredRef) bool {
		return func(c recoveredRef) bool { return c.Name == name && root(c) == ofRoot }
	}
	if len(task.Retryable) != 0 {
		t.Errorf("retryable calls where every admission was durable with its dispatch: %+v", task.Retryable)
	}
	// Each effect against its call's class.
	type sideEffect struct {
		call    func(recoveredRef) bool
		label   string
		applied int // how many times the world shows it
	}
	count := func(s string) int {
		if s == "" {
			return 0
		}
		return 1
	}
	_, mcpCall := rep.class(named("mcp/counter/bump", true))
	sides := []sideEffect{
		{named("fs.write", true), "fs.write:1", count(e.out)},
		{named("mcp/counter/bump", true), "mcp/counter/bump:1", len(e.runs)},
		{named("shell.run", true), "shell.run:1", e.appended},
		{named("fs.write", false), "fs.write:2", count(e.child)},
	}
	for _, s := range sides {
		class, _ := rep.class(s.call)
		switch {
		case class == "completed" && s.applied != 1:
			t.Errorf("%s is completed but the world shows it %d times", s.label, s.applied)
		case class == "" && s.applied != 0:
			t.Errorf("%s left no trace in the ledger but the world shows it %d times", s.label, s.applied)
		case s.applied > 1:
			t.Errorf("%s happened %d times", s.label, s.applied)
		}
	}
	for key, n := range e.calls {
		if n != 1 {
			t.Errorf("the MCP server saw key %s %d times", key, n)
		}
		if key != mcpCall.IdempotencyKey {
			t.Errorf("the MCP server saw key %s, the ledger's call has %q", key, mcpCall.IdempotencyKey)
		}
	}
	// The call killed at its barrier, by the barrier's phase.
	parts := strings.Split(spec, ":")
	when, kind, name := parts[0], parts[1], parts[2]
	var target func(recoveredRef) bool
	applied := -1 // unknown for the model and the spawn
	switch {
	case kind == "model":
		target = func(c recoveredRef) bool { return c.Kind == "model" && root(c) }
	case parts[3] == "2":
		target, applied = named(name, false), count(e.child)
	default:
		target = named(name, true)
		for _, s := range sides {
			if s.label == name+":"+parts[3] {
				applied = s.applied
			}
		}
	}
	class, _ := rep.class(target)
	want, wantApplied := map[string]string{"before-dispatch": "", "after-dispatch": "unknown", "before-settle": "unknown", "after-settle": "completed"}[when], map[string]int{"before-dispatch": 0, "after-dispatch": 0, "before-settle": 1, "after-settle": 1}[when]
	if class != want {
		t.Errorf("the ledger calls the %s call %q, want %q: %+v", when, class, want, task)
	}
	if applied >= 0 && applied != wantApplied {
		t.Errorf("killed %s, the world shows the effect %d times, want %d", when, applied, wantApplied)
	}
}

// TestKillWhileAnApprovalWaitsLeavesTheCallRetryable: a call that needs an
// approval is admitted durably before the approver is asked (the runtime
// flushes before a wait that outlives its say), so a host killed while the
// question is open leaves the call retryable: admitted, never dispatched,
// its effect absent.
func TestKillWhileAnApprovalWaitsLeavesTheCallRetryable(t *testing.T) {
	bin, counter := crashBinaries(t)
	c := newCrashTask(t, counter, "[options.approvals]\nfilesystem_write = \"required\"\n")
	c.args = []string{"--approve", "fs.write"}
	store := filepath.Join(c.dir, "ledger.db")
	c.killAt(t, bin, store, "after-admit:tool:fs.write:1")
	rep := c.recover(t, bin, store)
	if len(rep.Tasks) != 1 {
		t.Fatalf("want one task: %+v", rep)
	}
	task := rep.Tasks[0]
	if len(task.Retryable) != 1 || task.Retryable[0].Name != "fs.write" || task.Retryable[0].IdempotencyKey == "" {
		t.Fatalf("want the fs.write waiting for its approval retryable, with its key: %+v", task)
	}
	if e := c.effects(t); e.out != "" {
		t.Fatalf("a call that was never dispatched wrote %q", e.out)
	}
}

// leaseExpired is the environment of a second host whose clock is past
// the killed host's lease (30 s by default): a pablofault build reads its
// PostgreSQL leases with the clock moved this far, so no test waits a
// lease out.
const leaseExpired = "PABLO_FAULT_SKEW=2m"

// TestKillAtEveryBarrierLeavesAPostgresLedgerThatTellsWhatHappened is the
// kill matrix on a PostgreSQL ledger: each killed host's task is refused
// to a second host while the dead host's lease is live (`ledger recover`
// and `pablo resume` exit 3), and once it expired the second host's
// `ledger recover` says what the world shows, as on bbolt, and its
// `pablo resume` takes the task over and continues it (checkResumed).
func TestKillAtEveryBarrierLeavesAPostgresLedgerThatTellsWhatHappened(t *testing.T) {
	bin, counter := crashBinaries(t)
	for _, spec := range killPoints() {
		t.Run(spec, func(t *testing.T) {
			t.Parallel()
			u, cluster := pgDB(t)
			c := newCrashTask(t, counter)
			c.env = []string{"PGPASSWORD=" + cluster.Password}
			c.killAt(t, bin, u, spec)
			rep := c.recover(t, bin, u, leaseExpired)
			if len(rep.Tasks) != 1 || rep.Tasks[0].Outcome != nil {
				t.Fatalf("want one task without an outcome: %+v", rep)
			}
			live := exec.Command(bin, "ledger", "recover", "--store", u, rep.Tasks[0].TaskID)
			live.Env = append(os.Environ(), c.env...)
			if out, err := live.CombinedOutput(); exitCode(err) != 3 {
				t.Errorf("recover while the dead host's lease is live: %v %s, want exit 3", err, out)
			}
			was := c.effects(t)
			checkKillPoint(t, spec, &rep, was)
			if code, obj := c.resume(t, bin, u, rep.Tasks[0].TaskID); code != 3 {
				t.Errorf("resume while the dead host's lease is live: exit %d %s, want 3", code, obj.raw)
			}
			_, obj := c.resume(t, bin, u, rep.Tasks[0].TaskID, leaseExpired)
			after := c.recover(t, bin, u, leaseExpired)
			checkResumed(t, spec, &rep, was, obj, &after, c.effects(t))
		})
	}
}

// exitCode is a finished command's exit code (0 for a nil error, -1 when
// it did not run).
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}

// resume runs `pablo resume TASK_ID --json` on store, with env added to
// the task's, and returns its exit code and task object.
func (c *crashTask) resume(t *testing.T, bin, store, taskID string, env ...string) (int, resumedTask) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"resume", taskID, "--config", c.cfg, "--bind", "workspace=" + c.ws, "--store", store, "--json"}, c.args...)...)
	cmd.Env = append(append(os.Environ(), c.env...), env...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var obj resumedTask
	if jerr := json.Unmarshal([]byte(stdout.String()), &obj); jerr != nil {
		t.Fatalf("resume: %v, its task object: %v\nstdout: %s\nstderr: %s", err, jerr, stdout.String(), stderr.String())
	}
	obj.raw = stdout.String()
	return exitCode(err), obj
}

// resumedTask is the task object `pablo resume --json` prints.
type resumedTask struct {
	RunID   string `json:"run_id"`
	Outcome struct {
		Status string `json:"status"`
		Reason string `json:"reason"`
	} `json:"outcome"`
	Accounting struct {
		ModelCalls string `json:"model_calls"`
	} `json:"accounting"`
	Resume struct {
		Fingerprint      string   `json:"fingerprint"`
		ResumedUnder     string   `json:"resumed_under"`
		ResentModelCalls int      `json:"resent_model_calls"`
		Attempt          int      `json:"attempt"`
		Completed        []string `json:"completed"`
		Retried          []string `json:"retried"`
		Unknown          []string `json:"unknown"`
	} `json:"resume"`
	raw string
}

// sideEffects pairs each of crashTask's effects with the call that makes
// it and how many times the world shows it.
func sideEffects(rep *crashReport, e effects) []sideEffect {
	task := rep.Tasks[0]
	named := func(name string, ofRoot bool) func(recoveredRef) bool {
		return func(c recoveredRef) bool { return c.Name == name && (c.AgentID == task.RootAgentID) == ofRoot }
	}
	count := func(s string) int {
		if s == "" {
			return 0
		}
		return 1
	}
	return []sideEffect{
		{named("fs.write", true), "fs.write:1", count(e.out)},
		{named("mcp/counter/bump", true), "mcp/counter/bump:1", len(e.runs)},
		{named("shell.run", true), "shell.run:1", e.appended},
		{named("fs.write", false), "fs.write:2", count(e.child)},
	}
}

// sideEffect is one effect of crashTask: its call and how often it shows.
type sideEffect struct {
	call    func(recoveredRef) bool
	label   string
	applied int
}

// checkResumed checks a task resumed after a kill at spec (before and was:
// what recover said and the world showed at the kill; obj: the resume's
// task object; after and now: the same once the resume ended). The task
// completes; a call whose outcome was unknown is never run again (the
// fs.write not installed twice, the MCP key not sent again, the shell
// append not repeated), any other call's effect happens exactly once; the
// resume's completed, unknown and retried lists are the ledger's classes at
// the kill; and the final ledger tells each attempt's part: the first
// attempt's completed calls kept with their results, its unknown calls
// settled by the resume as unknown under their original keys.
func checkResumed(t *testing.T, spec string, before *crashReport, was effects, obj resumedTask, after *crashReport, now effects) {
	t.Helper()
	// The scripted model cannot name a child whose spawn result it never
	// got: where the spawn's outcome is unknown, its wait turn fails the
	// task. A real model decides what to do; the script ends there.
	// The spawn is the root's call of its fifth turn.
	spawnUnknown := false
	for _, c := range before.Tasks[0].Unknown {
		spawnUnknown = spawnUnknown || c.AgentID == before.Tasks[0].RootAgentID && c.CallID == "call_4_1"
	}
	switch {
	case spawnUnknown:
		if obj.Outcome.Status != "failed" || !strings.Contains(obj.Outcome.Reason, "no spawn result") {
			t.Errorf("resumed past an unknown spawn: %s, want the script to fail at its wait", obj.raw)
		}
	case obj.Outcome.Status != "completed":
		t.Errorf("the resumed task did not complete: %s", obj.raw)
	}
	if obj.Resume.Attempt != 2 {
		t.Errorf("resume attempt %d, want 2", obj.Resume.Attempt)
	}
	// Each effect: a call whose outcome was unknown is never run again,
	// any other runs once; the child's own write, whose agent the resume
	// may or may not continue, never runs twice nor is undone.
	for i, s := range sideEffects(before, was) {
		class, _ := before.class(s.call)
		got := sideEffects(after, now)[i].applied
		switch {
		case s.label == "fs.write:2" || spawnUnknown:
			if got > 1 || got < s.applied {
				t.Errorf("%s: shown %d times at the kill, %d after the resume", s.label, s.applied, got)
			}
		case class == "unknown":
			if got != s.applied {
				t.Errorf("%s, unknown at the kill (shown %d times), is shown %d times after the resume: an unknown outcome was run again", s.label, s.applied, got)
			}
		case got != 1:
			t.Errorf("%s (%q at the kill) is shown %d times after the resume, want once", s.label, class, got)
		}
	}
	for key, n := range now.calls {
		if n != 1 {
			t.Errorf("the MCP server saw key %s %d times", key, n)
		}
	}
	if now.out != "" && now.out != "one\n" {
		t.Errorf("out.txt holds %q", now.out)
	}
	// The resume's lists are the ledger's classes at the kill, call by call.
	root := before.Tasks[0].RootAgentID
	ids := func(calls []recoveredRef) []string {
		var out []string
		for _, c := range calls {
			if c.Kind == "tool" && c.AgentID == root {
				out = append(out, c.CallID)
			}
		}
		slices.Sort(out)
		return out
	}
	sorted := func(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }
	k := before.Tasks[0]
	if !slices.Equal(sorted(obj.Resume.Completed), ids(k.Completed)) || !slices.Equal(sorted(obj.Resume.Unknown), ids(k.Unknown)) || !slices.Equal(sorted(obj.Resume.Retried), ids(k.Retryable)) {
		t.Errorf("the resume's classes %+v are not the ledger's at the kill: completed %v unknown %v retryable %v", obj.Resume, ids(k.Completed), ids(k.Unknown), ids(k.Retryable))
	}
	// The final ledger keeps what each attempt did: the first attempt's
	// completed calls with their results, its unknown calls settled by the
	// resume as unknown, never dispatched again.
	final := map[string]recoveredRef{}
	finalClass := map[string]string{}
	a := after.Tasks[0]
	for class, calls := range map[string][]recoveredRef{"completed": a.Completed, "unknown": a.Unknown, "retryable": a.Retryable} {
		for _, c := range calls {
			final[c.AgentID+"/"+c.CallID] = c
			finalClass[c.AgentID+"/"+c.CallID] = class
		}
	}
	for _, c := range k.Completed {
		f, key := final[c.AgentID+"/"+c.CallID], c.AgentID+"/"+c.CallID
		if finalClass[key] != "completed" || f.Result != c.Result || f.Status != c.Status {
			t.Errorf("call %s %s, completed at the kill, is %s %+v in the final ledger", c.CallID, c.Name, finalClass[key], f)
		}
	}
	for _, c := range k.Unknown {
		if c.Kind != "tool" {
			continue
		}
		f, key := final[c.AgentID+"/"+c.CallID], c.AgentID+"/"+c.CallID
		if finalClass[key] != "unknown" || f.Status == "" || f.Delivery != "may_have_been_sent" || f.IdempotencyKey != c.IdempotencyKey {
			t.Errorf("call %s %s, unknown at the kill, is %s %+v in the final ledger; want it settled unknown under its key", c.CallID, c.Name, finalClass[key], f)
		}
	}
	if len(a.Retryable) != 0 || a.Outcome == nil {
		t.Errorf("the final ledger leaves work open: %+v", a)
	}
}

// approvalsOf is what `ledger show --json` says of the task's approvals.
func (c *crashTask) approvalsOf(t *testing.T, bin, store, taskID string) []approvalEntry {
	t.Helper()
	cmd := exec.Command(bin, "ledger", "show", "--json", "--store", store, taskID)
	cmd.Env = append(os.Environ(), c.env...)
	out, err := cmd.Output()
	if code := exitCode(err); code != 0 && code != 1 {
		t.Fatalf("ledger show: %v %s", err, out)
	}
	var v struct {
		Approvals []approvalEntry `json:"approvals"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("ledger show: %v %s", err, out)
	}
	return v.Approvals
}

// approvalEntry is one approval as `ledger show --json` gives it.
type approvalEntry struct {
	RequestID       string `json:"request_id"`
	AgentID         string `json:"agent_id"`
	CallID          string `json:"call_id"`
	Capability      string `json:"capability"`
	ArgumentsDigest string `json:"arguments_digest"`
	Answer          string `json:"answer"`
	Channel         string `json:"channel"`
	CallStatus      string `json:"call_status"`
	IdempotencyKey  string `json:"idempotency_key"`
}

// rootWrite is the approval of the root's fs.write among as.
func rootWrite(as []approvalEntry, root string) (approvalEntry, int) {
	var found approvalEntry
	n := 0
	for _, a := range as {
		if a.AgentID == root && a.Capability == "fs.write" {
			found = a
			n++
		}
	}
	return found, n
}

// TestResumeAsksAgainTheApprovalTheDeadHostWaitedOn: the host is killed
// while the root's fs.write waits for its approval (admitted, never
// dispatched: retryable). On resume the call is decided again under the
// deployment and approver the resuming host has, and the question is
// asked again, bound to the same call (its request, call ID, arguments
// digest and idempotency key), never answered from the dead host's state:
// with an approver that allows it, the write happens once under the
// original key; with no approver it is denied (no_channel) and nothing is
// written; with fs.write revoked from the deployment meanwhile, it is
// denied by the configuration and nothing is written.
func TestResumeAsksAgainTheApprovalTheDeadHostWaitedOn(t *testing.T) {
	bin, counter := crashBinaries(t)
	for _, tc := range []struct {
		name     string
		args     []string
		revoke   bool
		answer   string // the approval's final answer
		status   string // the call's
		written  bool
		resolved bool // the task completes
	}{
		{name: "Allowed", args: []string{"--approve", "fs.write"}, answer: "allow_once", status: "completed", written: true, resolved: true},
		{name: "NoApprover", answer: "no_channel", status: "policy_denied"},
		{name: "Revoked", args: []string{"--approve", "fs.write"}, revoke: true, status: "policy_denied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newCrashTask(t, counter, "[options.approvals]\nfilesystem_write = \"required\"\n")
			c.args = []string{"--approve", "fs.write"}
			store := filepath.Join(c.dir, "ledger.db")
			c.killAt(t, bin, store, "after-admit:tool:fs.write:1")
			rep := c.recover(t, bin, store)
			task := rep.Tasks[0]
			if len(task.Retryable) != 1 || task.Retryable[0].Name != "fs.write" {
				t.Fatalf("want the waiting fs.write retryable: %+v", task)
			}
			asked, n := rootWrite(c.approvalsOf(t, bin, store, task.TaskID), task.RootAgentID)
			if n != 1 || asked.Answer != "" || asked.CallID != task.Retryable[0].CallID {
				t.Fatalf("want one open approval of the waiting call: %+v (%d)", asked, n)
			}
			c.args = tc.args
			if tc.revoke {
				b, _ := os.ReadFile(c.cfg)
				os.WriteFile(c.cfg, []byte(strings.Replace(string(b), "[options.filesystem]\nwrite = true", "[options.filesystem]\nwrite = false", 1)), 0o600)
			}
			_, obj := c.resume(t, bin, store, task.TaskID)
			if !slices.Equal(obj.Resume.Retried, []string{task.Retryable[0].CallID}) {
				t.Errorf("the resume retried %v, want the waiting call", obj.Resume.Retried)
			}
			if (obj.Outcome.Status == "completed") != tc.resolved {
				t.Errorf("resumed task: %s", obj.raw)
			}
			final, n := rootWrite(c.approvalsOf(t, bin, store, task.TaskID), task.RootAgentID)
			if n != 1 || final.RequestID != asked.RequestID || final.CallID != asked.CallID || final.ArgumentsDigest != asked.ArgumentsDigest || final.IdempotencyKey != task.Retryable[0].IdempotencyKey {
				t.Errorf("the approval after the resume is not the same call's: %+v (%d), asked before %+v", final, n, asked)
			}
			if final.Answer != tc.answer || final.CallStatus != tc.status {
				t.Errorf("the approval ended %q with the call %q, want %q and %q", final.Answer, final.CallStatus, tc.answer, tc.status)
			}
			if e := c.effects(t); (e.out == "one\n") != tc.written || (e.out != "" && e.out != "one\n") {
				t.Errorf("out.txt holds %q after the resume; written: %v", e.out, tc.written)
			}
		})
	}
}

// TestResumeHonoursOnceAnAnswerGivenBeforeTheCrash: the root's fs.write
// was approved and its write happened, and the host was killed before the
// call settled. The answer is in the ledger with the dispatch; a resume
// under a host with no approver at all neither asks again nor runs the
// write again: the call is an unknown outcome, its approval answered once.
func TestResumeHonoursOnceAnAnswerGivenBeforeTheCrash(t *testing.T) {
	bin, counter := crashBinaries(t)
	c := newCrashTask(t, counter, "[options.approvals]\nfilesystem_write = \"required\"\n")
	c.args = []string{"--approve", "fs.write"}
	store := filepath.Join(c.dir, "ledger.db")
	c.killAt(t, bin, store, "before-settle:tool:fs.write:1")
	rep := c.recover(t, bin, store)
	task := rep.Tasks[0]
	before, _ := rootWrite(c.approvalsOf(t, bin, store, task.TaskID), task.RootAgentID)
	if before.Answer != "allow_once" || len(task.Unknown) != 1 {
		t.Fatalf("want the approved fs.write unknown, its answer kept: %+v %+v", before, task)
	}
	c.args = nil
	_, obj := c.resume(t, bin, store, task.TaskID)
	if !slices.Equal(obj.Resume.Unknown, []string{before.CallID}) || len(obj.Resume.Retried) != 0 {
		t.Errorf("the resume's classes: %+v, want the approved call unknown", obj.Resume)
	}
	after, n := rootWrite(c.approvalsOf(t, bin, store, task.TaskID), task.RootAgentID)
	if n != 1 || after.RequestID != before.RequestID || after.Answer != "allow_once" {
		t.Errorf("the approval after the resume: %+v (%d of them), want the one answer given before the crash", after, n)
	}
	if e := c.effects(t); e.out != "one\n" {
		t.Errorf("out.txt holds %q, want the one write made before the crash", e.out)
	}
}

// TestResumeKeepsASettledChildSettled: the host is killed after the child
// finished (its terminal record is a barrier) while the root's wait for it
// was being settled. The resume runs no agent again: the child keeps its
// outcome and its completed write, no other child is started, and its
// file is written once; the root's wait, an unknown outcome, is reported
// to the model, which finishes.
func TestResumeKeepsASettledChildSettled(t *testing.T) {
	bin, counter := crashBinaries(t)
	c := newCrashTask(t, counter)
	store := filepath.Join(c.dir, "ledger.db")
	c.killAt(t, bin, store, "before-settle:tool:subagent:2")
	rep := c.recover(t, bin, store)
	task := rep.Tasks[0]
	var child string
	for _, a := range task.Agents {
		if a.ParentID != "" {
			if child != "" || a.Outcome == nil || a.Outcome.Status != "completed" {
				t.Fatalf("want one settled child at the kill: %+v", task.Agents)
			}
			child = a.AgentID
		}
	}
	_, childWrite := rep.class(func(c recoveredRef) bool { return c.AgentID == child && c.Name == "fs.write" })
	_, obj := c.resume(t, bin, store, task.TaskID)
	if obj.Outcome.Status != "completed" {
		t.Fatalf("resumed: %s", obj.raw)
	}
	after := c.recover(t, bin, store)
	var children int
	for _, a := range after.Tasks[0].Agents {
		if a.ParentID == "" {
			continue
		}
		children++
		if a.AgentID != child || a.Outcome == nil || a.Outcome.Status != "completed" {
			t.Errorf("after the resume the child is %+v, want %s completed as it was", a, child)
		}
	}
	if children != 1 {
		t.Errorf("%d children after the resume, want the one that settled before the crash", children)
	}
	class, w := after.class(func(c recoveredRef) bool { return c.AgentID == child && c.Name == "fs.write" })
	if class != "completed" || w.Result != childWrite.Result || w.CallID != childWrite.CallID {
		t.Errorf("the child's write is %s %+v after the resume, was %+v", class, w, childWrite)
	}
	if e := c.effects(t); e.child != "two\n" {
		t.Errorf("child.txt holds %q", e.child)
	}
}

// TestResumeDeniesAToolRevokedSinceTheCrash: the host is killed after the
// model proposed the MCP call and before the call's dispatch was durable,
// and the MCP server is removed from the deployment before the resume.
// The model call that was in flight is sent again and charged again (nine
// model calls where an uninterrupted run makes eight), the resume records
// that it runs under another fingerprint, and the MCP call the model
// proposes again is decided under the new deployment: denied, the server
// never sees a key, and the task goes on to complete.
func TestResumeDeniesAToolRevokedSinceTheCrash(t *testing.T) {
	bin, counter := crashBinaries(t)
	c := newCrashTask(t, counter)
	store := filepath.Join(c.dir, "ledger.db")
	c.killAt(t, bin, store, "before-dispatch:tool:mcp/counter/bump:1")
	rep := c.recover(t, bin, store)
	b, err := os.ReadFile(c.cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg, _, _ := strings.Cut(string(b), "[options.mcp.servers.counter]")
	if err := os.WriteFile(c.cfg, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	_, obj := c.resume(t, bin, store, rep.Tasks[0].TaskID)
	if obj.Outcome.Status != "completed" {
		t.Fatalf("resumed: %s", obj.raw)
	}
	if obj.Resume.ResentModelCalls != 1 || obj.Accounting.ModelCalls != "9" {
		t.Errorf("the model call in flight: resent %d, %s model calls charged; want it resent once and charged again (9)", obj.Resume.ResentModelCalls, obj.Accounting.ModelCalls)
	}
	if obj.Resume.Fingerprint == "" || obj.Resume.ResumedUnder == "" || obj.Resume.Fingerprint == obj.Resume.ResumedUnder {
		t.Errorf("the resume does not record the changed deployment: %s", obj.raw)
	}
	after := c.recover(t, bin, store)
	class, call := after.class(func(r recoveredRef) bool {
		return r.AgentID == after.Tasks[0].RootAgentID && r.Name == "mcp/counter/bump"
	})
	if class != "completed" || call.Status != "policy_denied" {
		t.Errorf("the revoked MCP call is %s %+v, want it denied", class, call)
	}
	e := c.effects(t)
	if len(e.calls) != 0 {
		t.Errorf("the MCP server removed from the deployment was called: %v", e.calls)
	}
	if e.out != "one\n" || e.appended != 1 || e.child != "two\n" {
		t.Errorf("the other effects: %+v, want each once", e)
	}
}
