package pablo

import (
	"context"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/internal/proc"
	"github.com/pabloagent/pablo/ledger"
)

// TestRuntimeOpeningAStoreReapsItsSurvivors: a group recorded in a store by
// a host that died is killed by the next runtime given that store, before
// its first task; a forged record of a live group is left alone.
func TestRuntimeOpeningAStoreReapsItsSurvivors(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("process-group identities are read from /proc")
	}
	ctx := context.Background()
	start := func() (*exec.Cmd, ledger.ProcessGroupRecord) {
		cmd := exec.Command("/bin/sleep", "60")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
		g, err := proc.Identify(cmd.Process.Pid, cmd.Path)
		if err != nil {
			t.Fatal(err)
		}
		return cmd, ledger.ProcessGroupRecord{BootID: g.BootID, Pgid: g.Pgid, LeaderStart: g.LeaderStart, Program: g.Program}
	}
	survivor, rec := start()
	spared, forged := start()
	forged.LeaderStart++ // not the group that runs under this pgid
	store := ledger.NewMemoryStore()
	dead, err := ledger.NewRoot(ctx, ledger.Options{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []ledger.ProcessGroupRecord{rec, forged} {
		if err := dead.RecordProcessGroup(ctx, dead.RootAgentID(), g); err != nil {
			t.Fatal(err)
		}
	}
	s, err := ParseScript([]byte(`{"turns":[{"text":["done"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	set, _ := authority.New(authority.Config{})
	rt, err := NewRuntime(RuntimeOptions{Model: NewScriptModel(s), Authority: set, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Run(ctx, "go"); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { survivor.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the recorded survivor was not reaped")
	}
	if err := syscall.Kill(spared.Process.Pid, 0); err != nil {
		t.Fatalf("a group whose record was forged was killed: %v", err)
	}
	// Both recorded groups are ended as recorded (one reaped, one whose
	// recorded leader no longer exists): the store forgot them, so the
	// next start reads neither again.
	for g, err := range ledger.LiveProcessGroups(ctx, store) {
		t.Errorf("after the reap the store still lists %+v (%v)", g, err)
	}
}

// readCounter is a store that counts the tasks whose records are read.
type readCounter struct {
	*ledger.MemoryStore
	reads map[string]int
}

func (c *readCounter) Records(ctx context.Context, id string) ([]ledger.Record, error) {
	c.reads[id]++
	return c.MemoryStore.Records(ctx, id)
}

// TestStartReadsOnlyWhatNeedsAttention: a runtime's first task looks for
// the process groups a crashed host left through the store's index: it
// reads no record of the store's finished tasks, however many.
func TestStartReadsOnlyWhatNeedsAttention(t *testing.T) {
	ctx := context.Background()
	store := &readCounter{MemoryStore: ledger.NewMemoryStore(), reads: map[string]int{}}
	var old []string
	for range 20 {
		r, err := ledger.NewRoot(ctx, ledger.Options{Store: store})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.RecordProcessGroup(ctx, r.RootAgentID(), ledger.ProcessGroupRecord{BootID: "another-boot", Pgid: 4242}); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Finish(ctx, r.RootAgentID(), ledger.Finish{Outcome: ledger.Outcome{Status: event.StatusCompleted}}); err != nil {
			t.Fatal(err)
		}
		old = append(old, r.ID())
	}
	s, err := ParseScript([]byte(`{"turns":[{"text":["done"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	set, _ := authority.New(authority.Config{})
	rt, err := NewRuntime(RuntimeOptions{Model: NewScriptModel(s), Authority: set, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Run(ctx, "go"); err != nil {
		t.Fatal(err)
	}
	for _, id := range old {
		if n := store.reads[id]; n > 0 {
			t.Fatalf("starting a runtime read the records of finished task %s %d times", id, n)
		}
	}
}
