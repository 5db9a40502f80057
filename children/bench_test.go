package children

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/pabloagent/pablo/internal/ids"
)

// BenchmarkSixteenChildrenThroughTheQueue admits 16 children (2 start, 14
// queue), settles them as they start, and reports the p50 and p99 of the
// supervisor's lock hold times across every critical section.
func BenchmarkSixteenChildrenThroughTheQueue(b *testing.B) {
	var holds []time.Duration
	for b.Loop() {
		r := newFakeRunner()
		tr, err := New(Options{ParentID: "root", Parent: parentScope(), Runner: r, IDs: ids.NewSequential(0)})
		if err != nil {
			b.Fatal(err)
		}
		tr.hold = func(d time.Duration) { holds = append(holds, d) }
		for range MaxTotal {
			if _, err := tr.Spawn(context.Background(), Request{Input: "read the notes"}); err != nil {
				b.Fatal(err)
			}
		}
		for range MaxTotal {
			(<-r.started).settle(completed("ok"))
		}
		if err := tr.Close(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	slices.Sort(holds)
	b.ReportMetric(float64(holds[len(holds)/2].Nanoseconds()), "lock-hold-p50-ns")
	b.ReportMetric(float64(holds[len(holds)*99/100].Nanoseconds()), "lock-hold-p99-ns")
}

// BenchmarkSpawnToRunnerStart is the supervisor's part of "spawn → the
// child's first model request": from Spawn's call to the Runner's Start
// of a child that has a free slot.
func BenchmarkSpawnToRunnerStart(b *testing.B) {
	var lat []time.Duration
	r := newFakeRunner()
	tr, err := New(Options{ParentID: "root", Parent: parentScope(), Runner: r, Capacity: Capacity{}, IDs: ids.NewSequential(0)})
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for b.Loop() {
		if n == MaxTotal {
			b.StopTimer()
			tr.Close(context.Background())
			r = newFakeRunner()
			tr, _ = New(Options{ParentID: "root", Parent: parentScope(), Runner: r, IDs: ids.NewSequential(0)})
			n = 0
			b.StartTimer()
		}
		t0 := time.Now()
		if _, err := tr.Spawn(context.Background(), Request{Input: "read the notes"}); err != nil {
			b.Fatal(err)
		}
		h := <-r.started
		lat = append(lat, time.Since(t0))
		h.settle(completed("ok"))
		settledSnapshotB(tr, h.id)
		n++
	}
	tr.Close(context.Background())
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
}

func settledSnapshotB(tr *Tree, id string) {
	tr.lock()
	c := tr.children[id]
	tr.unlock()
	<-c.settled
}
