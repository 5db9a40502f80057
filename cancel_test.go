package pablo

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/event"
)

func TestCancelSettlesAsCancelled(t *testing.T) {
	m := blockingModel{release: make(chan struct{})}
	set, _ := authority.New(authority.Config{})
	rt, _ := NewRuntime(RuntimeOptions{Model: m, Authority: set})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	task, err := rt.Start(ctx, "go")
	if err != nil {
		t.Fatal(err)
	}
	for ev := range task.Events() {
		if ev.Type == event.ModelStarted {
			cancel()
		}
	}
	obj := task.Wait()
	if obj.Outcome.Status != event.StatusCancelled {
		b, _ := json.Marshal(obj)
		t.Fatalf("outcome: %s", b)
	}
}

func TestDeadlineSettlesAsTimedOut(t *testing.T) {
	m := blockingModel{release: make(chan struct{})}
	set, _ := authority.New(authority.Config{})
	rt, _ := NewRuntime(RuntimeOptions{Model: m, Authority: set, Limits: ledgerLimitsWithDuration(50)})
	obj, err := rt.Run(context.Background(), "go")
	if err != nil {
		t.Fatal(err)
	}
	if obj.Outcome.Status != event.StatusTimedOut {
		b, _ := json.Marshal(obj)
		t.Fatalf("outcome: %s", b)
	}
}

// expiringCtx is a caller context whose deadline passes when the test
// says so: Done closes and Err is context.DeadlineExceeded, as a real
// deadline's would, without waiting for the clock.
type expiringCtx struct {
	context.Context
	done chan struct{}
}

func (c *expiringCtx) Done() <-chan struct{} { return c.done }
func (c *expiringCtx) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// TestCallerDeadlineSettlesAsTimedOut: the deadline of the context a host
// starts the task with reaches the task as a cancel of its own context,
// and is still a deadline: the task ends timed_out, not cancelled.
func TestCallerDeadlineSettlesAsTimedOut(t *testing.T) {
	m := blockingModel{release: make(chan struct{})}
	set, _ := authority.New(authority.Config{})
	rt, _ := NewRuntime(RuntimeOptions{Model: m, Authority: set})
	ctx := &expiringCtx{Context: context.Background(), done: make(chan struct{})}
	task, err := rt.Start(ctx, "go")
	if err != nil {
		t.Fatal(err)
	}
	for ev := range task.Events() {
		if ev.Type == event.ModelStarted {
			close(ctx.done)
		}
	}
	if obj := task.Wait(); obj.Outcome.Status != event.StatusTimedOut {
		b, _ := json.Marshal(obj)
		t.Fatalf("outcome: %s", b)
	}
}

// TestCancelledShellLeavesNoProcess cancels a task while shell.run is in a
// long command that forks a grandchild, and requires the marker processes
// to be gone once the task has settled.
func TestCancelledShellLeavesNoProcess(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	pidFile := filepath.Join(ws, "pids")
	args, _ := json.Marshal(map[string]string{"command": "sleep 300 & echo $! > pids; sleep 300", "cwd": "."})
	script := `{"turns":[{"text":["x"],"tool_calls":[{"name":"shell_run","arguments":` + string(args) + `}]},{"text":["done"]}]}`
	// The marker PIDs are the host's only outside a PID namespace: this
	// test is about the owned process group, so the host opts out of the
	// sandbox (internal/shell's escape tests hold the sandboxed case).
	rt, err := scriptDeployment(t, dir, ws, script, "[options.shell.sandbox]\nmode = \"off\"\n").NewRuntime(context.Background(), HostOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	// With the sandbox off and no literal command policy the call is
	// privileged: the host approves it.
	asked := 0
	task, _ := rt.StartTask(context.Background(), TaskRequest{Input: "go", Approver: approveWith{true, &asked}})
	var pid int
	deadline := time.Now().Add(20 * time.Second)
	for pid == 0 {
		if b, err := os.ReadFile(pidFile); err == nil && len(b) > 1 {
			json.Unmarshal(b[:len(b)-1], &pid)
		}
		if time.Now().After(deadline) {
			t.Fatal("the command never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	task.Cancel()
	obj := task.Wait()
	if obj.Outcome.Status != event.StatusCancelled {
		b, _ := json.Marshal(obj)
		t.Fatalf("outcome: %s", b)
	}
	if alive(pid) {
		t.Fatalf("the grandchild %d outlived the task", pid)
	}
}

// alive reports whether pid is a live (non-zombie) process.
func alive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", itoa(pid), "stat"))
	if err != nil {
		return false
	}
	// The state follows the parenthesized command name.
	for i := len(b) - 1; i > 0; i-- {
		if b[i] == ')' && i+2 < len(b) {
			return b[i+2] != 'Z' && b[i+2] != 'X'
		}
	}
	return true
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
