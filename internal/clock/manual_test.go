package clock

import (
	"sync/atomic"
	"testing"
	"time"
)

var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Time moves only when the test moves it.
func TestManualTimeMovesOnlyByHand(t *testing.T) {
	t.Parallel()
	c := NewManual(start)
	if !c.Now().Equal(start) {
		t.Fatalf("now %v", c.Now())
	}
	c.Move(time.Second)
	c.Advance(time.Second)
	if got := c.Now(); !got.Equal(start.Add(2 * time.Second)) {
		t.Fatalf("now %v", got)
	}
	c.Set(start)
	if !c.Now().Equal(start) {
		t.Fatalf("after Set: %v", c.Now())
	}
}

// A timer fires once, when the clock reaches its time, never before; timers
// due together fire earliest first; Move alone fires nothing.
func TestManualTimersFireWhenDueInOrder(t *testing.T) {
	t.Parallel()
	c := NewManual(start)
	var order []int
	c.AfterFunc(3*time.Second, func() { order = append(order, 3) })
	c.AfterFunc(time.Second, func() { order = append(order, 1) })
	c.AfterFunc(2*time.Second, func() { order = append(order, 2) })
	c.AfterFunc(10*time.Second, func() { order = append(order, 10) })
	c.Advance(999 * time.Millisecond)
	if len(order) != 0 {
		t.Fatalf("fired early: %v", order)
	}
	c.Move(3 * time.Second)
	if len(order) != 0 {
		t.Fatalf("Move fired: %v", order)
	}
	if n := c.Fire(); n != 3 || len(order) != 3 || order[0] != 1 || order[1] != 2 || order[2] != 3 {
		t.Fatalf("fired %d: %v", n, order)
	}
	if n := c.Fire(); n != 0 {
		t.Fatalf("a timer fired twice")
	}
	c.Advance(time.Hour)
	if len(order) != 4 || order[3] != 10 {
		t.Fatalf("%v", order)
	}
}

// Stop prevents a call that has not happened and says so; it reports false
// once the timer fired or was stopped.
func TestManualStopReportsWhetherItPreventedTheCall(t *testing.T) {
	t.Parallel()
	c := NewManual(start)
	var ran atomic.Int32
	a := c.AfterFunc(time.Second, func() { ran.Add(1) })
	b := c.AfterFunc(time.Second, func() { ran.Add(10) })
	if !a.Stop() || a.Stop() {
		t.Fatal("Stop of a pending timer")
	}
	c.Advance(time.Second)
	if ran.Load() != 10 || b.Stop() {
		t.Fatalf("ran %d; Stop after firing must be false", ran.Load())
	}
}

// A test can wait for the code under test to arm its timer, by signal or
// by count of a duration, before it moves the clock.
func TestManualReportsArmedTimers(t *testing.T) {
	t.Parallel()
	c := NewManual(start)
	done := make(chan struct{})
	go func() {
		c.AfterFunc(5*time.Second, func() {})
		c.AfterFunc(5*time.Second, func() {})
		close(done)
	}()
	<-c.Armed()
	c.WaitPending(5*time.Second, 2)
	<-done
	if c.Pending(5*time.Second) != 2 || c.Pending(time.Second) != 0 {
		t.Fatalf("pending %d", c.Pending(5*time.Second))
	}
	c.Advance(5 * time.Second)
	if c.Pending(5*time.Second) != 0 {
		t.Fatal("fired timers still pending")
	}
}

// A timer armed by a firing callback waits for the next Fire, so a
// callback that re-arms itself cannot loop forever inside one Advance.
func TestManualTimerArmedWhileFiringWaits(t *testing.T) {
	t.Parallel()
	c := NewManual(start)
	n := 0
	var rearm func()
	rearm = func() { n++; c.AfterFunc(0, rearm) }
	c.AfterFunc(0, rearm)
	c.Fire()
	c.Fire()
	if n != 2 {
		t.Fatalf("fired %d times over two Fires", n)
	}
}

var _ Clock = (*Manual)(nil)
var _ Clock = System{}
