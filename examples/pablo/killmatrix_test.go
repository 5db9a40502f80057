package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
	} `json:"tasks"`
}

type recoveredRef struct {
	AgentID        string `json:"agent_id"`
	CallID         string `json:"call_id"`
	Kind           string `json:"kind"`
	Name           string `json:"name"`
	IdempotencyKey string `json:"idempotency_key"`
	Delivery       string `json:"delivery"`
}

// recover runs `ledger recover --json` on store, with env added to the
// task's.
func (c *crashTask) recover(t *testing.T, bin, store string, env ...string) crashReport {
	t.Helper()
	cmd := exec.Command(bin, "ledger", "recover", "--store", store, "--json")
	cmd.Env = append(append(os.Environ(), c.env...), env...)
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != 1) {
		t.Fatalf("recover: %v\n%s", err, out)
	}
	var rep crashReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("recover: %v\n%s", err, out)
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
// without its dispatch.
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
			checkKillPoint(t, spec, &rep, c.effects(t))
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
// to a second host while the dead host's lease is live (exit 3), and once
// it expired the second host's `ledger recover` says what the world shows,
// as on bbolt.
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
			checkKillPoint(t, spec, &rep, c.effects(t))
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
