package a2a

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/ledger/outcome"
)

// TestBlockingSendAsksToReturnImmediately: a non-streaming child's
// SendMessage asks for the task's first state (returnImmediately), so
// its ID is known while the remote works.
func TestBlockingSendAsksToReturnImmediately(t *testing.T) {
	t.Parallel()
	p := newFaultPeer(t)
	p.setRPC(func(w http.ResponseWriter, req rpcRequest) {
		result(w, req, task("t1", "c1", "TASK_STATE_COMPLETED", textArtifact("a1", "done")))
	})
	r := newRunner(t, Options{Remotes: []Remote{p.remote()}})
	if res := run(t, r, spec("peer", "x", false)).Result(); res.Outcome.Status != outcome.Completed {
		t.Fatalf("%+v", res.Outcome)
	}
	p.mu.Lock()
	params := p.calls[0].Params
	p.mu.Unlock()
	var sent struct {
		Configuration struct {
			ReturnImmediately bool `json:"returnImmediately"`
		} `json:"configuration"`
	}
	if err := json.Unmarshal(params, &sent); err != nil || !sent.Configuration.ReturnImmediately {
		t.Fatalf("params %s", params)
	}
}

// pollingPeer answers SendMessage with a submitted task and GetTask with
// a working one until the test lets it complete; it counts the GetTasks.
func pollingPeer(t *testing.T, complete *atomic.Bool, gets *atomic.Int32) *faultPeer {
	p := newFaultPeer(t)
	p.setRPC(func(w http.ResponseWriter, req rpcRequest) {
		switch req.Method {
		case "SendMessage":
			result(w, req, task("t1", "c1", "TASK_STATE_SUBMITTED"))
		case "GetTask":
			gets.Add(1)
			if complete.Load() {
				result(w, req, task("t1", "c1", "TASK_STATE_COMPLETED", textArtifact("a1", "polled"))["task"])
				return
			}
			result(w, req, task("t1", "c1", "TASK_STATE_WORKING")["task"])
		case "CancelTask":
			result(w, req, task("t1", "c1", "TASK_STATE_CANCELED")["task"])
		}
	})
	return p
}

// TestUnsettledBlockingTaskIsPolledWithBoundedBackoff: a blocking send
// answered with a task still at work is followed with GetTask, once at
// once and then with the wait doubling from PollInterval to at most
// MaxPollInterval on the clock, until the task completes; no GetTask goes
// out before its wait passed.
func TestUnsettledBlockingTaskIsPolledWithBoundedBackoff(t *testing.T) {
	t.Parallel()
	var complete atomic.Bool
	var gets atomic.Int32
	p := pollingPeer(t, &complete, &gets)
	clock := newFakeClock()
	r := newRunner(t, Options{Remotes: []Remote{p.remote()}, Clock: clock})
	h, err := r.StartRemote(context.Background(), spec("peer", "x", false))
	if err != nil {
		t.Fatal(err)
	}
	waits := []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}
	for i, d := range waits {
		clock.WaitPending(d, 1)
		if n := gets.Load(); n != int32(i+1) {
			t.Fatalf("before wait %d: %d GetTasks", i, n)
		}
		clock.Advance(d - time.Millisecond)
		if n := gets.Load(); n != int32(i+1) {
			t.Fatalf("a GetTask went out before its %s wait passed", d)
		}
		if i == len(waits)-1 {
			complete.Store(true)
		}
		clock.Advance(time.Millisecond)
	}
	waitDone(t, h)
	res, rep := h.Result(), h.(*Handle).Report()
	if res.Outcome.Status != outcome.Completed || res.Output != "polled" || rep.CancelSent {
		t.Fatalf("%+v %+v", res.Outcome, rep)
	}
	want := []string{"SendMessage", "GetTask"}
	for range waits {
		want = append(want, "GetTask")
	}
	if got := p.methods(); !slices.Equal(got, want) {
		t.Fatalf("calls %v", got)
	}
}

// TestStopWhilePollingSendsCancelTask: a non-streaming child stopped
// while its task is polled sends the task's one CancelTask and settles
// cancelled.
func TestStopWhilePollingSendsCancelTask(t *testing.T) {
	t.Parallel()
	var complete atomic.Bool
	var gets atomic.Int32
	p := pollingPeer(t, &complete, &gets)
	clock := newFakeClock()
	r := newRunner(t, Options{Remotes: []Remote{p.remote()}, Clock: clock})
	h, err := r.StartRemote(context.Background(), spec("peer", "x", false))
	if err != nil {
		t.Fatal(err)
	}
	clock.WaitPending(PollInterval, 1)
	clock.Advance(PollInterval)
	clock.WaitPending(2*PollInterval, 1)
	h.Cancel()
	waitDone(t, h)
	res, rep := h.Result(), h.(*Handle).Report()
	if res.Outcome.Status != outcome.Cancelled || !rep.CancelSent || rep.CancelReceipt != "TASK_STATE_CANCELED" {
		t.Fatalf("%+v %+v", res.Outcome, rep)
	}
	if got := p.methods(); !slices.Equal(got, []string{"SendMessage", "GetTask", "GetTask", "CancelTask"}) {
		t.Fatalf("calls %v", got)
	}
}

// TestPollingEndsAtTheDeadline: polling runs under the child's deadline
// (at most the root's): when it passes the child is timed_out and the
// task gets its CancelTask.
func TestPollingEndsAtTheDeadline(t *testing.T) {
	t.Parallel()
	var complete atomic.Bool
	var gets atomic.Int32
	p := pollingPeer(t, &complete, &gets)
	clock := newFakeClock()
	r := newRunner(t, Options{Remotes: []Remote{p.remote()}, Clock: clock})
	s := spec("peer", "x", false)
	s.MaxDurationMillis = ledger.Max(1100)
	h, err := r.StartRemote(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	clock.WaitPending(PollInterval, 1)
	clock.Advance(PollInterval)
	clock.WaitPending(2*PollInterval, 1)
	clock.Advance(2 * PollInterval)
	clock.WaitPending(4*PollInterval, 1)
	clock.Advance(4 * PollInterval) // 1750 ms: past the deadline (1100 ms)
	waitDone(t, h)
	if o, rep := h.Result().Outcome, h.(*Handle).Report(); o.Status != outcome.TimedOut || !rep.CancelSent {
		t.Fatalf("%+v %+v", o, rep)
	}
	got := p.methods()
	if got[len(got)-1] != "CancelTask" || gets.Load() != 3 {
		t.Fatalf("calls %v", got)
	}
}

// TestStopAfterTheRequestLeftStillCancels: a child stopped while its
// SendMessage is in flight waits (at most CancelTimeout) for the task's
// ID and then sends its CancelTask: the remote is not left running.
func TestStopAfterTheRequestLeftStillCancels(t *testing.T) {
	t.Parallel()
	p := newFaultPeer(t)
	arrived, release := make(chan struct{}), make(chan struct{})
	p.setRPC(func(w http.ResponseWriter, req rpcRequest) {
		switch req.Method {
		case "SendMessage":
			close(arrived)
			<-release
			result(w, req, task("t1", "c1", "TASK_STATE_WORKING"))
		case "CancelTask":
			result(w, req, task("t1", "c1", "TASK_STATE_CANCELED")["task"])
		}
	})
	clock := newFakeClock()
	r := newRunner(t, Options{Remotes: []Remote{p.remote()}, Clock: clock})
	h, err := r.StartRemote(context.Background(), spec("peer", "x", false))
	if err != nil {
		t.Fatal(err)
	}
	<-arrived
	h.Cancel()
	clock.WaitPending(CancelTimeout, 1) // the wait for the task's ID
	close(release)
	waitDone(t, h)
	res, rep := h.Result(), h.(*Handle).Report()
	if res.Outcome.Status != outcome.Cancelled || !rep.CancelSent || rep.TaskID != "t1" {
		t.Fatalf("%+v %+v", res.Outcome, rep)
	}
	if got := p.methods(); !slices.Equal(got, []string{"SendMessage", "CancelTask"}) {
		t.Fatalf("calls %v", got)
	}
}

// TestStopWithNoTaskIDIsBounded: a peer that never answers the send
// leaves no ID to cancel: the child settles cancelled once CancelTimeout
// passes on the clock, having sent nothing more.
func TestStopWithNoTaskIDIsBounded(t *testing.T) {
	t.Parallel()
	p := newFaultPeer(t)
	arrived := make(chan struct{})
	p.setRPC(func(w http.ResponseWriter, req rpcRequest) {
		close(arrived)
		<-req.Done
	})
	clock := newFakeClock()
	r := newRunner(t, Options{Remotes: []Remote{p.remote()}, Clock: clock})
	h, err := r.StartRemote(context.Background(), spec("peer", "x", false))
	if err != nil {
		t.Fatal(err)
	}
	<-arrived
	h.Cancel()
	clock.WaitPending(CancelTimeout, 1)
	clock.Advance(CancelTimeout - time.Millisecond)
	select {
	case <-h.Done():
		t.Fatal("settled before the wait for the task's ID passed")
	default:
	}
	clock.Advance(time.Millisecond)
	waitDone(t, h)
	if o, rep := h.Result().Outcome, h.(*Handle).Report(); o.Status != outcome.Cancelled || rep.CancelSent {
		t.Fatalf("%+v %+v", o, rep)
	}
	if got := p.methods(); !slices.Equal(got, []string{"SendMessage"}) {
		t.Fatalf("calls %v", got)
	}
}

// TestStopDuringTheCardFetchSendsNothing: a child stopped before its
// request left (here while its card is fetched) sends no request at all.
func TestStopDuringTheCardFetchSendsNothing(t *testing.T) {
	t.Parallel()
	p := newFaultPeer(t)
	fetching, release := make(chan struct{}), make(chan struct{})
	p.setCard(func(w http.ResponseWriter, r *http.Request) {
		close(fetching)
		<-release
		w.Header().Set("Content-Type", "application/json")
		w.Write(mustJSON(t, goodCard(p.endpoint())))
	})
	r := newRunner(t, Options{Remotes: []Remote{p.remote()}})
	h, err := r.StartRemote(context.Background(), spec("peer", "x", false))
	if err != nil {
		t.Fatal(err)
	}
	<-fetching
	h.Cancel()
	close(release)
	waitDone(t, h)
	if o, rep := h.Result().Outcome, h.(*Handle).Report(); o.Status != outcome.Cancelled || rep.Sent || rep.CancelSent {
		t.Fatalf("%+v %+v", o, rep)
	}
	if got := p.methods(); len(got) != 0 {
		t.Fatalf("calls %v", got)
	}
}
