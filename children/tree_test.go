package children

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger/outcome"
)

func TestTwoActiveThenFourteenQueuedFIFOThenAdmissionFails(t *testing.T) {
	t.Parallel()
	tr, r, _ := newTree(t, nil)
	var snaps []Snapshot
	for i := range MaxTotal {
		snaps = append(snaps, spawn(t, tr, fmt.Sprintf("task %02d", i)))
	}
	for i, s := range snaps {
		want := StateQueued
		if i < MaxActive {
			want = StateStarting
		}
		if s.State != want {
			t.Fatalf("child %d: state %s, want %s", i, s.State, want)
		}
	}
	if l := tr.Load(); l.Active != 2 || l.Queued != 14 || l.Total != 16 {
		t.Fatalf("load %+v", l)
	}
	_, err := tr.Spawn(context.Background(), Request{Input: "one too many"})
	wantCode(t, err, CodeAdmission)
	if !errors.Is(err, ErrAdmission) {
		t.Fatal("child_admission must match ErrAdmission")
	}
	// Each settlement starts the next queued child, in FIFO order: after
	// child i settled, children i+1 and i+2 hold the slots and the rest
	// still queue.
	for i, s := range snaps {
		r.await(t, s.AgentID).settle(completed("ok"))
		settledSnapshot(t, tr, s.AgentID)
		for j := i + 1; j < len(snaps); j++ {
			got, _ := tr.Inspect(context.Background(), snaps[j].AgentID)
			if queued := got.State == StateQueued; queued != (j > i+2) {
				t.Fatalf("after child %d settled, child %d is %s", i, j, got.State)
			}
		}
	}
	// Settled children still count toward the total.
	_, err = tr.Spawn(context.Background(), Request{Input: "after all settled"})
	wantCode(t, err, CodeAdmission)
	if l := tr.Load(); l.Active != 0 || l.Queued != 0 || l.QueuedInputBytes != 0 {
		t.Fatalf("every reservation must be released once, load %+v", l)
	}
}

func TestHostLowersCapacity(t *testing.T) {
	t.Parallel()
	tr, r, _ := newTree(t, func(o *Options) { o.Capacity = Capacity{Active: 1, Queued: 1, Total: 3} })
	a, b := spawn(t, tr, "a"), spawn(t, tr, "b")
	if a.State != StateStarting || b.State != StateQueued {
		t.Fatalf("states %s %s", a.State, b.State)
	}
	_, err := tr.Spawn(context.Background(), Request{Input: "c"})
	wantCode(t, err, CodeAdmission) // the queue of one is full
	r.await(t, a.AgentID).settle(completed("a"))
	settledSnapshot(t, tr, a.AgentID)
	c := spawn(t, tr, "c") // b started, c queues
	r.await(t, b.AgentID).settle(completed("b"))
	r.await(t, c.AgentID).settle(completed("c"))
	_, err = tr.Spawn(context.Background(), Request{Input: "d"})
	wantCode(t, err, CodeAdmission) // three admitted in total
}

func TestCapacityCanOnlyBeLowered(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]Capacity{
		"Active":            {Active: MaxActive + 1},
		"Total":             {Total: MaxTotal + 1},
		"Queued":            {Queued: MaxQueued + 1},
		"InputBytes":        {InputBytes: MaxInputBytes + 1},
		"QueuedInputBytes":  {QueuedInputBytes: MaxQueuedInputBytes + 1},
		"ResultBytes":       {ResultBytes: MaxResultBytes + 1},
		"RetainedBytes":     {RetainedBytes: MaxRetainedBytes + 1},
		"WaitHandles":       {WaitHandles: MaxWaitHandles + 1},
		"WaitTimeout":       {WaitTimeout: MaxWaitTimeout + time.Millisecond},
		"ChildContextBytes": {ChildContextBytes: MaxChildContextBytes + 1},
		"negative":          {Active: -1},
	} {
		_, err := New(Options{ParentID: "p", Runner: newFakeRunner(), Capacity: c})
		if err == nil {
			t.Errorf("%s: a capacity above the fixed ceiling (or negative) must fail", name)
		} else if name != "negative" && !strings.Contains(err.Error(), "Capacity."+name) {
			t.Errorf("%s: the error must name the field: %v", name, err)
		}
	}
	at := Capacity{Active: MaxActive, Total: MaxTotal, Queued: MaxQueued, InputBytes: MaxInputBytes, QueuedInputBytes: MaxQueuedInputBytes,
		ResultBytes: MaxResultBytes, RetainedBytes: MaxRetainedBytes, WaitHandles: MaxWaitHandles, WaitTimeout: MaxWaitTimeout, ChildContextBytes: MaxChildContextBytes}
	tr, err := New(Options{ParentID: "p", Runner: newFakeRunner(), Capacity: at})
	if err != nil {
		t.Fatalf("the fixed ceilings themselves must be accepted: %v", err)
	}
	if tr.Capacity() != at {
		t.Fatalf("capacity %+v", tr.Capacity())
	}
	if _, err := New(Options{Runner: newFakeRunner()}); err == nil {
		t.Fatal("a missing ParentID must fail")
	}
	if _, err := New(Options{ParentID: "p"}); err == nil {
		t.Fatal("a missing Runner must fail")
	}
}

func TestInputBytesPerChildAndQueued(t *testing.T) {
	t.Parallel()
	tr, _, _ := newTree(t, nil)
	mib := strings.Repeat("x", MaxInputBytes)
	// The input alone at its bound, and one past it.
	if _, err := tr.Spawn(context.Background(), Request{Input: mib + "x"}); err == nil {
		t.Fatal("an input of 1 MiB + 1 must fail")
	} else {
		wantCode(t, err, CodeOutOfRange)
	}
	if _, err := tr.Spawn(context.Background(), Request{Input: ""}); err == nil {
		t.Fatal("an empty input must fail")
	}
	// Input + overlay + context over 1 MiB is an admission failure.
	_, err := tr.Spawn(context.Background(), Request{Input: mib[:MaxInputBytes-2], Overlay: "o", Context: []string{"cc"}})
	wantCode(t, err, CodeAdmission)
	spawn(t, tr, mib) // active
	spawn(t, tr, mib) // active
	for range 4 {
		if s := spawn(t, tr, mib); s.State != StateQueued {
			t.Fatalf("state %s", s.State)
		}
	}
	if l := tr.Load(); l.QueuedInputBytes != MaxQueuedInputBytes {
		t.Fatalf("queued bytes %d", l.QueuedInputBytes)
	}
	_, err = tr.Spawn(context.Background(), Request{Input: "x"})
	wantCode(t, err, CodeAdmission)
}

func TestResultBoundsPerChildAndPerRoot(t *testing.T) {
	t.Parallel()
	tr, r, _ := newTree(t, func(o *Options) { o.Capacity.RetainedBytes = MaxResultBytes + 10 })
	a, b, c := spawn(t, tr, "a"), spawn(t, tr, "b"), spawn(t, tr, "c")
	r.await(t, a.AgentID).settle(completed(strings.Repeat("a", MaxResultBytes)))
	sa := settledSnapshot(t, tr, a.AgentID)
	r.await(t, b.AgentID).settle(completed(strings.Repeat("b", MaxResultBytes+1)))
	sb := settledSnapshot(t, tr, b.AgentID)
	r.await(t, c.AgentID).settle(completed(strings.Repeat("c", 11)))
	sc := settledSnapshot(t, tr, c.AgentID)
	if sa.Output == nil || len(*sa.Output) != MaxResultBytes || sa.OutputOmitted != "" {
		t.Fatalf("a result at 64 KiB is retained: %d %q", sa.OutputBytes, sa.OutputOmitted)
	}
	if sb.Output != nil || sb.OutputOmitted != "result_bytes" || sb.OutputBytes != MaxResultBytes+1 {
		t.Fatalf("a result one past 64 KiB is not retained: %q", sb.OutputOmitted)
	}
	if sc.Output != nil || sc.OutputOmitted != "retained_bytes" {
		t.Fatalf("a result past the root's retained bytes is not retained: %q", sc.OutputOmitted)
	}
	if sb.ResultID == "" || sb.Outcome.Status != outcome.Completed {
		t.Fatal("an oversized completed child still has its outcome and result ID")
	}
	if l := tr.Load(); l.RetainedBytes != MaxResultBytes {
		t.Fatalf("retained %d", l.RetainedBytes)
	}
	_, err := tr.Spawn(context.Background(), Request{Input: "d", Handoffs: []Handoff{{SourceAgentID: sb.AgentID, ResultID: sb.ResultID, Kind: HandoffInline}}})
	wantCode(t, err, CodeHandoffRefused)
}

func TestAdmissionFailsAfterRootDeadlineAndAfterClose(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	tr, _, _ := newTree(t, func(o *Options) { o.Clock = clk; o.Deadline = clk.Now().Add(time.Second) })
	s := spawn(t, tr, "in time")
	if s.State != StateStarting {
		t.Fatal(s.State)
	}
	clk.Advance(time.Second)
	_, err := tr.Spawn(context.Background(), Request{Input: "late"})
	wantCode(t, err, CodeAdmission)

	tr2, _, _ := newTree(t, nil)
	if err := tr2.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, err = tr2.Spawn(context.Background(), Request{Input: "after close"})
	wantCode(t, err, CodeAdmission)
	_, err = tr2.SpawnRemote(context.Background(), RemoteRequest{Remote: "none"})
	if err == nil {
		t.Fatal("a remote spawn after close must fail")
	}
}

func TestQueuedChildPastTheDeadlineSettlesTimedOutWithoutStarting(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	tr, r, _ := newTree(t, func(o *Options) { o.Clock = clk; o.Deadline = clk.Now().Add(time.Second); o.Capacity.Active = 1 })
	spawn(t, tr, "a")
	ha := r.next(t)
	q := spawn(t, tr, "queued")
	clk.Advance(time.Second)
	ha.settle(completed("a"))
	s := settledSnapshot(t, tr, q.AgentID)
	if s.Outcome.Status != outcome.TimedOut || r.startCount() != 1 {
		t.Fatalf("outcome %s, %d starts", s.Outcome.Status, r.startCount())
	}
}

func TestCloseDrainsTheQueueCancelsActiveAndJoinsEveryChild(t *testing.T) {
	t.Parallel()
	tr, r, _ := newTree(t, nil)
	r.holdOnCancel = true
	var all []Snapshot
	for i := range 5 {
		all = append(all, spawn(t, tr, fmt.Sprint("c", i)))
	}
	a, b := r.await(t, all[0].AgentID), r.await(t, all[1].AgentID)
	closed := make(chan error, 1)
	go func() { closed <- tr.Close(context.Background()) }()
	within(t, a.cancelled, "Close never cancelled an active child")
	within(t, b.cancelled, "Close never cancelled an active child")
	select {
	case <-closed:
		t.Fatal("Close returned before the active children were joined")
	default:
	}
	a.settle(Result{Outcome: event.Outcome{Status: outcome.Cancelled}})
	select {
	case <-closed:
		t.Fatal("Close returned before every active child was joined")
	default:
	}
	b.settle(Result{Outcome: event.Outcome{Status: outcome.Cancelled}})
	if err := within(t, closed, "Close never returned"); err != nil {
		t.Fatal(err)
	}
	if r.startCount() != 2 {
		t.Fatalf("a queued child ran: %d starts", r.startCount())
	}
	for _, s := range all {
		got, _ := tr.Inspect(context.Background(), s.AgentID)
		if got.State != StateSettled || got.Outcome.Status != outcome.Cancelled {
			t.Fatalf("%s: %s %v", s.AgentID, got.State, got.Outcome)
		}
	}
	if l := tr.Load(); l.Active != 0 || l.Queued != 0 || l.QueuedInputBytes != 0 {
		t.Fatalf("load after close %+v", l)
	}
	select {
	case <-tr.Joined():
	default:
		t.Fatal("Joined must be closed after Close")
	}
}

func TestCloseGivesUpWithItsContextAndJoinsOnTheNextCall(t *testing.T) {
	t.Parallel()
	tr, r, _ := newTree(t, nil)
	r.holdOnCancel = true
	h := r.await(t, spawn(t, tr, "slow").AgentID)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := tr.Close(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Close with an ended context: %v", err)
	}
	h.settle(Result{Outcome: event.Outcome{Status: outcome.Cancelled}})
	if err := tr.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestStopEndsOneChildWithoutTouchingSiblings(t *testing.T) {
	t.Parallel()
	tr, r, _ := newTree(t, nil)
	a, b, q := spawn(t, tr, "a"), spawn(t, tr, "b"), spawn(t, tr, "queued")
	r.await(t, a.AgentID)
	hb := r.await(t, b.AgentID)
	s, err := tr.Stop(context.Background(), a.AgentID)
	if err != nil {
		t.Fatal(err)
	}
	if s.State != StateSettled || s.Outcome.Status != outcome.Cancelled || s.ResultID != "" {
		t.Fatalf("stopped child: %+v", s)
	}
	if hb.wasCancelled() {
		t.Fatal("stopping one child cancelled its sibling")
	}
	if sb, _ := tr.Inspect(context.Background(), b.AgentID); sb.State == StateSettled || sb.State == StateStopping {
		t.Fatalf("sibling state %s", sb.State)
	}
	// The freed slot went to the queued child.
	r.await(t, q.AgentID)
	// Stop of a queued child settles it without a start.
	q2 := spawn(t, tr, "queued 2")
	s, err = tr.Stop(context.Background(), q2.AgentID)
	if err != nil || s.Outcome.Status != outcome.Cancelled {
		t.Fatalf("%v %+v", err, s)
	}
	if r.startCount() != 3 {
		t.Fatalf("a stopped queued child started: %d", r.startCount())
	}
	// Stop of a settled child returns its snapshot; stop of nobody fails.
	if s2, err := tr.Stop(context.Background(), a.AgentID); err != nil || s2.State != StateSettled {
		t.Fatal(err)
	}
	_, err = tr.Stop(context.Background(), "00000000-0000-4000-8000-00000000ffff")
	wantCode(t, err, CodeUnknownAgent)
	_, err = tr.Stop(context.Background(), "root-agent")
	wantCode(t, err, CodeUnknownAgent)
}

func TestStopWhileStartingCancelsBeforeTheChildRuns(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	r := &gatedRunner{fakeRunner: newFakeRunner(), gate: gate, entered: make(chan struct{})}
	tr, _, _ := newTree(t, func(o *Options) { o.Runner = r })
	s := spawn(t, tr, "slow to start")
	<-r.entered
	stopped := make(chan Snapshot, 1)
	go func() { s, _ := tr.Stop(context.Background(), s.AgentID); stopped <- s }()
	// Stop cancels the start's context; the runner sees it.
	<-r.ctxDone
	close(gate)
	got := <-stopped
	if got.State != StateSettled || got.Outcome.Status != outcome.Cancelled {
		t.Fatalf("%+v", got)
	}
}

// gatedRunner blocks in Start until gate closes, honouring ctx.
type gatedRunner struct {
	*fakeRunner
	gate    chan struct{}
	entered chan struct{}
	ctxDone chan struct{}
}

func (g *gatedRunner) Start(ctx context.Context, spec Spec) (Handle, error) {
	g.ctxDone = make(chan struct{})
	close(g.entered)
	<-ctx.Done()
	close(g.ctxDone)
	<-g.gate
	return nil, ctx.Err()
}

func TestRunnerStartFailureSettlesTheChildAndFreesTheSlot(t *testing.T) {
	t.Parallel()
	tr, r, _ := newTree(t, func(o *Options) { o.Capacity.Active = 1 })
	r.startErr = errors.New("session handler refused")
	a := spawn(t, tr, "a")
	s := settledSnapshot(t, tr, a.AgentID)
	if s.Outcome.Status != outcome.Failed || s.Outcome.Code != outcome.FailChildAdmission || !strings.Contains(s.Outcome.Reason, "session handler refused") {
		t.Fatalf("%+v", s.Outcome)
	}
	r.mu.Lock()
	r.startErr = nil
	r.mu.Unlock()
	b := spawn(t, tr, "b")
	if b.State != StateStarting {
		t.Fatalf("the failed start did not free its slot: %s", b.State)
	}
}

func TestSnapshotIsABoundedReceipt(t *testing.T) {
	t.Parallel()
	tr, r, _ := newTree(t, nil)
	a := spawn(t, tr, "a")
	res := validStructured(`{"k":"` + strings.Repeat("v", MaxResultBytes/2-16) + `"}`)
	res.Output = string(res.StructuredOutput)
	out := res.Output
	res.Outcome.Output = &out
	r.await(t, a.AgentID).settle(res)
	s := settledSnapshot(t, tr, a.AgentID)
	if s.Outcome.Output != nil {
		t.Fatal("the outcome inside a snapshot carries no second copy of the output")
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > MaxResultBytes+4096 {
		t.Fatalf("a snapshot of %d bytes: the result (64 KiB at most) and small receipts", len(b))
	}
	var fields map[string]json.RawMessage
	json.Unmarshal(b, &fields)
	for k := range fields {
		switch k {
		case "agent_id", "parent_agent_id", "kind", "depth", "state", "outcome", "accounting", "result_id", "output", "output_bytes",
			"structured_output", "output_validation", "trace_id":
		default:
			t.Errorf("a snapshot field %q that is no receipt", k)
		}
	}
}
