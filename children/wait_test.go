package children

import (
	"context"
	"testing"
	"time"

	"github.com/pabloagent/pablo/internal/ids"
)

// startWait runs a wait in the background and returns its result channel
// once the wait armed its timer on the fake clock.
func startWait(t *testing.T, tr *Tree, clk *fakeClock, req WaitRequest) chan WaitResult {
	t.Helper()
	out := make(chan WaitResult, 1)
	go func() {
		res, err := tr.Wait(context.Background(), req)
		if err != nil {
			t.Error(err)
		}
		out <- res
	}()
	<-clk.Armed()
	return out
}

func TestWaitTimesOutOnTheInjectedClockWithoutCancelling(t *testing.T) {
	t.Parallel()
	tr, r, clk := newTree(t, nil)
	a := spawn(t, tr, "a")
	h := r.await(t, a.AgentID)
	got := startWait(t, tr, clk, WaitRequest{AgentIDs: []string{a.AgentID}, Mode: WaitAny, Timeout: time.Second})
	clk.Advance(999 * time.Millisecond)
	select {
	case res := <-got:
		t.Fatalf("wait returned before its timeout: %+v", res)
	default:
	}
	clk.Advance(time.Millisecond)
	res := <-got
	if len(res.Settled) != 0 || len(res.Remaining) != 1 || res.Remaining[0] != a.AgentID {
		t.Fatalf("%+v", res)
	}
	if h.wasCancelled() {
		t.Fatal("a wait that timed out cancelled the child")
	}
	// Still starting or running: never stopping or settled.
	if s, _ := tr.Inspect(context.Background(), a.AgentID); s.State != StateRunning && s.State != StateStarting {
		t.Fatalf("state %s", s.State)
	}
}

func TestWaitAnyReturnsOnTheFirstAndAllOnTheLast(t *testing.T) {
	t.Parallel()
	tr, r, clk := newTree(t, nil)
	a, b := spawn(t, tr, "a"), spawn(t, tr, "b")
	ha, hb := r.await(t, a.AgentID), r.await(t, b.AgentID)
	ids := []string{a.AgentID, b.AgentID}
	anyDone := startWait(t, tr, clk, WaitRequest{AgentIDs: ids, Mode: WaitAny, Timeout: MaxWaitTimeout})
	allDone := startWait(t, tr, clk, WaitRequest{AgentIDs: ids, Mode: WaitAll, Timeout: MaxWaitTimeout})
	hb.settle(completed("b"))
	res := <-anyDone
	if len(res.Settled) != 1 || res.Settled[0].AgentID != b.AgentID || len(res.Remaining) != 1 || res.Remaining[0] != a.AgentID {
		t.Fatalf("any: %+v", res)
	}
	select {
	case res := <-allDone:
		t.Fatalf("all returned with one child running: %+v", res)
	default:
	}
	ha.settle(completed("a"))
	res = <-allDone
	if len(res.Settled) != 2 || len(res.Remaining) != 0 || res.Settled[0].AgentID != a.AgentID {
		t.Fatalf("all: %+v", res)
	}
	// Zero polls: with everything settled it returns at once.
	res, err := tr.Wait(context.Background(), WaitRequest{AgentIDs: ids, Mode: WaitAll})
	if err != nil || len(res.Settled) != 2 {
		t.Fatal(err, res)
	}
}

func TestWaitIsCutToTheRootDeadline(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	tr, r, _ := newTree(t, func(o *Options) { o.Clock = clk; o.Deadline = clk.Now().Add(10 * time.Millisecond) })
	a := spawn(t, tr, "a")
	r.await(t, a.AgentID)
	got := startWait(t, tr, clk, WaitRequest{AgentIDs: []string{a.AgentID}, Mode: WaitAll, Timeout: MaxWaitTimeout})
	clk.Advance(10 * time.Millisecond)
	if res := <-got; len(res.Remaining) != 1 {
		t.Fatalf("%+v", res)
	}
}

func TestWaitEndsWithItsContext(t *testing.T) {
	t.Parallel()
	tr, _, _ := newTree(t, nil)
	a := spawn(t, tr, "a")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := tr.Wait(ctx, WaitRequest{AgentIDs: []string{a.AgentID}, Mode: WaitAll, Timeout: time.Second})
	if err != context.Canceled || len(res.Remaining) != 1 {
		t.Fatalf("%v %+v", err, res)
	}
}

func TestWaitBounds(t *testing.T) {
	t.Parallel()
	tr, _, _ := newTree(t, nil)
	var agents []string
	for i := range MaxTotal {
		agents = append(agents, spawn(t, tr, "c"+string(rune('a'+i))).AgentID)
	}
	ctx := context.Background()
	ok := func(req WaitRequest) {
		t.Helper()
		if _, err := tr.Wait(ctx, req); err != nil {
			t.Fatalf("%+v: %v", req, err)
		}
	}
	bad := func(req WaitRequest, code Code) {
		t.Helper()
		_, err := tr.Wait(ctx, req)
		wantCode(t, err, code)
	}
	ok(WaitRequest{AgentIDs: agents[:16], Mode: WaitAny})
	bad(WaitRequest{AgentIDs: append(agents[:16:16], agents[0]), Mode: WaitAny}, CodeOutOfRange) // 17
	bad(WaitRequest{AgentIDs: nil, Mode: WaitAny}, CodeOutOfRange)
	bad(WaitRequest{AgentIDs: []string{agents[0], agents[1], agents[0]}, Mode: WaitAny}, CodeDuplicateAgentID)
	bad(WaitRequest{AgentIDs: agents[:1], Mode: "some"}, CodeOutOfRange)
	bad(WaitRequest{AgentIDs: agents[:1], Mode: WaitAny, Timeout: MaxWaitTimeout + time.Millisecond}, CodeOutOfRange)
	bad(WaitRequest{AgentIDs: agents[:1], Mode: WaitAny, Timeout: -time.Millisecond}, CodeOutOfRange)
	bad(WaitRequest{AgentIDs: []string{"00000000-0000-4000-8000-0000000000ff"}, Mode: WaitAny}, CodeUnknownAgent)
	bad(WaitRequest{AgentIDs: []string{"root-agent"}, Mode: WaitAny}, CodeUnknownAgent)

	// A child of another root is unknown here.
	other, _, _ := newTree(t, func(o *Options) { o.IDs = ids.NewSequential(1 << 20) })
	foreign := spawn(t, other, "elsewhere")
	bad(WaitRequest{AgentIDs: []string{foreign.AgentID}, Mode: WaitAny}, CodeUnknownAgent)
}
