package ledger

import (
	"errors"
	"path/filepath"
	"testing"
)

// TestBoltLeasesTrivially: the bolt store is a LeaseStore whose tasks are
// never leased (its file lock already makes one process the owner), so
// recovery never refuses one of its tasks as live.
func TestBoltLeasesTrivially(t *testing.T) {
	t.Parallel()
	db, err := OpenBolt(filepath.Join(t.TempDir(), "l.db"), BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var store Store = db
	ls, ok := store.(LeaseStore)
	if !ok {
		t.Fatal("the bolt store is not a LeaseStore")
	}
	id := scenario(t, db)
	if _, err := ls.Lease(bg, id); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Lease = %v, want ErrNotFound", err)
	}
	if _, err := RecoverTask(bg, db, id); err != nil {
		t.Fatalf("RecoverTask of a bolt task: %v", err)
	}
}

// TestLeaseErrorsMatchTheirKind: a lost lease and a live one are told
// apart with errors.Is, and each message says what to do.
func TestLeaseErrorsMatchTheirKind(t *testing.T) {
	t.Parallel()
	lost := &LeaseError{Lost: true, Lease: Lease{TaskID: "t", Token: 3}}
	live := &LeaseError{Lease: Lease{TaskID: "t", Owner: "host-a"}}
	if !errors.Is(lost, ErrLeaseLost) || errors.Is(lost, ErrLeaseLive) {
		t.Fatalf("lost: %v", lost)
	}
	if !errors.Is(live, ErrLeaseLive) || errors.Is(live, ErrLeaseLost) {
		t.Fatalf("live: %v", live)
	}
	se := &StoreError{Op: "append", Err: lost}
	if !errors.Is(se, ErrStore) || !errors.Is(se, ErrLeaseLost) {
		t.Fatalf("a refused append: %v", se)
	}
}
