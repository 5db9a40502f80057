package main

// The crash tests' host: a pablofault build of pablo (fault_on.go) that a
// test stops at a named ledger barrier and SIGKILLs there, the counter MCP
// server beside it, the task they run, and what the tests read back: the
// ledger's classes, the task object of a resume, the world's effects.

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
// the root's script. The root waits for the child twice: where a kill
// leaves the first wait's outcome unknown, the second waits for the child
// the resume continues (a real model, told the outcome is unknown, would
// look again).
type crashTask struct {
	dir, ws, cfg, counterLog string
	// env is added to each command's environment; args to `pablo run`'s.
	env, args []string
	// killed is when killAt killed the host.
	killed time.Time
}

const crashScript = `{"turns":[
 {"text":["writing"],"tool_calls":[{"name":"fs_write","arguments":{"path":"out.txt","text":"one\n","expected_revision":null}}]},
 {"tool_calls":[{"name":"mcp/counter/bump","arguments":{"label":"a"}}]},
 {"tool_calls":[{"name":"shell_run","arguments":{"command":"echo x >> append.log","cwd":"."}}]},
 {"tool_calls":[{"id":"s0","name":"subagent","arguments":{"action":"spawn","request":{"input":"child","capabilities":{"tools":["fs.write"]}}}}]},
 {"tool_calls":[{"name":"subagent","arguments":{"action":"wait","agent_ids":["{{agent_id:s0}}"],"mode":"all","timeout_ms":60000}}]},
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
		c.killed = time.Now()
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

// leaseExpired is the environment of a second host whose clock is past
// the killed host's lease (30 s by default): a pablofault build reads its
// PostgreSQL leases with the clock moved this far, so no test waits a
// lease out.
const leaseExpired = "PABLO_FAULT_SKEW=2m"

// atKill is the environment of a second host whose clock reads the
// moment killAt killed the host, whose lease (renewed a third of its 30 s
// before at the latest) is live then: however long the test took to get
// here since, on a loaded host longer than the lease's 20 s left, such a
// host must find the task taken.
func (c *crashTask) atKill() string {
	return "PABLO_FAULT_SKEW=" + (-time.Since(c.killed)).String()
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
