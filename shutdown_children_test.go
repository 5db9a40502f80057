package pablo_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/children"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/ledger/outcome"
)

// TestShutdownJoinsTheChildren: Shutdown during a root's wait on two
// running children and a queued one returns only after every child is
// settled and joined: the active ones cancelled, the queued one never
// run, each agent's terminal record written, the root's saying it was the
// shutdown, and no goroutine of the tree left.
func TestShutdownJoinsTheChildren(t *testing.T) {
	before := runtime.NumGoroutine()
	set, _ := authority.New(authority.Config{Native: []authority.ID{authority.Subagent}})
	m := &blockingTree{n: 3, started: make(chan string, 3)}
	store := ledger.NewMemoryStore()
	rt, err := pablo.NewRuntime(pablo.RuntimeOptions{Model: m, Authority: set, Store: store, Children: &children.Capacity{}})
	if err != nil {
		t.Fatal(err)
	}
	task, err := rt.Start(context.Background(), fanInRoot)
	if err != nil {
		t.Fatal(err)
	}
	<-m.started
	<-m.started
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a bound for a broken Shutdown only
	defer cancel()
	if err := rt.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-task.Done():
	default:
		t.Fatal("Shutdown returned before the root settled")
	}
	select {
	case in := <-m.started:
		t.Fatalf("the queued child %q ran after the shutdown", in)
	default:
	}
	rep, err := ledger.RecoverTask(context.Background(), store, task.ID())
	if err != nil {
		t.Fatal(err)
	}
	if o := rep.Outcome; o == nil || o.Status != outcome.Cancelled || !strings.HasPrefix(o.Reason, "runtime_shutdown:") {
		t.Fatalf("the root's terminal record %+v, want cancelled by the shutdown", o)
	}
	cancelled := 0
	for _, a := range rep.Agents[1:] {
		switch {
		case a.Outcome == nil:
			t.Errorf("child %s has no terminal record", a.AgentID)
		case a.Outcome.Status == outcome.Cancelled:
			cancelled++
		}
	}
	if cancelled < 2 {
		t.Errorf("%d children settled cancelled, want the 2 that ran: %+v", cancelled, rep.Agents)
	}
	for end := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > before && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines after the shutdown, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}
