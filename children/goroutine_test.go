package children

import (
	"context"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
)

// launchGoroutines counts the goroutines running a child of a Tree.
func launchGoroutines() int {
	var b strings.Builder
	pprof.Lookup("goroutine").WriteTo(&b, 2)
	return strings.Count(b.String(), "children.(*Tree).launch(")
}

// TestNoChildGoroutineOutlivesClose is not parallel: it counts the
// goroutines of every tree in the process.
func TestNoChildGoroutineOutlivesClose(t *testing.T) {
	r := newFakeRunner()
	r.holdOnCancel = true
	tr, err := New(Options{ParentID: "root", Parent: parentScope(), Runner: r, Clock: newFakeClock()})
	if err != nil {
		t.Fatal(err)
	}
	for range 6 {
		spawn(t, tr, "c")
	}
	a, b := r.next(t), r.next(t)
	if n := launchGoroutines(); n != 2 {
		t.Fatalf("%d child goroutines for 2 active children", n)
	}
	closed := make(chan error, 1)
	go func() { closed <- tr.Close(context.Background()) }()
	within(t, a.cancelled, "Close never cancelled an active child")
	within(t, b.cancelled, "Close never cancelled an active child")
	a.settle(cancelledResult())
	b.settle(cancelledResult())
	if err := within(t, closed, "Close never returned"); err != nil {
		t.Fatal(err)
	}
	// Joined is each goroutine's last act before it returns: give the two
	// the scheduler (never a sleep) and count again.
	for i := 0; i < 1000 && launchGoroutines() > 0; i++ {
		runtime.Gosched()
	}
	if n := launchGoroutines(); n != 0 {
		t.Fatalf("%d child goroutines outlived Close", n)
	}
}
