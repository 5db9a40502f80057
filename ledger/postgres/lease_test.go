package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/ledger/outcome"
	"github.com/pabloagent/pablo/ledger/postgres"
)

const ttl = 30 * time.Second

// hosts opens two stores on one database, as two hosts would, each with
// its own clock.
func hosts(t *testing.T) (a, b *postgres.Store, ca, cb *testClock) {
	t.Helper()
	opts := testDB(t)
	ca, cb = newTestClock(), newTestClock()
	oa, ob := opts, opts
	oa.Clock, oa.LeaseTTL, oa.Owner = ca, ttl, "host-a"
	ob.Clock, ob.LeaseTTL, ob.Owner = cb, ttl, "host-b"
	return openStore(t, oa), openStore(t, ob), ca, cb
}

func TestRecoverRefusesALiveLeaseAndListsTheWorkOnceItExpired(t *testing.T) {
	t.Parallel()
	a, b, _, cb := hosts(t)
	if err := a.Append(bg, []ledger.Record{taskRecord("t"), event("t", 2)}); err != nil {
		t.Fatal(err)
	}
	l, err := b.Lease(bg, "t")
	if err != nil || !l.Live || l.Owner != "host-a" || l.Token == 0 {
		t.Fatalf("Lease = %+v, %v; want live, owned by host-a", l, err)
	}
	_, err = ledger.RecoverTask(bg, b, "t")
	var le *ledger.LeaseError
	if !errors.Is(err, ledger.ErrLeaseLive) || !errors.As(err, &le) || le.Lease.Owner != "host-a" {
		t.Fatalf("RecoverTask of a live task = %v, want ErrLeaseLive", err)
	}
	// Over the whole store, a live task is listed apart, with its lease,
	// and a task abandoned beside it is reported: a fleet always has tasks
	// in flight.
	r, err := ledger.NewRoot(bg, ledger.Options{Store: a, TaskID: "done", RootAgentID: "root"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Finish(bg, "root", ledger.Finish{Outcome: ledger.Outcome{Status: outcome.Completed}}); err != nil {
		t.Fatal(err)
	}
	all, err := ledger.Recover(bg, b)
	if err != nil || len(all.Tasks) != 1 || all.Tasks[0].TaskID != "done" || len(all.Live) != 1 || all.Live[0].TaskID != "t" || all.Live[0].Owner != "host-a" {
		t.Fatalf("Recover with one live task = %+v, %v; want done reported and t listed live", all, err)
	}
	// One tick before expiry it is live; at expiry it is not.
	cb.Move(ttl - time.Microsecond)
	if _, err := ledger.RecoverTask(bg, b, "t"); !errors.Is(err, ledger.ErrLeaseLive) {
		t.Fatalf("RecoverTask a microsecond before expiry = %v, want ErrLeaseLive", err)
	}
	cb.Move(time.Microsecond)
	rep, err := ledger.RecoverTask(bg, b, "t")
	if err != nil || rep.Events != 1 {
		t.Fatalf("RecoverTask after expiry = %+v, %v", rep, err)
	}
}

func TestALeaseRenewedInTheBackgroundStaysLive(t *testing.T) {
	t.Parallel()
	opts := testDB(t)
	c := newTestClock()
	opts.Clock, opts.LeaseTTL = c, ttl
	a := openStore(t, opts)
	ob := opts
	ob.Owner = "reader"
	b := openStore(t, ob)
	if err := a.Append(bg, []ledger.Record{taskRecord("t")}); err != nil {
		t.Fatal(err)
	}
	for range 4 { // well past the first expiry, renewed each TTL/3
		c.Move(ttl / 3)
		if n := c.Fire(); n != 2 { // one renewer a store
			t.Fatalf("%d renewals fired, want 2", n)
		}
	}
	if l, err := b.Lease(bg, "t"); err != nil || !l.Live {
		t.Fatalf("a renewed lease: %+v, %v; want live", l, err)
	}
	if err := a.Append(bg, []ledger.Record{event("t", 2)}); err != nil {
		t.Fatalf("the owner of a renewed lease cannot write: %v", err)
	}
	// The renewer stops (its host paused): the lease expires, and so do
	// the owner's writes, by its own clock.
	c.Move(ttl)
	if err := a.Append(bg, []ledger.Record{event("t", 3)}); !errors.Is(err, ledger.ErrLeaseLost) || !errors.Is(err, ledger.ErrStore) {
		t.Fatalf("a write after expiry = %v, want ErrLeaseLost", err)
	}
	if recs, _ := b.Records(bg, "t"); len(recs) != 2 {
		t.Fatalf("%d records kept, want 2: the refused write was kept", len(recs))
	}
}

func TestAStolenLeaseFencesItsOldOwner(t *testing.T) {
	t.Parallel()
	a, b, _, cb := hosts(t)
	if err := a.Append(bg, []ledger.Record{taskRecord("t"), event("t", 2)}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Claim(bg, "t"); !errors.Is(err, ledger.ErrLeaseLive) {
		t.Fatalf("Claim of a live lease = %v, want ErrLeaseLive", err)
	}
	old, _ := b.Lease(bg, "t")
	cb.Move(ttl)
	l, err := b.Claim(bg, "t")
	if err != nil || l.Token <= old.Token || l.Owner != "host-b" {
		t.Fatalf("Claim after expiry = %+v, %v; want a newer token than %d", l, err, old.Token)
	}
	// Host a wakes up believing it still owns the task (its clock never
	// moved): the database refuses its token.
	err = a.Append(bg, []ledger.Record{event("t", 3)})
	var le *ledger.LeaseError
	if !errors.Is(err, ledger.ErrLeaseLost) || !errors.As(err, &le) || le.Lease.Token != old.Token {
		t.Fatalf("the old owner's write = %v, want ErrLeaseLost with token %d", err, old.Token)
	}
	// So is every later one, and a result it carries is not kept.
	data := []byte(`{"late":true}`)
	err = a.Append(bg, []ledger.Record{{TaskID: "t", N: 4, Kind: ledger.RecordResult, Time: at, Result: &ledger.ResultRecord{ID: ledger.RefOf(data), Data: data}}})
	if !errors.Is(err, ledger.ErrLeaseLost) {
		t.Fatalf("a later write = %v, want ErrLeaseLost", err)
	}
	if _, err := b.Result(bg, ledger.RefOf(data)); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("the fenced result was kept: %v", err)
	}
	// The new owner writes on.
	if err := b.Append(bg, []ledger.Record{event("t", 3)}); err != nil {
		t.Fatal(err)
	}
	recs, err := b.Records(bg, "t")
	if err != nil || len(recs) != 3 {
		t.Fatalf("%d records, %v; want 3", len(recs), err)
	}
	// Another store cannot take a task it never leased by writing to it.
	if err := a.Append(bg, []ledger.Record{event("t", 4)}); !errors.Is(err, ledger.ErrLeaseLost) {
		t.Fatalf("write to a task owned elsewhere = %v, want ErrLeaseLost", err)
	}
	if err := a.Append(bg, []ledger.Record{taskRecord("t")}); !errors.Is(err, ledger.ErrLeaseLost) {
		t.Fatalf("a second task record for an owned task = %v, want ErrLeaseLost", err)
	}
}

func TestTheRootsTerminalRecordReleasesTheLease(t *testing.T) {
	t.Parallel()
	a, b, _, _ := hosts(t)
	r, err := ledger.NewRoot(bg, ledger.Options{Store: a, TaskID: "done", RootAgentID: "root"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Finish(bg, "root", ledger.Finish{Outcome: ledger.Outcome{Status: outcome.Completed}}); err != nil {
		t.Fatal(err)
	}
	l, err := b.Lease(bg, "done")
	if err != nil || l.Live || !l.Released {
		t.Fatalf("Lease after the root finished = %+v, %v; want released", l, err)
	}
	rep, err := ledger.RecoverTask(bg, b, "done")
	if err != nil || rep.Outcome == nil || rep.Outcome.Status != outcome.Completed {
		t.Fatalf("RecoverTask = %+v, %v", rep, err)
	}
}

func TestCloseReleasesEveryLeaseAndJoinsTheRenewer(t *testing.T) {
	t.Parallel()
	a, b, ca, _ := hosts(t)
	if err := a.Append(bg, []ledger.Record{taskRecord("t")}); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	ca.Move(ttl)
	if n := ca.Fire(); n != 0 {
		t.Fatalf("%d renewals fired after Close", n)
	}
	if l, err := b.Lease(bg, "t"); err != nil || l.Live {
		t.Fatalf("Lease after its owner closed = %+v, %v; want released", l, err)
	}
}

// TestAnAppendTouchingAFencedTaskKeepsNothing: an Append is all or
// nothing even across tasks: one that carries records of a task this store
// lost keeps none of its records, while another task's Append in the same
// group commits.
func TestAnAppendTouchingAFencedTaskKeepsNothing(t *testing.T) {
	t.Parallel()
	a, b, _, cb := hosts(t)
	if err := a.Append(bg, []ledger.Record{taskRecord("lost"), taskRecord("kept")}); err != nil {
		t.Fatal(err)
	}
	cb.Move(ttl)
	if _, err := b.Claim(bg, "lost"); err != nil {
		t.Fatal(err)
	}
	err := a.Append(bg, []ledger.Record{event("kept", 2), event("lost", 2)})
	if !errors.Is(err, ledger.ErrLeaseLost) {
		t.Fatalf("an Append touching a lost task = %v, want ErrLeaseLost", err)
	}
	if recs, _ := b.Records(bg, "kept"); len(recs) != 1 {
		t.Fatalf("the refused Append kept %d records of its other task", len(recs)-1)
	}
	if err := a.Append(bg, []ledger.Record{event("kept", 2)}); err != nil {
		t.Fatalf("the task still owned: %v", err)
	}
}

// TestAStaleTokenOfTheSameOwnerIsFenced: the fencing token, not the owner
// name, says who holds a task. Two stores sharing one owner ID (a host
// restarted with the same name while its old process still runs): once
// the second re-acquires the expired lease, the first's next append fails
// ErrLeaseLost, carrying its stale token, and writes no row.
func TestAStaleTokenOfTheSameOwnerIsFenced(t *testing.T) {
	t.Parallel()
	opts := testDB(t)
	ca, cb := newTestClock(), newTestClock()
	oa, ob := opts, opts
	oa.Clock, oa.LeaseTTL, oa.Owner = ca, ttl, "host-a"
	ob.Clock, ob.LeaseTTL, ob.Owner = cb, ttl, "host-a"
	a, b := openStore(t, oa), openStore(t, ob)
	if err := a.Append(bg, []ledger.Record{taskRecord("t"), event("t", 2)}); err != nil {
		t.Fatal(err)
	}
	old, err := b.Lease(bg, "t")
	if err != nil || !old.Live {
		t.Fatalf("Lease = %+v, %v", old, err)
	}
	cb.Move(ttl)
	l, err := b.Claim(bg, "t")
	if err != nil || l.Token <= old.Token || l.Owner != "host-a" {
		t.Fatalf("Claim after expiry = %+v, %v; want a newer token than %d under the same owner", l, err, old.Token)
	}
	err = a.Append(bg, []ledger.Record{event("t", 3)})
	var le *ledger.LeaseError
	if !errors.Is(err, ledger.ErrLeaseLost) || !errors.As(err, &le) || le.Lease.Token != old.Token {
		t.Fatalf("the stale token's append = %v, want ErrLeaseLost with token %d", err, old.Token)
	}
	if recs, err := b.Records(bg, "t"); err != nil || len(recs) != 2 {
		t.Fatalf("%d records, %v; want the 2 written before the lease changed hands", len(recs), err)
	}
	if err := b.Append(bg, []ledger.Record{event("t", 3)}); err != nil {
		t.Fatalf("the new token's append: %v", err)
	}
}
