package a2a

import (
	"context"
	"strings"
	"testing"

	"github.com/pabloagent/pablo/ledger/outcome"
)

// sends counts the SendMessage calls a2a-go's server finished.
func sends(p *goPeer) int {
	n := 0
	for _, l := range strings.Split(p.logs.String(), "\n") {
		if strings.Contains(l, `msg="a2a call finished"`) && strings.Contains(l, "a2a.method=SendMessage ") {
			n++
		}
	}
	return n
}

// TestFollowPollsTheBoundTaskAndSendsNothing is a resumed remote child on
// a2a-go's server: a first runner (the host that stopped) sends a gated
// task and learns its IDs; a second runner given them follows the task
// with GetTask and sends nothing; once the agent finishes, the follower's
// result is the completed task's. The server saw one SendMessage.
func TestFollowPollsTheBoundTaskAndSendsNothing(t *testing.T) {
	t.Parallel()
	peer := startGoPeer(t)
	first := newRunner(t, Options{Remotes: []Remote{peerRemote(peer.base)}})
	h1, err := first.StartRemote(context.Background(), spec("fixture", "gated", false))
	if err != nil {
		t.Fatal(err)
	}
	waitBound(t, h1.(*Handle))
	taskID, contextID := h1.(*Handle).RemoteTask()
	if taskID == "" || contextID == "" {
		t.Fatalf("bound IDs %q %q", taskID, contextID)
	}
	second := newRunner(t, Options{Remotes: []Remote{peerRemote(peer.base)}})
	s := spec("fixture", "gated", false)
	s.TaskID, s.ContextID = taskID, contextID
	h2, err := second.StartRemote(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := h2.(*Handle).RemoteTask(); got != "" && got != taskID {
		t.Fatalf("the follower bound %q, want %q", got, taskID)
	}
	close(peer.gate)
	waitDone(t, h1)
	waitDone(t, h2)
	res, rep := h2.Result(), h2.(*Handle).Report()
	if res.Outcome.Status != outcome.Completed || res.Output != "gated" || rep.TaskID != taskID || !rep.Sent || rep.CancelSent {
		t.Fatalf("follower: %+v %+v", res.Outcome, rep)
	}
	if n := sends(peer); n != 1 {
		t.Fatalf("the server finished %d SendMessage calls, want the first host's one; its log:\n%s", n, peer.logs.String())
	}
}

// TestFollowOfATaskThePeerDoesNotKnowFails: a task ID the peer does not
// know fails the child (remote_task, may_have_been_sent: the request left
// before the stop), and nothing is sent.
func TestFollowOfATaskThePeerDoesNotKnowFails(t *testing.T) {
	t.Parallel()
	peer := startGoPeer(t)
	r := newRunner(t, Options{Remotes: []Remote{peerRemote(peer.base)}})
	s := spec("fixture", "gated", false)
	s.TaskID = "no-such-task"
	h, err := r.StartRemote(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, h)
	if o := h.Result().Outcome; o.Status != outcome.Failed || o.Code != outcome.FailRemoteTask || o.Delivery == outcome.NotSent {
		t.Fatalf("%+v", o)
	}
	if n := sends(peer); n != 0 {
		t.Fatalf("the server finished %d SendMessage calls, want none", n)
	}
}
