package pablo_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

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
	rt, task, m, store := startBlockedTree(t)
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
	noQueuedChildRan(t, m)
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
	noGoroutineLeft(t, before)
}
