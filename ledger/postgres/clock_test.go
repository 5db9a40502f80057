package postgres_test

import (
	"sync"
	"time"

	"github.com/pabloagent/pablo/internal/clock"
)

// testClock is a settable clock: time moves only when a test says so, and
// the renewer's timers fire only then.
type testClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*testTimer
}

type testTimer struct {
	c       *testClock
	at      time.Time
	f       func()
	stopped bool
}

func newTestClock() *testClock { return &testClock{now: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)} }

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &testTimer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

func (t *testTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.stopped
	t.stopped = true
	return was
}

// Advance moves the time on without firing any timer: a host whose
// renewer was paused.
func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Fire runs, in this goroutine, every timer due now; it returns how many
// ran.
func (c *testClock) Fire() int {
	c.mu.Lock()
	var due []*testTimer
	for _, t := range c.timers {
		if !t.stopped && !t.at.After(c.now) {
			t.stopped = true
			due = append(due, t)
		}
	}
	c.mu.Unlock()
	for _, t := range due {
		t.f()
	}
	return len(due)
}
