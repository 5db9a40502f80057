package children

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestConcurrentSpawnersNeverOvershootACeiling runs 64 spawners at once
// against one tree while its children settle, and checks the ceilings at
// the end of every critical section: never more than 2 active, 14 queued,
// 16 admitted or 4 MiB queued; exactly 16 admitted in the end, every
// refusal child_admission, every reservation released.
func TestConcurrentSpawnersNeverOvershootACeiling(t *testing.T) {
	t.Parallel()
	tr, r, _ := newTree(t, nil)
	var violations []string
	tr.hold = func(time.Duration) {
		// Called with the lock held, at the end of each critical section.
		if tr.active > MaxActive || len(tr.queue) > MaxQueued || tr.total > MaxTotal || tr.queued > MaxQueuedInputBytes || tr.active < 0 || tr.queued < 0 {
			violations = append(violations, fmt.Sprintf("active %d queued %d total %d bytes %d", tr.active, len(tr.queue), tr.total, tr.queued))
		}
	}
	const spawners = 64
	var wg sync.WaitGroup
	admitted := make(chan string, spawners)
	refused := make(chan error, spawners)
	start := make(chan struct{})
	for i := range spawners {
		wg.Go(func() {
			<-start
			s, err := tr.Spawn(context.Background(), Request{Input: fmt.Sprint("spawner ", i)})
			if err != nil {
				refused <- err
				return
			}
			admitted <- s.AgentID
		})
	}
	// Settle children as they start, concurrently with the spawners.
	settled := make(chan struct{})
	go func() {
		defer close(settled)
		for range MaxTotal {
			(<-r.started).settle(completed("ok"))
		}
	}()
	close(start)
	wg.Wait()
	close(admitted)
	close(refused)
	<-settled
	var ids []string
	for id := range admitted {
		ids = append(ids, id)
	}
	if len(ids) != MaxTotal {
		t.Fatalf("%d admitted, want exactly %d", len(ids), MaxTotal)
	}
	for err := range refused {
		if !errors.Is(err, ErrAdmission) {
			t.Fatalf("a refusal that is not child_admission: %v", err)
		}
	}
	for _, id := range ids {
		settledSnapshot(t, tr, id)
	}
	tr.lock()
	v := slices.Clone(violations)
	tr.unlock()
	if len(v) > 0 {
		t.Fatalf("ceilings overshot: %v", v)
	}
	if l := tr.Load(); l.Active != 0 || l.Queued != 0 || l.QueuedInputBytes != 0 || l.Total != MaxTotal {
		t.Fatalf("load %+v", l)
	}
	if r.startCount() != MaxTotal {
		t.Fatalf("%d starts", r.startCount())
	}
}

// TestStopsSettlementsAndCloseRacingReleaseEachReservationOnce stops,
// settles and closes children concurrently and checks that no counter
// ever goes negative or overshoots, and that everything is released once.
func TestStopsSettlementsAndCloseRacingReleaseEachReservationOnce(t *testing.T) {
	t.Parallel()
	tr, r, _ := newTree(t, nil)
	var violations []string
	tr.hold = func(time.Duration) {
		if tr.active < 0 || tr.active > MaxActive || tr.queued < 0 || len(tr.queue) > MaxQueued {
			violations = append(violations, fmt.Sprintf("active %d queued %d bytes %d", tr.active, len(tr.queue), tr.queued))
		}
	}
	var ids []string
	for i := range MaxTotal {
		ids = append(ids, spawn(t, tr, fmt.Sprint("child ", i)).AgentID)
	}
	var wg sync.WaitGroup
	for i, id := range ids {
		if i%2 == 0 {
			wg.Go(func() { tr.Stop(context.Background(), id) })
		}
	}
	wg.Go(func() {
		for h := range r.started {
			h.settle(completed("ok"))
		}
	})
	wg.Go(func() {
		res, err := tr.Wait(context.Background(), WaitRequest{AgentIDs: ids[:4], Mode: WaitAny, Timeout: MaxWaitTimeout})
		if err != nil || len(res.Settled) == 0 {
			t.Errorf("%v %+v", err, res)
		}
	})
	for _, id := range ids[:4] {
		wg.Go(func() { tr.Stop(context.Background(), id) })
	}
	if err := tr.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	close(r.started) // no start can follow a joined Close
	wg.Wait()
	for _, id := range ids {
		if s := settledSnapshot(t, tr, id); s.State != StateSettled {
			t.Fatal(s.State)
		}
	}
	tr.lock()
	v := slices.Clone(violations)
	tr.unlock()
	if len(v) > 0 {
		t.Fatal(v)
	}
	if l := tr.Load(); l.Active != 0 || l.Queued != 0 || l.QueuedInputBytes != 0 {
		t.Fatalf("%+v", l)
	}
}
