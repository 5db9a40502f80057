package clock

import (
	"slices"
	"sync"
	"time"
)

// Manual is a Clock whose time moves only when a test moves it, and whose
// timers fire only when a test fires them: the one test clock of the
// module, so no package keeps its own. Its zero value is not usable; call
// NewManual.
type Manual struct {
	mu     sync.Mutex
	cond   *sync.Cond
	now    time.Time
	timers []*manualTimer
	armed  chan struct{}
}

type manualTimer struct {
	c    *Manual
	d    time.Duration
	at   time.Time
	f    func()
	done bool // fired or stopped
}

// NewManual returns a Manual clock reading start.
func NewManual(start time.Time) *Manual {
	c := &Manual{now: start, armed: make(chan struct{}, 64)}
	c.cond = sync.NewCond(&c.mu)
	return c
}

// Now returns the clock's time.
func (c *Manual) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc arms a timer due d from now; it fires when the clock is
// advanced (or fired) to or past that time.
func (c *Manual) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	t := &manualTimer{c: c, d: d, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	c.cond.Broadcast()
	c.mu.Unlock()
	select {
	case c.armed <- struct{}{}:
	default:
	}
	return t
}

// Stop prevents the call if it has neither fired nor been stopped; it
// reports whether it did.
func (t *manualTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.done
	t.done = true
	t.c.cond.Broadcast()
	return was
}

// Set moves the clock to t without firing any timer.
func (c *Manual) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// Move moves the clock on by d without firing any timer: a host whose
// timers were paused.
func (c *Manual) Move(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Advance moves the clock on by d and fires the timers then due.
func (c *Manual) Advance(d time.Duration) {
	c.Move(d)
	c.Fire()
}

// Fire runs, in the calling goroutine, every timer due now, earliest first
// (in the order armed when due together), and returns how many ran. A
// timer armed by one of them waits for the next Fire.
func (c *Manual) Fire() int {
	c.mu.Lock()
	var due []*manualTimer
	for _, t := range c.timers {
		if !t.done && !t.at.After(c.now) {
			t.done = true
			due = append(due, t)
		}
	}
	c.timers = slices.DeleteFunc(c.timers, func(t *manualTimer) bool { return t.done })
	c.cond.Broadcast()
	c.mu.Unlock()
	slices.SortStableFunc(due, func(a, b *manualTimer) int { return a.at.Compare(b.at) })
	for _, t := range due {
		t.f()
	}
	return len(due)
}

// Armed receives once for each AfterFunc call (up to 64 not yet
// received), so a test can wait until the code under test has armed its
// timer before advancing.
func (c *Manual) Armed() <-chan struct{} { return c.armed }

// Pending counts the armed timers of duration d that have neither fired
// nor been stopped.
func (c *Manual) Pending(d time.Duration) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pendingLocked(d)
}

func (c *Manual) pendingLocked(d time.Duration) int {
	n := 0
	for _, t := range c.timers {
		if !t.done && t.d == d {
			n++
		}
	}
	return n
}

// WaitPending blocks until at least n timers of duration d are pending.
func (c *Manual) WaitPending(d time.Duration, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.pendingLocked(d) < n {
		c.cond.Wait()
	}
}
