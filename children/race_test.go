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
