package postgres_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/internal/pgtest"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/ledger/ledgertest"
	"github.com/pabloagent/pablo/ledger/outcome"
	"github.com/pabloagent/pablo/ledger/postgres"
)

// The host child is this test binary re-executed with childEnv set to a
// mode; it opens the store named by the PABLO_PG_* variables and prints
// one line per acknowledged fact:
//
//	crash:   four task loops, "T task", "D task call", "S task call",
//	         "F task", until it is killed
//	midcall: "DISPATCHED task" once a tool call's dispatch is durable,
//	         then waits to be killed, the call in flight
//	pause:   "READY task", then for each line read from stdin one write,
//	         answered "OK" or "REFUSED lost=BOOL"
func runHostChild() int {
	ctx := context.Background()
	mode := os.Getenv(childEnv)
	store, err := postgres.Open(ctx, postgres.Options{URL: os.Getenv("PABLO_PG_URL"), Password: os.Getenv("PABLO_PG_PASSWORD"), Owner: "child-" + mode})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var mu sync.Mutex
	ack := func(format string, args ...any) {
		mu.Lock()
		fmt.Fprintf(os.Stdout, format+"\n", args...)
		mu.Unlock()
	}
	allow := authority.Decision{Allowed: true, Layer: "policy", RuleID: "r"}
	if spec, ok := strings.CutPrefix(mode, "load:"); ok {
		defer store.Close()
		return runLoadChild(store, spec)
	}
	switch mode {
	case "crash":
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Go(func() {
				for i := 0; ; i++ {
					if err := crashTask(ctx, store, fmt.Sprintf("w%d-%d", w, i), allow, ack); err != nil {
						fmt.Fprintln(os.Stderr, err)
						os.Exit(3)
					}
				}
			})
		}
		wg.Wait()
	case "midcall":
		r, err := ledger.NewRoot(ctx, ledger.Options{Store: store, TaskID: "midcall", RootAgentID: "root"})
		if err == nil {
			err = r.AdmitToolCall(ctx, "root", ledger.ToolCall{ID: "c1", Name: "fs.write", Decision: allow})
		}
		if err == nil {
			err = r.Dispatch(ctx, "root", "c1")
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 3
		}
		ack("DISPATCHED midcall")
		select {} // the call is in flight until the host is killed
	case "pause":
		r, err := ledger.NewRoot(ctx, ledger.Options{Store: store, TaskID: "paused", RootAgentID: "root"})
		if err == nil {
			err = r.Flush(ctx)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 3
		}
		ack("READY paused")
		in := bufio.NewScanner(os.Stdin)
		for in.Scan() {
			_, err := r.Append(ctx, "root", "note", nil)
			if err == nil {
				err = r.Flush(ctx)
			}
			if err != nil {
				ack("REFUSED lost=%v", errors.Is(err, ledger.ErrLeaseLost))
				continue
			}
			ack("OK")
		}
	}
	store.Close()
	return 0
}

func crashTask(ctx context.Context, store ledger.Store, id string, allow authority.Decision, ack func(string, ...any)) error {
	r, err := ledger.NewRoot(ctx, ledger.Options{Store: store, TaskID: id, RootAgentID: "root", FlushEvery: 8})
	if err != nil {
		return err
	}
	if err := r.Flush(ctx); err != nil {
		return err
	}
	ack("T %s", id)
	for k := range 3 {
		call := fmt.Sprintf("c%d", k)
		if err := r.AdmitToolCall(ctx, "root", ledger.ToolCall{ID: call, Name: "fs.write", Decision: allow}); err != nil {
			return err
		}
		if err := r.Dispatch(ctx, "root", call); err != nil {
			return err
		}
		ack("D %s %s", id, call)
		if err := r.SettleToolCall(ctx, "root", call, ledger.ToolSettlement{Status: outcome.ToolCompleted, Delivery: outcome.ResponseReceived}); err != nil {
			return err
		}
		ack("S %s %s", id, call)
	}
	if _, err := r.Finish(ctx, "root", ledger.Finish{Outcome: ledger.Outcome{Status: outcome.Completed}}); err != nil {
		return err
	}
	ack("F %s", id)
	return nil
}

// host is a child host process this test started, killed and reaped at
// cleanup at the latest.
type host struct {
	cmd   *exec.Cmd
	lines *bufio.Scanner
	stdin io.WriteCloser
}

func startHost(t *testing.T, mode string, opts postgres.Options) *host {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+mode, "PABLO_PG_URL="+opts.URL, "PABLO_PG_PASSWORD="+opts.Password)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &host{cmd: cmd, lines: bufio.NewScanner(stdout), stdin: stdin}
	t.Cleanup(func() {
		// Only the process this test started, by its own PID.
		cmd.Process.Signal(syscall.SIGCONT)
		cmd.Process.Kill()
		cmd.Wait()
	})
	return h
}

func (h *host) line(t *testing.T) string {
	t.Helper()
	if !h.lines.Scan() {
		t.Fatalf("the host process ended: %v", h.lines.Err())
	}
	return h.lines.Text()
}

func (h *host) kill(t *testing.T) {
	t.Helper()
	if err := h.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	h.cmd.Wait()
}

// afterExpiry opens another host's view of the store whose clock reads d
// from now: every lease a killed host held has expired by it.
func afterExpiry(t *testing.T, opts postgres.Options, d time.Duration) *postgres.Store {
	t.Helper()
	c := newTestClock()
	c.Set(time.Now().Add(d))
	opts.Clock, opts.Owner = c, "recovering-host"
	return openStore(t, opts)
}

// TestKilledHostKeepsEveryAcknowledgedRecord is the bbolt store's kill -9
// test against PostgreSQL: a host runs four tasks at once and is killed;
// every fact it acknowledged is in the store, and what it had dispatched
// but not settled reads as unknown.
func TestKilledHostKeepsEveryAcknowledgedRecord(t *testing.T) {
	t.Parallel()
	opts := testDB(t)
	h := startHost(t, "crash", opts)
	acked := map[string]bool{}
	var lines []string
	for len(lines) < 150 {
		l := h.line(t)
		lines = append(lines, l)
		acked[l] = true
	}
	h.kill(t)
	// Read the rest the pipe held: acknowledged before the kill too.
	for h.lines.Scan() {
		acked[h.lines.Text()] = true
		lines = append(lines, h.lines.Text())
	}
	s := afterExpiry(t, opts, time.Hour)
	reports := map[string]ledger.TaskReport{}
	for _, l := range lines {
		f := strings.Fields(l)
		rep, ok := reports[f[1]]
		if !ok {
			var err error
			if rep, err = ledger.RecoverTask(bg, s, f[1]); err != nil {
				t.Fatalf("acknowledged %q, but: %v", l, err)
			}
			reports[f[1]] = rep
		}
		find := func(cs []ledger.CallReport) bool {
			for _, c := range cs {
				if c.CallID == f[2] {
					return true
				}
			}
			return false
		}
		switch f[0] {
		case "D":
			if !find(rep.Completed) && !find(rep.Unknown) {
				t.Fatalf("acknowledged %q, but the call is neither completed nor unknown: %+v", l, rep)
			}
		case "S":
			if !find(rep.Completed) {
				t.Fatalf("acknowledged %q, but the call is not completed: %+v", l, rep)
			}
		case "F":
			if rep.Outcome == nil || rep.Outcome.Status != outcome.Completed {
				t.Fatalf("acknowledged %q, but the task has no outcome", l)
			}
		}
	}
	// The index was written in the records' transactions: after the kill
	// it still says what a full read says.
	ledgertest.CheckIndex(t, s)
	t.Logf("%d acknowledged facts of %d tasks checked after kill -9", len(lines), len(reports))
}

// TestAnotherHostRecoversAKilledHostsCallAsUnknown: one host is killed
// with a tool call in flight; another host is refused while the lease is
// live, and once it has expired lists the call as unknown.
func TestAnotherHostRecoversAKilledHostsCallAsUnknown(t *testing.T) {
	t.Parallel()
	opts := testDB(t)
	h := startHost(t, "midcall", opts)
	if l := h.line(t); l != "DISPATCHED midcall" {
		t.Fatalf("host says %q", l)
	}
	h.kill(t)
	now := openStore(t, opts) // the system clock: the lease still runs
	if _, err := ledger.RecoverTask(bg, now, "midcall"); !errors.Is(err, ledger.ErrLeaseLive) {
		t.Fatalf("recover while the dead host's lease is live = %v, want ErrLeaseLive", err)
	}
	later := afterExpiry(t, opts, 30*time.Second+time.Millisecond)
	start := time.Now()
	rep, err := ledger.RecoverTask(bg, later, "midcall")
	took := time.Since(start)
	if err != nil || len(rep.Unknown) != 1 || rep.Unknown[0].CallID != "c1" || rep.Unknown[0].State != ledger.CallDispatched {
		t.Fatalf("recover after expiry = %+v, %v; want c1 unknown", rep, err)
	}
	t.Logf("from lease expiry to the listing on another host: %v (one RecoverTask)", took)
}

// TestAPausedOwnerWhoseLeaseWasStolenCannotWrite: the owner is stopped
// (SIGSTOP, on the process this test started), another host claims the
// expired lease, the owner resumes and its writes are refused by the
// database.
func TestAPausedOwnerWhoseLeaseWasStolenCannotWrite(t *testing.T) {
	t.Parallel()
	opts := testDB(t)
	h := startHost(t, "pause", opts)
	if l := h.line(t); l != "READY paused" {
		t.Fatalf("host says %q", l)
	}
	fmt.Fprintln(h.stdin, "write")
	if l := h.line(t); l != "OK" {
		t.Fatalf("the owner's write: %q", l)
	}
	if err := h.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	thief := afterExpiry(t, opts, 31*time.Second)
	l, err := thief.Claim(bg, "paused")
	if err != nil {
		t.Fatalf("Claim of the paused owner's expired lease: %v", err)
	}
	before, _ := thief.Records(bg, "paused")
	if err := h.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(h.stdin, "write")
	if got := h.line(t); got != "REFUSED lost=true" {
		t.Fatalf("the resumed owner's write: %q, want it refused as a lost lease", got)
	}
	after, _ := thief.Records(bg, "paused")
	if len(after) != len(before) {
		t.Fatalf("the fenced owner wrote %d records", len(after)-len(before))
	}
	h.stdin.Close()
	h.cmd.Wait()
	t.Logf("claimed with token %d; the resumed owner was refused", l.Token)
}

// TestServerRestartMidTask: the database goes down (pg_ctl stop -m
// immediate on this run's own cluster, as a crash) while a task has a call
// in flight, and comes back.
// The barrier that meets the restart fails (ErrStore: the root stops), so
// the task ends with that call's delivery unknown; nothing acknowledged
// before is lost, and the store writes again once the server is back.
// Not parallel: it restarts the package's one server, so it runs before
// the parallel tests resume.
func TestServerRestartMidTask(t *testing.T) {
	opts := testDB(t)
	s := openStore(t, opts)
	allow := authority.Decision{Allowed: true, Layer: "policy", RuleID: "r"}
	r, err := ledger.NewRoot(bg, ledger.Options{Store: s, TaskID: "restart", RootAgentID: "root"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"done", "inflight"} {
		if err := r.AdmitToolCall(bg, "root", ledger.ToolCall{ID: c, Name: "fs.write", Decision: allow}); err != nil {
			t.Fatal(err)
		}
		if err := r.Dispatch(bg, "root", c); err != nil {
			t.Fatal(err)
		}
		if c == "done" {
			if err := r.SettleToolCall(bg, "root", c, ledger.ToolSettlement{Status: outcome.ToolCompleted, Delivery: outcome.ResponseReceived}); err != nil {
				t.Fatal(err)
			}
		}
	}
	ctx, cancel := context.WithTimeout(bg, time.Minute)
	defer cancel()
	if err := cluster.Halt(ctx); err != nil {
		t.Fatal(err)
	}
	err = r.SettleToolCall(bg, "root", "inflight", ledger.ToolSettlement{Status: outcome.ToolCompleted, Delivery: outcome.ResponseReceived})
	if rerr := cluster.Resume(ctx); rerr != nil {
		t.Fatal(rerr)
	}
	if !errors.Is(err, ledger.ErrStore) {
		t.Fatalf("a barrier while the server is down = %v, want ErrStore", err)
	}
	if err := r.SettleToolCall(bg, "root", "inflight", ledger.ToolSettlement{Status: outcome.ToolCancelled, Delivery: outcome.MayHaveBeenSent}); !errors.Is(err, ledger.ErrStore) {
		t.Fatalf("the root accepted work after a store failure: %v", err)
	}
	// Another store (another host, after the lease) reads what was
	// acknowledged: the settled call complete, the one in flight unknown.
	later := afterExpiry(t, opts, time.Hour)
	rep, err := ledger.RecoverTask(bg, later, "restart")
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Completed) != 1 || rep.Completed[0].CallID != "done" || len(rep.Unknown) != 1 || rep.Unknown[0].CallID != "inflight" {
		t.Fatalf("after the restart: completed %+v, unknown %+v", rep.Completed, rep.Unknown)
	}
	// The pool reconnects: the store writes again.
	if err := s.Append(bg, []ledger.Record{taskRecord("after-restart")}); err != nil {
		t.Fatalf("Append after the server came back: %v", err)
	}
	if !pgtest.Alive(cluster.PID()) {
		t.Fatal("the restarted postmaster is not running")
	}
}
