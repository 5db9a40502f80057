package pablo

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pabloagent/pablo/approval"
	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/internal/engine"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/ledger/outcome"
	"github.com/pabloagent/pablo/model"
)

// heldModel blocks every Generate until its context ends, and says when a
// call has begun.
type heldModel struct{ entered chan struct{} }

func (m heldModel) Info() model.Info { return model.Info{Provider: "test", Model: "held"} }
func (m heldModel) Generate(ctx context.Context, _ *model.Request, _ func(string) error) (*model.Response, error) {
	m.entered <- struct{}{}
	<-ctx.Done()
	return nil, &model.Error{Code: outcome.FailProviderTransport, Delivery: outcome.MayHaveBeenSent, Err: ctx.Err()}
}

// heldTool is a host tool, hold.wait, whose every call blocks until its
// context ends, or until release closes when ignoreCancel is set (a tool
// that does not honour cancellation).
type heldTool struct {
	entered      chan struct{}
	release      chan struct{}
	ignoreCancel bool
}

func (heldTool) Tools() []authority.ToolSpec {
	return []authority.ToolSpec{{ID: "hold.wait", Description: "Wait.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)}}
}

func (h heldTool) Call(ctx context.Context, _ authority.Call) ledger.ToolResult {
	h.entered <- struct{}{}
	if h.ignoreCancel {
		<-h.release
		return ledger.Completed(map[string]any{"waited": true})
	}
	<-ctx.Done()
	return ledger.ToolResult{Status: outcome.ToolCancelled}
}

// heldApprover blocks every request until its context ends.
type heldApprover struct{ entered chan struct{} }

func (a heldApprover) Approve(ctx context.Context, _ approval.Request) (approval.Answer, error) {
	a.entered <- struct{}{}
	<-ctx.Done()
	return approval.Reject, ctx.Err()
}

const holdScript = `{"turns":[{"text":["x"],"tool_calls":[{"name":"hold_wait","arguments":{}}]},{"text":["done"]}]}`

// heldToolRuntime is a runtime of one host tool, hold.wait, called by a
// scripted model, recording in store.
func heldToolRuntime(t *testing.T, tool heldTool, store ledger.Store) *Runtime {
	t.Helper()
	set, err := authority.New(authority.Config{Host: []authority.ID{"hold.wait"}})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := ParseScript([]byte(holdScript))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := NewRuntime(RuntimeOptions{Model: NewScriptModel(sc), Authority: set, Catalogs: []ToolCatalog{tool}, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// shellRuntime is a deployment's runtime whose scripted model runs one
// shell.run of command, with the sandbox off (the host's choice, so the
// marker PIDs are the host's and every call asks the approver), recording
// in store.
func shellRuntime(t *testing.T, command string, store ledger.Store) *Runtime {
	t.Helper()
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	args, _ := json.Marshal(map[string]string{"command": command, "cwd": "."})
	script := `{"turns":[{"text":["x"],"tool_calls":[{"name":"shell_run","arguments":` + string(args) + `}]},{"text":["done"]}]}`
	rt, err := scriptDeployment(t, dir, ws, script, "[options.shell.sandbox]\nmode = \"off\"\n").NewRuntime(context.Background(), HostOptions{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// approveAll allows every call.
type approveAll struct{}

func (approveAll) Approve(context.Context, approval.Request) (approval.Answer, error) {
	return approval.AllowOnce, nil
}

// shutdownBound only keeps a broken Shutdown from hanging the test: a
// correct one returns as soon as the task is joined.
const shutdownBound = time.Minute

// shutDown shuts rt down while task is mid-call and checks what the
// shutdown promises: Shutdown returns after the task settled, as
// cancelled with the shutdown's reason, which the ledger's terminal record
// carries too; every agent of the task has its terminal record; a later
// Start is refused with ErrShutdown; no goroutine outlives the runtime
// (before is the count before it was built).
func shutDown(t *testing.T, rt *Runtime, task *Task, store *ledger.MemoryStore, before int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), shutdownBound)
	defer cancel()
	if err := rt.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	select {
	case <-task.Done():
	default:
		t.Fatal("Shutdown returned before the task settled")
	}
	obj := task.Wait()
	if obj.Outcome.Status != event.StatusCancelled || obj.Outcome.Reason != engine.ShutdownReason {
		b, _ := json.Marshal(obj.Outcome)
		t.Fatalf("outcome %s, want cancelled with the shutdown's reason", b)
	}
	rep, err := ledger.RecoverTask(context.Background(), store, task.ID())
	if err != nil {
		t.Fatal(err)
	}
	if o := rep.Outcome; o == nil || o.Status != outcome.Cancelled || o.Reason != engine.ShutdownReason {
		t.Fatalf("the ledger's terminal record: %+v, want cancelled by the shutdown", o)
	}
	for _, a := range rep.Agents {
		if a.Outcome == nil {
			t.Errorf("agent %s has no terminal record", a.AgentID)
		}
	}
	if _, err := rt.Start(context.Background(), "again"); !errors.Is(err, ErrShutdown) {
		t.Fatalf("Start after Shutdown: %v, want ErrShutdown", err)
	}
	noGoroutineLeft(t, before)
}

// noGoroutineLeft waits, boundedly, for the goroutines that are leaving to
// be gone, and fails if more than before remain (a leak stays).
func noGoroutineLeft(t *testing.T, before int) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > before && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines after the shutdown, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}

// TestShutdownCancelsATaskMidModelCall: a task whose model call blocks
// until its context ends is cancelled by Shutdown, settles cancelled with
// the shutdown's reason (task object and ledger), and is joined before
// Shutdown returns.
func TestShutdownCancelsATaskMidModelCall(t *testing.T) {
	before := runtime.NumGoroutine()
	m := heldModel{entered: make(chan struct{}, 1)}
	set, _ := authority.New(authority.Config{})
	store := ledger.NewMemoryStore()
	rt, err := NewRuntime(RuntimeOptions{Model: m, Authority: set, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	task, err := rt.Start(context.Background(), "go")
	if err != nil {
		t.Fatal(err)
	}
	<-m.entered
	shutDown(t, rt, task, store, before)
}

// TestShutdownCancelsATaskMidToolCall: the same with the task inside a
// host tool's call that blocks until its context ends.
func TestShutdownCancelsATaskMidToolCall(t *testing.T) {
	before := runtime.NumGoroutine()
	tool := heldTool{entered: make(chan struct{}, 1)}
	store := ledger.NewMemoryStore()
	rt := heldToolRuntime(t, tool, store)
	task, err := rt.Start(context.Background(), "go")
	if err != nil {
		t.Fatal(err)
	}
	<-tool.entered
	shutDown(t, rt, task, store, before)
}

// TestShutdownReapsTheProcessesOfAShellCall: a task inside shell.run, whose
// command forked a grandchild, is cancelled by Shutdown; when Shutdown
// returns neither the command nor the grandchild is alive, and the
// runtime's workspace is released.
func TestShutdownReapsTheProcessesOfAShellCall(t *testing.T) {
	before := runtime.NumGoroutine()
	store := ledger.NewMemoryStore()
	rt := shellRuntime(t, "sleep 300 & echo $! $$; sleep 300", store)
	task, err := rt.StartTask(context.Background(), TaskRequest{Input: "go", Approver: approveAll{}})
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for ev := range task.Events() {
		if ev.Type == event.ToolOutput && ev.Stream == "stdout" {
			for _, f := range strings.Fields(ev.Text) {
				n, _ := strconv.Atoi(f)
				pids = append(pids, n)
			}
			break
		}
	}
	if len(pids) != 2 {
		t.Fatalf("the command printed %v, want its grandchild's PID and its own", pids)
	}
	shutDown(t, rt, task, store, before)
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("process %d outlived the shutdown", pid)
		}
	}
}

// TestShutdownCancelsATaskMidApprovalWait: a task whose call waits for an
// approver that blocks until its context ends is cancelled by Shutdown;
// the call never runs.
func TestShutdownCancelsATaskMidApprovalWait(t *testing.T) {
	before := runtime.NumGoroutine()
	store := ledger.NewMemoryStore()
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	rt := shellRuntime(t, "touch "+marker, store)
	a := heldApprover{entered: make(chan struct{}, 1)}
	task, err := rt.StartTask(context.Background(), TaskRequest{Input: "go", Approver: a})
	if err != nil {
		t.Fatal(err)
	}
	<-a.entered
	shutDown(t, rt, task, store, before)
	if _, err := os.Stat(marker); err == nil {
		t.Error("the call awaiting approval ran")
	}
}

// TestNothingStartsAfterShutdown: once Shutdown began, Start, StartTask
// and a session's prompt are refused with ErrShutdown, and a session whose
// runtime shut down is not left busy.
func TestNothingStartsAfterShutdown(t *testing.T) {
	set, _ := authority.New(authority.Config{})
	rt, err := NewRuntime(RuntimeOptions{Model: heldModel{entered: make(chan struct{}, 1)}, Authority: set})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Start(context.Background(), "go"); !errors.Is(err, ErrShutdown) {
		t.Errorf("Start: %v", err)
	}
	if _, err := rt.StartTask(context.Background(), TaskRequest{Input: "go"}); !errors.Is(err, ErrShutdown) {
		t.Errorf("StartTask: %v", err)
	}
	sessions, err := NewSessions(SessionOptions{Runtime: func(context.Context) (*Runtime, error) { return rt, nil }})
	if err != nil {
		t.Fatal(err)
	}
	x, err := sessions.New(context.Background(), SessionRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // the refused prompt leaves the session free for the next
		if _, err := x.Prompt(context.Background(), "go", nil); !errors.Is(err, ErrShutdown) {
			t.Fatalf("session prompt: %v", err)
		}
	}
}

// TestShutdownIsIdempotentAndConcurrent: many Shutdown and Close calls at
// once, during a running task, all return nil once the task is joined,
// and the runtime's resources are released exactly once.
func TestShutdownIsIdempotentAndConcurrent(t *testing.T) {
	m := heldModel{entered: make(chan struct{}, 1)}
	set, _ := authority.New(authority.Config{})
	var released atomic.Int32
	rt, err := NewRuntime(RuntimeOptions{Model: m, Authority: set,
		cleanup: []func() error{func() error { released.Add(1); return nil }}})
	if err != nil {
		t.Fatal(err)
	}
	task, err := rt.Start(context.Background(), "go")
	if err != nil {
		t.Fatal(err)
	}
	<-m.entered
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			if i%2 == 0 {
				errs[i] = rt.Close()
				return
			}
			errs[i] = rt.Shutdown(context.Background())
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("call %d: %v", i, err)
		}
	}
	if n := released.Load(); n != 1 {
		t.Errorf("released %d times, want once", n)
	}
	if st := task.Wait().Outcome.Status; st != event.StatusCancelled {
		t.Errorf("the task ended %s", st)
	}
}

// TestShutdownPastItsContextNamesWhatStillRuns: a tool that ignores
// cancellation keeps its task running past Shutdown's context. Shutdown
// then says which task still runs, and keeps the runtime's resources
// open under it; the task, once it settles, releases them, and a later
// Shutdown returns nil.
func TestShutdownPastItsContextNamesWhatStillRuns(t *testing.T) {
	tool := heldTool{entered: make(chan struct{}, 1), release: make(chan struct{}), ignoreCancel: true}
	set, _ := authority.New(authority.Config{Host: []authority.ID{"hold.wait"}})
	sc, _ := ParseScript([]byte(holdScript))
	var released atomic.Int32
	rt, err := NewRuntime(RuntimeOptions{Model: NewScriptModel(sc), Authority: set, Catalogs: []ToolCatalog{tool},
		cleanup: []func() error{func() error { released.Add(1); return nil }}})
	if err != nil {
		t.Fatal(err)
	}
	task, err := rt.Start(context.Background(), "go")
	if err != nil {
		t.Fatal(err)
	}
	<-tool.entered
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = rt.Shutdown(ctx)
	var se *ShutdownError
	if !errors.As(err, &se) || !errors.Is(err, context.Canceled) || len(se.Running) != 1 || se.Running[0] != task.ID() {
		t.Fatalf("Shutdown past its context: %v, want a *ShutdownError naming task %s", err, task.ID())
	}
	if released.Load() != 0 {
		t.Fatal("the runtime was released under a running task")
	}
	if _, err := rt.Start(context.Background(), "go"); !errors.Is(err, ErrShutdown) {
		t.Fatalf("Start during the shutdown: %v", err)
	}
	close(tool.release)
	if err := rt.Shutdown(context.Background()); err != nil {
		t.Fatalf("the second Shutdown: %v", err)
	}
	if released.Load() != 1 {
		t.Fatal("the runtime was not released once its last task settled")
	}
	if o := task.Wait().Outcome; o.Status != event.StatusCancelled || o.Reason != engine.ShutdownReason {
		t.Fatalf("outcome %+v", o)
	}
}

// TestCloseJoinsRunningTasks: Close no longer returns while a task runs
// on the workspace it closes: it cancels the task and joins it first.
func TestCloseJoinsRunningTasks(t *testing.T) {
	tool := heldTool{entered: make(chan struct{}, 1)}
	rt := heldToolRuntime(t, tool, nil)
	task, err := rt.Start(context.Background(), "go")
	if err != nil {
		t.Fatal(err)
	}
	<-tool.entered
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-task.Done():
	default:
		t.Fatal("Close returned while the task still ran")
	}
	if o := task.Wait().Outcome; o.Status != event.StatusCancelled || o.Reason != engine.ShutdownReason {
		t.Fatalf("outcome %+v", o)
	}
}

// shutdownApprover calls its runtime's Shutdown from inside an approval,
// with the approval's own context, and then allows the call.
type shutdownApprover struct {
	rt  **Runtime
	got chan error
}

func (a shutdownApprover) Approve(ctx context.Context, _ approval.Request) (approval.Answer, error) {
	a.got <- (*a.rt).Shutdown(ctx)
	return approval.AllowOnce, nil
}

// TestShutdownFromTheTasksOwnApproverIsBoundedByItsContext: Shutdown
// must not be called from a task's own goroutine, which it would wait
// for; called there with the approval's context, it cancels that context
// itself and so returns at once with a *ShutdownError naming the task,
// not never. The call approved after it does not run, the task settles
// cancelled by the shutdown, and a later Shutdown releases the runtime.
func TestShutdownFromTheTasksOwnApproverIsBoundedByItsContext(t *testing.T) {
	store := ledger.NewMemoryStore()
	marker := filepath.Join(t.TempDir(), "ran")
	rt := shellRuntime(t, "touch "+marker, store)
	a := shutdownApprover{rt: &rt, got: make(chan error, 1)}
	task, err := rt.StartTask(context.Background(), TaskRequest{Input: "go", Approver: a})
	if err != nil {
		t.Fatal(err)
	}
	var se *ShutdownError
	if err := <-a.got; !errors.As(err, &se) || len(se.Running) != 1 || se.Running[0] != task.ID() {
		t.Fatalf("Shutdown from the approver: %v, want a *ShutdownError naming task %s", err, task.ID())
	}
	if o := task.Wait().Outcome; o.Status != event.StatusCancelled || o.Reason != engine.ShutdownReason {
		t.Fatalf("outcome %+v, want cancelled by the shutdown", o)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the call approved after the shutdown ran")
	}
	ctx, cancel := context.WithTimeout(context.Background(), shutdownBound)
	defer cancel()
	if err := rt.Shutdown(ctx); err != nil {
		t.Fatalf("the later Shutdown: %v", err)
	}
}
