package a2a

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/pabloagent/pablo/ledger/outcome"
)

func peerRemote(base string) Remote {
	return Remote{Name: "fixture", CardURL: base + "/.well-known/agent-card.json", Endpoint: base + "/rpc"}
}

// TestRealPeer drives the @a2a-js/sdk fixture peer: a streamed task, a
// blocking send, a data result and a completed task with its one artifact.
func TestRealPeer(t *testing.T) {
	t.Parallel()
	base := realPeer(t)
	r := newRunner(t, Options{Remotes: []Remote{peerRemote(base)}})
	for _, stream := range []bool{true, false} {
		h := run(t, r, spec("fixture", "echo:hello remote", stream))
		res, rep := h.Result(), h.Report()
		if res.Outcome.Status != outcome.Completed || res.Output != "hello remote" {
			t.Fatalf("stream %v: outcome %+v, output %q", stream, res.Outcome, res.Output)
		}
		if rep.TaskID == "" || rep.ContextID == "" || rep.State != "TASK_STATE_COMPLETED" || !rep.Sent || rep.CancelSent {
			t.Fatalf("stream %v: report %+v", stream, rep)
		}
		if !strings.HasPrefix(rep.CardDigest, "sha256:") || len(rep.CardDigest) != 71 {
			t.Fatalf("card digest %q", rep.CardDigest)
		}
	}
	h := run(t, r, spec("fixture", `data:{"verdict":"ok","n":2}`, true))
	res := h.Result()
	if res.Outcome.Status != outcome.Completed {
		t.Fatalf("data: %+v", res.Outcome)
	}
	var got map[string]any
	if err := json.Unmarshal(res.StructuredOutput, &got); err != nil || got["verdict"] != "ok" {
		t.Fatalf("structured output %s", res.StructuredOutput)
	}
	for _, tc := range []struct{ input, reason string }{
		{"fail", "the remote task failed"},
		{"input", "input-required"},
		{"refuse", "the remote rejected the task"},
	} {
		res := run(t, r, spec("fixture", tc.input, true)).Result()
		if res.Outcome.Status != outcome.Failed || res.Outcome.Code != outcome.FailRemoteTask || !strings.Contains(res.Outcome.Reason, tc.reason) {
			t.Fatalf("%s: %+v", tc.input, res.Outcome)
		}
	}
}

// TestRealPeerCancelOfASlowTask cancels a working task, streamed and
// blocking: one CancelTask, which the @a2a-js/sdk server's executor
// handles (its log shows it), the peer's canceled receipt kept as a
// claim, the child cancelled.
func TestRealPeerCancelOfASlowTask(t *testing.T) {
	t.Parallel()
	peer := startPeer(t, "server.mjs")
	r := newRunner(t, Options{Remotes: []Remote{peerRemote(peer.base)}})
	for _, stream := range []bool{true, false} {
		h, err := r.StartRemote(context.Background(), spec("fixture", "slow", stream))
		if err != nil {
			t.Fatal(err)
		}
		waitBound(t, h.(*Handle))
		h.Cancel()
		waitDone(t, h)
		res, rep := h.Result(), h.(*Handle).Report()
		if res.Outcome.Status != outcome.Cancelled || !rep.CancelSent {
			t.Fatalf("stream %v: outcome %+v, report %+v", stream, res.Outcome, rep)
		}
		if rep.CancelReceipt == "" {
			t.Fatalf("stream %v: no cancel receipt: %+v", stream, rep)
		}
		peer.waitLog(t, `"cancelTask","taskId":"`+rep.TaskID+`"`)
	}
}

// TestRealPeerSlowBlockingTaskIsPolled: a blocking send to the
// @a2a-js/sdk server returns the task at work, and GetTask follows it
// to its completion.
func TestRealPeerSlowBlockingTaskIsPolled(t *testing.T) {
	t.Parallel()
	peer := startPeer(t, "server.mjs")
	r := newRunner(t, Options{Remotes: []Remote{peerRemote(peer.base)}})
	h := run(t, r, spec("fixture", "work:600", false))
	if res := h.Result(); res.Outcome.Status != outcome.Completed || res.Output != "done after 600 ms" {
		t.Fatalf("%+v", res.Outcome)
	}
	peer.waitLog(t, `{"log":"rpc","method":"GetTask"}`)
}

// TestA2AGoServerCancel stops a non-streaming (and a streaming) child of
// a2a-go's own server mid-task: the server logs the CancelTask call and
// answers with the canceled task, kept as a claim.
func TestA2AGoServerCancel(t *testing.T) {
	t.Parallel()
	peer := startGoPeer(t)
	r := newRunner(t, Options{Remotes: []Remote{peerRemote(peer.base)}})
	for _, stream := range []bool{false, true} {
		h, err := r.StartRemote(context.Background(), spec("fixture", "slow", stream))
		if err != nil {
			t.Fatal(err)
		}
		waitBound(t, h.(*Handle))
		h.Cancel()
		waitDone(t, h)
		res, rep := h.Result(), h.(*Handle).Report()
		if res.Outcome.Status != outcome.Cancelled || !rep.CancelSent || rep.CancelReceipt != "TASK_STATE_CANCELED" {
			t.Fatalf("stream %v: outcome %+v, report %+v", stream, res.Outcome, rep)
		}
	}
	n := 0
	for _, l := range strings.Split(peer.logs.String(), "\n") {
		if strings.Contains(l, `msg="a2a call finished"`) && strings.Contains(l, "a2a.method=CancelTask ") {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("the server logged %d finished CancelTask calls, want 2; its log:\n%s", n, peer.logs.String())
	}
}

// TestA2AGoServerSlowBlockingTaskIsPolled: a2a-go's server answers the
// blocking send with the task at work; GetTask polls it until the test
// lets the agent finish, then the result is the completed task's.
func TestA2AGoServerSlowBlockingTaskIsPolled(t *testing.T) {
	t.Parallel()
	peer := startGoPeer(t)
	r := newRunner(t, Options{Remotes: []Remote{peerRemote(peer.base)}})
	h, err := r.StartRemote(context.Background(), spec("fixture", "gated", false))
	if err != nil {
		t.Fatal(err)
	}
	peer.waitLog(t, "a2a.method=GetTask a2a.duration_ns=")
	close(peer.gate)
	waitDone(t, h)
	if res, rep := h.Result(), h.(*Handle).Report(); res.Outcome.Status != outcome.Completed || res.Output != "gated" || rep.CancelSent {
		t.Fatalf("%+v %+v", res.Outcome, rep)
	}
}

// waitBound waits until h's remote task is bound (its ID known).
func waitBound(t *testing.T, h *Handle) {
	t.Helper()
	select {
	case <-h.Bound():
	case <-h.Done():
		t.Fatalf("the remote child settled before its task was bound: %+v", h.Result().Outcome)
	case <-time.After(20 * time.Second):
		t.Fatal("the remote task was never bound")
	}
}

// TestRealPeerBearer sends the bearer to the endpoint of a peer whose card
// requires its HTTP Bearer scheme.
func TestRealPeerBearer(t *testing.T) {
	t.Parallel()
	base := realPeer(t, "PEER_BEARER=fixture-token-0123456789")
	var asked []string
	remote := peerRemote(base)
	remote.Bearer = &Bearer{Scheme: "bearer", Credential: "fixture"}
	r := newRunner(t, Options{Remotes: []Remote{remote}, Resolve: staticResolver("fixture-token-0123456789", &asked)})
	h := run(t, r, spec("fixture", "echo:with bearer", false))
	if res := h.Result(); res.Outcome.Status != outcome.Completed || res.Output != "with bearer" {
		t.Fatalf("%+v", res.Outcome)
	}
	// Resolved for each call (the send and any GetTask), each time for the
	// endpoint and nothing else.
	if len(asked) == 0 {
		t.Fatal("the bearer was never resolved")
	}
	for _, a := range asked {
		if a != "a2a.bearer "+remote.Endpoint {
			t.Fatalf("the bearer was resolved for %q", asked)
		}
	}
	// Without the bearer the card is refused: its requirements need it.
	plain := newRunner(t, Options{Remotes: []Remote{peerRemote(base)}})
	res := run(t, plain, spec("fixture", "echo:x", false)).Result()
	if res.Outcome.Status != outcome.Failed || res.Outcome.Delivery != outcome.NotSent || !strings.Contains(res.Outcome.Reason, "(security)") {
		t.Fatalf("%+v", res.Outcome)
	}
}
