package ledger

import (
	"context"
	"errors"
	"testing"

	"github.com/pabloagent/pablo/ledger/outcome"
)

// leasedStore is a MemoryStore shared by a fleet: every task is leased,
// live or not as the test says.
type leasedStore struct {
	*MemoryStore
	live map[string]bool
}

func (s leasedStore) Lease(_ context.Context, taskID string) (Lease, error) {
	live, ok := s.live[taskID]
	if !ok {
		return Lease{}, NotFoundError("lease of task", taskID)
	}
	return Lease{TaskID: taskID, Owner: "host-a", Token: 7, Live: live}, nil
}

// TestRecoveryRefusesATaskWhoseLeaseIsLive: on a store a fleet shares, a
// task whose lease is live is in flight elsewhere, not abandoned:
// RecoverTask refuses it with ErrLeaseLive and Recover lists it apart with
// its lease, never reporting its admitted calls as retryable. Once the
// lease is not live, its work is reported.
func TestRecoveryRefusesATaskWhoseLeaseIsLive(t *testing.T) {
	t.Parallel()
	mem := NewMemoryStore()
	r, err := NewRoot(bg, Options{Store: mem, TaskID: "t", RootAgentID: "root"})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.AdmitToolCall(bg, "root", ToolCall{ID: "c1", Name: "fs.write"}); err != nil {
		t.Fatal(err)
	}
	if err := r.Flush(bg); err != nil {
		t.Fatal(err)
	}
	store := leasedStore{MemoryStore: mem, live: map[string]bool{"t": true}}
	_, err = RecoverTask(bg, store, "t")
	var le *LeaseError
	if !errors.Is(err, ErrLeaseLive) || !errors.As(err, &le) || le.Lease.Owner != "host-a" {
		t.Fatalf("RecoverTask of a live task = %v, want ErrLeaseLive naming its owner", err)
	}
	all, err := Recover(bg, store)
	if err != nil || len(all.Tasks) != 0 || len(all.Live) != 1 || all.Live[0].TaskID != "t" {
		t.Fatalf("Recover = %+v, %v; want t listed live and no task reported", all, err)
	}
	store.live["t"] = false
	rep, err := RecoverTask(bg, store, "t")
	if err != nil || len(rep.Retryable) != 1 || rep.Retryable[0].Class != outcome.ClassRetryable {
		t.Fatalf("RecoverTask once the lease ended = %+v, %v; want its admitted call retryable", rep, err)
	}
}
