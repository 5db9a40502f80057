package ledger

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pabloagent/pablo/authority"
)

// volatileChildEnv switches the test binary into the volatile child: it
// records a dispatched call and a process group in the bolt store named by
// the variable, prints the task ID, and waits to be killed.
const volatileChildEnv = "PABLO_LEDGER_VOLATILE_CHILD"

func runVolatileChild(path string) int {
	ctx := context.Background()
	store, err := OpenBolt(path, BoltOptions{Timeout: 5 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	r, err := NewRoot(ctx, Options{Store: store})
	if err == nil {
		err = r.AdmitToolCall(ctx, r.RootAgentID(), ToolCall{ID: "c1", Name: "shell.run", Decision: authority.Decision{Allowed: true}})
	}
	if err == nil {
		err = r.Dispatch(ctx, r.RootAgentID(), "c1")
	}
	if err == nil {
		_, err = r.Append(ctx, r.RootAgentID(), "tool.started", nil)
	}
	if err == nil {
		err = r.RecordProcessGroup(ctx, r.RootAgentID(), ProcessGroupRecord{BootID: "b0", Pgid: 4242, LeaderStart: 987, Program: "/bin/sh"})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	fmt.Println(r.ID(), store.Commits())
	select {} // until killed
}

// TestProcessGroupRecordSpendsNoBarrier: on a bolt store a process group is
// recorded volatile, with no commit, and is at once in the store; a store
// that cannot keep volatile records spends a barrier for it instead.
func TestProcessGroupRecordSpendsNoBarrier(t *testing.T) {
	ctx := context.Background()
	db, err := OpenBolt(filepath.Join(t.TempDir(), "l.db"), BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	g := ProcessGroupRecord{BootID: "b0", Pgid: 4242, LeaderStart: 987, Program: "/bin/sh"}
	for _, v := range []struct {
		name    string
		store   Store
		commits uint64
	}{{"volatile", db, 0}, {"barrier", struct{ Store }{db}, 1}} {
		t.Run(v.name, func(t *testing.T) {
			root, err := NewRoot(ctx, Options{Store: v.store})
			if err != nil {
				t.Fatal(err)
			}
			before := db.Commits()
			for range 2 {
				if err := root.RecordProcessGroup(ctx, root.RootAgentID(), g); err != nil {
					t.Fatal(err)
				}
			}
			if got := db.Commits() - before; got != 2*v.commits {
				t.Errorf("two process groups cost %d commits, want %d", got, 2*v.commits)
			}
			rep, err := RecoverTask(ctx, db, root.ID())
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.ProcessGroups) != 2 || rep.RootAgentID != root.RootAgentID() {
				t.Fatalf("recovered %+v", rep)
			}
			if err := root.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			recs, err := db.Records(ctx, root.ID())
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range recs {
				if r.N != uint64(i+1) {
					t.Fatalf("record %d has N %d: kept twice or lost", i+1, r.N)
				}
			}
		})
	}
	mem := NewMemoryStore()
	root, _ := NewRoot(ctx, Options{Store: mem})
	if err := root.RecordProcessGroup(ctx, root.RootAgentID(), g); err != nil {
		t.Fatal(err)
	}
	if err := root.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if recs, _ := mem.Records(ctx, root.ID()); len(recs) != 3 {
		t.Fatalf("the memory store kept %d records, want 3 (task, agent, group) once each", len(recs))
	}
}

// TestVolatileRecordSurvivesAKilledWriter: a process group recorded with no
// barrier after it survives a SIGKILL of the writer: a read-only reader sees
// it beside the durable records (and ignores a torn tail), never writing the
// sidecar; the next writer commits it and empties the sidecar.
func TestVolatileRecordSurvivesAKilledWriter(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a process")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "l.db")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), volatileChildEnv+"="+path)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var taskID string
	var commits uint64
	if _, err := fmt.Fscan(bufio.NewReader(out), &taskID, &commits); err != nil {
		cmd.Process.Kill()
		t.Fatalf("the child recorded nothing: %v", err)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	if err := cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("child ended with %v, want killed", err)
	}
	if commits != 1 {
		t.Errorf("the child committed %d times, want 1 (the dispatch)", commits)
	}
	side := path + volatileSuffix
	// A torn tail: a kill in the middle of a later write.
	f, err := os.OpenFile(side, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatalf("no sidecar: %v", err)
	}
	f.WriteString("0badc0de {\"task_id\":\"x\",\"n\":9}\n12345678 {\"task_id\":\"" + taskID + "\",\"n\":")
	f.Close()
	sideBefore, _ := os.ReadFile(side)

	check := func(readOnly bool) {
		t.Helper()
		db, err := OpenBolt(path, BoltOptions{ReadOnly: readOnly})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		rep, err := Recover(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Tasks) != 1 || rep.Tasks[0].TaskID != taskID {
			t.Fatalf("read-only %v: tasks %+v", readOnly, rep.Tasks)
		}
		task := rep.Tasks[0]
		want := []ProcessGroupRecord{{AgentID: task.RootAgentID, BootID: "b0", Pgid: 4242, LeaderStart: 987, Program: "/bin/sh"}}
		if !reflect.DeepEqual(task.ProcessGroups, want) || len(task.Unknown) != 1 || task.Events != 1 {
			t.Fatalf("read-only %v: recovered %+v", readOnly, task)
		}
	}
	check(true)
	if after, _ := os.ReadFile(side); !bytes.Equal(after, sideBefore) {
		t.Fatal("a read-only open changed the sidecar")
	}
	check(false) // the next writer commits the sidecar and empties it
	if _, err := os.Stat(side); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the sidecar outlived a clean close: %v", err)
	}
	// A task whose sidecar records do not start a prefix is still unknown.
	ghost, _ := appendVolatileLine(nil, &Record{TaskID: "ghost", N: 2, Kind: RecordDecision, Decision: &DecisionRecord{AgentID: "a", Capability: "c"}})
	os.WriteFile(side, ghost, 0o600)
	if db, err := OpenBolt(path, BoltOptions{ReadOnly: true}); err != nil {
		t.Fatal(err)
	} else {
		_, err := db.Records(ctx, "ghost")
		db.Close()
		if !errors.Is(err, ErrState) {
			t.Fatalf("records of an unknown task: %v", err)
		}
	}
	os.Remove(side)
	check(true) // durable now, and a read-only open creates no sidecar
	if _, err := os.Stat(side); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a read-only open created the sidecar: %v", err)
	}
}

// TestVolatileSidecarEmptiesWhenDurable: once a barrier has made every
// volatile record durable the sidecar holds nothing, so it does not grow
// with a long-running host.
func TestVolatileSidecarEmptiesWhenDurable(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "l.db")
	db, err := OpenBolt(path, BoltOptions{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	root, _ := NewRoot(ctx, Options{Store: db})
	for i := range 3 {
		if err := root.RecordProcessGroup(ctx, root.RootAgentID(), ProcessGroupRecord{BootID: "b", Pgid: 10 + i}); err != nil {
			t.Fatal(err)
		}
		if st, err := os.Stat(path + volatileSuffix); err != nil || st.Size() == 0 || st.Mode().Perm() != 0o600 {
			t.Fatalf("sidecar after a volatile write: %v %v", st, err)
		}
		if err := root.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if st, err := os.Stat(path + volatileSuffix); err != nil || st.Size() != 0 {
			t.Fatalf("sidecar after the barrier: %v %v", st, err)
		}
	}
	if rep, _ := RecoverTask(ctx, db, root.ID()); len(rep.ProcessGroups) != 3 {
		t.Fatalf("groups %+v", rep.ProcessGroups)
	}
}

// FuzzDecodeVolatile: the sidecar decoder never panics, returns only
// records that encode back to a sound line, and garbage after sound lines
// never hides them.
func FuzzDecodeVolatile(f *testing.F) {
	recs := []Record{
		{TaskID: "t1", N: 1, Kind: RecordTask, Time: time.Unix(1, 0).UTC(), Task: &TaskRecord{TaskID: "t1", RootAgentID: "a"}},
		{TaskID: "t1", N: 2, Kind: RecordEvent, Time: time.Unix(2, 0).UTC(), Event: Event{RootSeq: 1, Seq: 1, RootID: "t1", AgentID: "a", Type: "x", Time: time.Unix(2, 0).UTC(), Payload: []byte(`{"k":"\u2028"}`)}},
		{TaskID: "t1", N: 3, Kind: RecordProcessGroup, Time: time.Unix(3, 0).UTC(), ProcessGroup: &ProcessGroupRecord{AgentID: "a", BootID: "b", Pgid: 7}},
	}
	var valid []byte
	for i := range recs {
		var err error
		if valid, err = appendVolatileLine(valid, &recs[i]); err != nil {
			f.Fatal(err)
		}
	}
	f.Add(valid)
	f.Add(valid[:len(valid)-5])
	f.Add([]byte("00000000 {}\n\n\x00\x00\x00\n"))
	f.Add(bytes.ReplaceAll(valid, []byte(`"n":2`), []byte(`"n":5`)))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, _ := decodeVolatile(data)
		for i := range got {
			r := &got[i]
			if r.TaskID == "" || r.N == 0 {
				t.Fatalf("decoded an unusable record %+v", r)
			}
			line, err := appendVolatileLine(nil, r)
			if err != nil {
				t.Fatalf("a decoded record does not encode: %v", err)
			}
			if back, ok := decodeVolatileLine(line[:len(line)-1]); !ok || back.TaskID != r.TaskID || back.N != r.N || back.Kind != r.Kind {
				t.Fatalf("re-encoded %q decodes to %+v %v", line, back, ok)
			}
		}
		all, _ := decodeVolatile(append(append([]byte(nil), valid...), data...))
		if len(all) < len(recs) {
			t.Fatalf("garbage after %d sound lines left %d records", len(recs), len(all))
		}
		for i := range recs {
			if all[i].N != recs[i].N || all[i].Kind != recs[i].Kind {
				t.Fatalf("record %d decoded as %+v", i, all[i])
			}
		}
	})
}
