package pablo_test

import (
	"context"
	"testing"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger"
)

// countingStore counts the tasks whose records are read; embedding the
// memory store keeps its index (ledger.IndexedStore).
type countingStore struct {
	*ledger.MemoryStore
	reads map[string]int
}

func (c *countingStore) Records(ctx context.Context, id string) ([]ledger.Record, error) {
	c.reads[id]++
	return c.MemoryStore.Records(ctx, id)
}

// TestSessionListingReadsTheIndexNotTheStore: listing sessions reads the
// store's index of sessions, no task's records; loading one reads the
// records of that session's tasks and of no other task.
func TestSessionListingReadsTheIndexNotTheStore(t *testing.T) {
	ctx := context.Background()
	store := &countingStore{MemoryStore: ledger.NewMemoryStore(), reads: map[string]int{}}
	s, ws := sessionHandler(t, &echoModel{}, store, nil)
	prompt := func(x *pablo.Session, text string) string {
		t.Helper()
		task, err := x.Prompt(ctx, text, nil)
		if err != nil {
			t.Fatal(err)
		}
		return *task.Wait().RunID
	}
	x, err := s.New(ctx, pablo.SessionRequest{Cwd: ws})
	if err != nil {
		t.Fatal(err)
	}
	mine := []string{prompt(x, "one"), prompt(x, "two")}
	y, err := s.New(ctx, pablo.SessionRequest{Cwd: ws})
	if err != nil {
		t.Fatal(err)
	}
	other := prompt(y, "elsewhere")
	for range 10 {
		r, err := ledger.NewRoot(ctx, ledger.Options{Store: store})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Finish(ctx, r.RootAgentID(), ledger.Finish{Outcome: ledger.Outcome{Status: event.StatusCompleted}}); err != nil {
			t.Fatal(err)
		}
	}
	clear(store.reads)
	n := 0
	for info, err := range s.List(ctx, "") {
		if err != nil {
			t.Fatal(err)
		}
		n++
		if info.ID == x.ID() && (len(info.Tasks) != 2 || info.Tasks[0] != mine[0] || info.Tasks[1] != mine[1] || info.Title != "one") {
			t.Errorf("session %+v, want tasks %v titled \"one\"", info, mine)
		}
	}
	if n != 2 {
		t.Fatalf("listed %d sessions, want 2", n)
	}
	if len(store.reads) != 0 {
		t.Fatalf("listing sessions read the records of %d tasks: %v", len(store.reads), store.reads)
	}
	s2, _ := sessionHandler(t, &echoModel{}, store, func(o *pablo.SessionOptions) { o.Workspace = ws })
	if _, turns, err := s2.Load(ctx, x.ID(), pablo.SessionRequest{Cwd: ws}); err != nil || len(turns) != 2 {
		t.Fatalf("Load: %d turns, %v", len(turns), err)
	}
	for id := range store.reads {
		if id != mine[0] && id != mine[1] {
			t.Errorf("loading a session read task %s (the other session's is %s)", id, other)
		}
	}
}
