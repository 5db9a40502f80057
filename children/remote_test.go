package children

import (
	"context"
	"errors"
	"testing"

	"github.com/pabloagent/pablo/ledger"
)

func TestSpawnRemoteSharesTheLocalCapacity(t *testing.T) {
	t.Parallel()
	tr, r, _ := newTree(t, nil)
	r.remotes = []string{"research"}
	text := "summarize"
	req := RemoteRequest{Remote: "research", Parts: []Part{{Text: &text}}, AcceptedOutputModes: []string{"text/plain"}, MaxDurationMillis: ledger.Max(10_000_000)}
	s, err := tr.SpawnRemote(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if s.Kind != KindRemote || s.State != StateStarting {
		t.Fatalf("%+v", s)
	}
	r.await(t, s.AgentID)
	r.mu.Lock()
	got := r.remote[0]
	r.mu.Unlock()
	if n, _ := got.MaxDurationMillis.Value(); n != 600_000 {
		t.Fatalf("a remote child's duration is cut to the parent's: %d", n)
	}
	spawn(t, tr, "local")
	if q, err := tr.SpawnRemote(context.Background(), req); err != nil || q.State != StateQueued {
		t.Fatalf("the third child queues, remote or not: %v %+v", err, q)
	}
	bad := req
	bad.Remote = "elsewhere"
	_, err = tr.SpawnRemote(context.Background(), bad)
	wantCode(t, err, CodeOutOfRange)

	plain, _, _ := newTree(t, func(o *Options) { o.Remote = nil })
	_, err = plain.SpawnRemote(context.Background(), req)
	if !errors.Is(err, ErrRemoteUnavailable) {
		t.Fatalf("%v", err)
	}
	if plain.Remotes() != nil {
		t.Fatal("no remotes without a remote runner")
	}
}

func TestSpawnNarrowsAndCapsTheChildsScope(t *testing.T) {
	t.Parallel()
	tr, r, _ := newTree(t, nil)
	s, err := tr.Spawn(context.Background(), Request{Input: "x", Capabilities: Capabilities{Tools: []string{"fs.read"}},
		Ceilings: Ceilings{MaxContextBytes: ledger.Max(64 << 20)}})
	if err != nil {
		t.Fatal(err)
	}
	spec := r.await(t, s.AgentID).spec
	if spec.AgentID != s.AgentID || spec.ParentID != "root-agent" {
		t.Fatalf("%+v", spec)
	}
	if n, _ := spec.Ceilings.MaxContextBytes.Value(); n != MaxChildContextBytes {
		t.Fatalf("a child's working context is at most 8 MiB, got %d", n)
	}
	if len(spec.Capabilities.Tools) != 1 || spec.Capabilities.Skills == nil || len(spec.Capabilities.ModelRoute) != 3 {
		t.Fatalf("%+v", spec.Capabilities)
	}
	_, err = tr.Spawn(context.Background(), Request{Input: "x", Capabilities: Capabilities{MCPServers: []string{"billing"}}})
	if !errors.Is(err, ErrWiden) {
		t.Fatalf("%v", err)
	}
	if l := tr.Load(); l.Total != 1 {
		t.Fatalf("a refused spawn reserves nothing: %+v", l)
	}
}
