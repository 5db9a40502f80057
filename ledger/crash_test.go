package ledger

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pabloagent/pablo/ledger/outcome"

	"github.com/pabloagent/pablo/authority"
)

// crashChildEnv switches the test binary into the crash child: it appends to
// the bolt store named by the variable until it is killed.
const crashChildEnv = "PABLO_LEDGER_CRASH_CHILD"

func TestMain(m *testing.M) {
	if path := os.Getenv(crashChildEnv); path != "" {
		os.Exit(runCrashChild(path))
	}
	if path := os.Getenv(volatileChildEnv); path != "" {
		os.Exit(runVolatileChild(path))
	}
	os.Exit(m.Run())
}

// runCrashChild runs four concurrent task loops against the bolt store at
// path and prints one line per acknowledged (durable) record, once a barrier
// has made it durable:
//
//	T task          the task exists
//	E task rootseq  the event with that root_seq is durable
//	A task call     the call is admitted
//	D task call     the call is dispatched
//	S task call     the call is settled
//	F task          the task's outcome is recorded
//	G task pgid     a process group is recorded (volatile: no barrier, but
//	                visible after a kill, with every record before it)
func runCrashChild(path string) int {
	store, err := OpenBolt(path, BoltOptions{Timeout: 5 * time.Second})
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
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(os.Getpid()), uint64(w)))
			for {
				if err := crashTask(store, rng, ack); err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(3)
				}
			}
		})
	}
	wg.Wait()
	return 0
}

func crashTask(store Store, rng *rand.Rand, ack func(string, ...any)) error {
	ctx := context.Background()
	// Some tasks are turns of a session, which the index lists.
	var session *SessionLink
	if k := rng.IntN(4); k > 0 {
		session = &SessionLink{SessionID: fmt.Sprint("crash-session-", k), Turn: rng.Uint64N(9) + 1, Prompt: "p"}
	}
	r, err := NewRoot(ctx, Options{Store: store, FlushEvery: 8, Session: session})
	if err != nil {
		return err
	}
	t, a := r.ID(), r.RootAgentID()
	// What a method that is not a barrier accepted is acknowledged only
	// after the next barrier returns.
	var accepted []string
	accept := func(format string, args ...any) { accepted = append(accepted, fmt.Sprintf(format, args...)) }
	barrier := func(format string, args ...any) {
		for _, line := range accepted {
			ack("%s", line)
		}
		accepted = accepted[:0]
		ack(format, args...)
	}
	accept("T %s", t)
	type open struct {
		id         string
		dispatched bool
	}
	var opens []open
	for i := range 12 {
		ev, err := r.Append(ctx, a, "tick", nil)
		if err != nil {
			return err
		}
		if rng.IntN(3) == 0 {
			if err := r.Flush(ctx); err != nil {
				return err
			}
			barrier("E %s %d", t, ev.RootSeq)
		}
		id := fmt.Sprint("call-", i)
		if err := r.AdmitToolCall(ctx, a, ToolCall{ID: id, Name: "fs.write", Decision: authority.Decision{Allowed: true}}); err != nil {
			return err
		}
		accept("A %s %s", t, id)
		switch rng.IntN(4) {
		case 0: // stays admitted
			opens = append(opens, open{id, false})
			continue
		case 1: // stays dispatched
			if err := r.Dispatch(ctx, a, id); err != nil {
				return err
			}
			barrier("D %s %s", t, id)
			opens = append(opens, open{id, true})
			continue
		}
		if err := r.Dispatch(ctx, a, id); err != nil {
			return err
		}
		barrier("D %s %s", t, id)
		if rng.IntN(2) == 0 {
			// The tool starts a process: its group is visible at once.
			pgid := 1000 + i
			if err := r.RecordProcessGroup(ctx, a, ProcessGroupRecord{BootID: "crash", Pgid: pgid, LeaderStart: uint64(i)}); err != nil {
				return err
			}
			barrier("G %s %d", t, pgid)
		}
		if err := r.SettleToolCall(ctx, a, id, ToolSettlement{Status: outcome.ToolCompleted, Delivery: outcome.ResponseReceived}); err != nil {
			return err
		}
		barrier("S %s %s", t, id)
	}
	for _, o := range opens {
		s := ToolSettlement{Status: outcome.ToolCancelled, Delivery: outcome.NotSent}
		if o.dispatched {
			s.Delivery = outcome.MayHaveBeenSent
		}
		if err := r.SettleToolCall(ctx, a, o.id, s); err != nil {
			return err
		}
		barrier("S %s %s", t, o.id)
	}
	if _, err := r.Finish(ctx, a, Finish{Outcome: Outcome{Status: outcome.Cancelled}}); err != nil {
		return err
	}
	barrier("F %s", t)
	return nil
}

// TestCrashKeepsAcknowledgedRecords kills a writer process with SIGKILL at
// random points, many times over one database file, and checks after each
// crash that nothing acknowledged is lost, nothing half-written is visible,
// dispatched-but-unsettled calls are unknown and admitted-only calls are
// retryable.
func TestCrashKeepsAcknowledgedRecords(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	path := filepath.Join(t.TempDir(), "crash.db")
	rng := rand.New(rand.NewPCG(2026, 11))
	deadline := time.Now().Add(10 * time.Second)
	iterations, acked := 0, 0
	var unknown, retryable int
	for i := 0; i < 20 && (i < 3 || time.Now().Before(deadline)); i++ {
		iterations++
		acks := crashOnce(t, path, time.Duration(rng.IntN(200))*time.Millisecond)
		acked += len(acks)
		unknown, retryable = checkAfterCrash(t, path, acks)
	}
	if unknown == 0 || retryable == 0 {
		t.Errorf("the crashes left %d unknown and %d retryable calls; the test exercised nothing", unknown, retryable)
	}
	t.Logf("%d crash iterations, %d acknowledged records, finally %d unknown and %d retryable calls", iterations, acked, unknown, retryable)
}

func crashOnce(t *testing.T, path string, after time.Duration) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+path)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var lines []string
	first := make(chan struct{})
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		sc := bufio.NewScanner(out)
		once := sync.OnceFunc(func() { close(first) })
		for sc.Scan() {
			lines = append(lines, sc.Text())
			once()
		}
		once()
	}()
	select {
	case <-first:
	case <-time.After(10 * time.Second):
		t.Error("crash child acknowledged nothing within 10s")
	}
	time.Sleep(after)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-readDone
	if err := cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("crash child ended with %v, want killed", err)
	}
	return lines
}

// checkAfterCrash checks the store as a read-only reader sees it (the
// volatile sidecar as the killed writer left it) and then as the next
// writer does (the sidecar committed).
func checkAfterCrash(t *testing.T, path string, acks []string) (unknown, retryable int) {
	t.Helper()
	checkStoreAfterCrash(t, path, acks, true)
	return checkStoreAfterCrash(t, path, acks, false)
}

func checkStoreAfterCrash(t *testing.T, path string, acks []string, readOnly bool) (unknown, retryable int) {
	t.Helper()
	store, err := OpenBolt(path, BoltOptions{Timeout: 5 * time.Second, ReadOnly: readOnly})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	rep, err := Recover(bg, store)
	if err != nil {
		t.Fatalf("recover after crash: %v", err)
	}
	tasks := map[string]*TaskReport{}
	calls := map[string]CallReport{}
	for i := range rep.Tasks {
		task := &rep.Tasks[i]
		tasks[task.TaskID] = task
		unknown += len(task.Unknown)
		retryable += len(task.Retryable)
		for _, list := range [][]CallReport{task.Completed, task.Unknown, task.Retryable} {
			for _, c := range list {
				calls[task.TaskID+" "+c.CallID] = c
				switch {
				case c.State == CallDispatched && c.Class != outcome.ClassUnknown,
					c.State == CallAdmitted && c.Class != outcome.ClassRetryable,
					c.State == CallSettled && c.Delivery == outcome.MayHaveBeenSent && c.Class != outcome.ClassUnknown:
					t.Fatalf("call %s in state %s (%s) classed %s", c.CallID, c.State, c.Delivery, c.Class)
				}
			}
		}
		// Nothing half-written: records and events are dense.
		recs, err := store.Records(bg, task.TaskID)
		if err != nil {
			t.Fatal(err)
		}
		var seq uint64
		for j, r := range recs {
			if r.N != uint64(j+1) || r.TaskID != task.TaskID {
				t.Fatalf("task %s: record %d has N %d: a gap or a torn write", task.TaskID, j+1, r.N)
			}
			if r.Kind == RecordEvent {
				if seq++; r.Event.RootSeq != seq {
					t.Fatalf("task %s: event root_seq %d after %d", task.TaskID, r.Event.RootSeq, seq-1)
				}
			}
		}
	}
	// The index was written in the records' transactions (the sidecar's
	// with them): it says what a full scan says.
	checkIndexMatchesScan(t, store)
	rank := map[string]int{"A": 1, "D": 2, "S": 3}
	for _, line := range acks {
		f := strings.Fields(line)
		task := tasks[f[1]]
		if task == nil {
			t.Fatalf("acknowledged %q but task %s is lost", line, f[1])
		}
		switch f[0] {
		case "E":
			var n uint64
			fmt.Sscan(f[2], &n)
			if task.LastRootSeq < n {
				t.Fatalf("acknowledged %q but the last event is %d", line, task.LastRootSeq)
			}
		case "G":
			var pgid int
			fmt.Sscan(f[2], &pgid)
			if !slices.ContainsFunc(task.ProcessGroups, func(g ProcessGroupRecord) bool { return g.Pgid == pgid }) {
				t.Fatalf("acknowledged %q but the task's groups are %+v (read-only %v)", line, task.ProcessGroups, readOnly)
			}
		case "F":
			if task.Outcome == nil {
				t.Fatalf("acknowledged %q but the outcome is lost", line)
			}
		case "A", "D", "S":
			c, ok := calls[f[1]+" "+f[2]]
			if !ok || stateRank(c.State) < rank[f[0]] {
				t.Fatalf("acknowledged %q but the call is %+v", line, c)
			}
		}
	}
	return unknown, retryable
}
