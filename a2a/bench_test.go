package a2a

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"github.com/pabloagent/pablo/children"
	"github.com/pabloagent/pablo/ledger/outcome"
)

// noLocal is a local runner the benchmark never reaches.
type noLocal struct{}

func (noLocal) Start(context.Context, children.Spec) (children.Handle, error) {
	panic("no local child in this benchmark")
}

// BenchmarkSpawnRemoteVsA2AGo is the figure of issue 17: a governed
// spawn_remote round trip (the supervisor's admission and capacity, the
// card fetched and admitted, the message sent, the task followed and its
// artifact validated, the wait) against a bare a2a-go client fetching the
// card and sending the same message as one blocking send to the same
// @a2a-js/sdk fixture peer. The two alternate on every iteration, their
// order flipping, so both see the same machine; it reports each median
// and their ratio.
//
// send=default is the spawn as a model makes it (stream unset): the card
// offers a stream, so the child follows SendStreamingMessage, one round
// trip that names the task with its first event. send=blocking asks for
// stream false: SendMessage returns the task at once (returnImmediately,
// so a stop can cancel it) and the child fetches it with GetTask, two
// round trips.
func BenchmarkSpawnRemoteVsA2AGo(b *testing.B) {
	no := false
	for _, c := range []struct {
		name   string
		stream *bool
	}{{"default", nil}, {"blocking", &no}} {
		b.Run("send="+c.name, func(b *testing.B) { benchSpawnRemoteVsA2AGo(b, c.stream) })
	}
}

func benchSpawnRemoteVsA2AGo(b *testing.B, stream *bool) {
	base := realPeer(b)
	r := newRunner(b, Options{Remotes: []Remote{peerRemote(base)}})
	// A root admits 16 children in all: a fresh tree (a new root) every
	// 16 spawns, made outside the timed region.
	var tree *children.Tree
	spawned := 0
	newTree := func() {
		if tree != nil {
			tree.Close(context.Background())
		}
		var err error
		if tree, err = children.New(children.Options{ParentID: "root", Runner: noLocal{}, Remote: r}); err != nil {
			b.Fatal(err)
		}
		spawned = 0
	}
	newTree()
	defer func() { tree.Close(context.Background()) }()
	hc := &http.Client{Timeout: 30 * time.Second}
	ctx := context.Background()
	text := "echo:benchmark"
	req := children.RemoteRequest{Remote: "fixture", Parts: []children.Part{{Text: &text}}, AcceptedOutputModes: []string{"text/plain"}, Stream: stream}
	var ours, theirs []time.Duration
	governed := func() {
		if spawned == children.MaxTotal {
			newTree()
		}
		spawned++
		t0 := time.Now()
		snap, err := tree.SpawnRemote(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		res, err := tree.Wait(ctx, children.WaitRequest{AgentIDs: []string{snap.AgentID}, Mode: children.WaitAll, Timeout: time.Minute})
		if err != nil || len(res.Settled) != 1 || res.Settled[0].Outcome.Status != outcome.Completed {
			b.Fatalf("%+v %v", res, err)
		}
		ours = append(ours, time.Since(t0))
	}
	bare := func() {
		t0 := time.Now()
		card, err := agentcard.NewResolver(hc).Resolve(ctx, base)
		if err != nil {
			b.Fatal(err)
		}
		c, err := a2aclient.NewFromCard(ctx, card, a2aclient.WithJSONRPCTransport(hc))
		if err != nil {
			b.Fatal(err)
		}
		res, err := c.SendMessage(ctx, &sdk.SendMessageRequest{Message: sdk.NewMessage(sdk.MessageRoleUser, sdk.NewTextPart(text)),
			Config: &sdk.SendMessageConfig{AcceptedOutputModes: []string{"text/plain"}}})
		if err != nil {
			b.Fatal(err)
		}
		if task, ok := res.(*sdk.Task); !ok || task.Status.State != sdk.TaskStateCompleted || len(task.Artifacts) != 1 {
			b.Fatalf("%+v", res)
		}
		theirs = append(theirs, time.Since(t0))
	}
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			governed()
			bare()
		} else {
			bare()
			governed()
		}
	}
	med := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2].Nanoseconds())
	}
	om, tm := med(ours), med(theirs)
	b.ReportMetric(om, "pablo-median-ns")
	b.ReportMetric(tm, "a2a-go-median-ns")
	b.ReportMetric(om/tm, "pablo/a2a-go")
}
