package ledger

import (
	"sync/atomic"
	"time"
)

// Clock times the records of the roots that share it (Options.Clock).
//
// A record's time is the root's start on the wall clock plus the monotonic
// time since, in microseconds, so times never go backwards within a task
// whatever happens to the wall clock. Reading the operating system's
// monotonic clock costs 40–60 ns on a virtual machine, and a streamed answer
// appends an event for every delta. So where the CPU has a timestamp
// counter (amd64), a root reads the system clock at most every millisecond
// and in between extrapolates from the counter, at a rate calibrated
// against the system clock. Every system read checks the extrapolation that
// ran up to it: a root whose check misses by more than a microsecond twice
// in a row stops extrapolating and reads the system clock for every record.
//
// Roots that share a Clock share its calibration, so a short task
// extrapolates from its first event; a root without one calibrates its own
// after its first few hundred microseconds. A Clock is safe for concurrent
// use.
type Clock struct {
	rate atomic.Pointer[tickRate]
}

// NewClock returns a Clock with no calibration yet: the first root to run
// long enough calibrates it for the others.
func NewClock() *Clock { return &Clock{} }

// tickRate converts counter ticks to nanoseconds.
type tickRate struct {
	mult     uint64 // nanoseconds per tick, 32.32 fixed point
	baseline int64  // nanoseconds of system clock it was measured over
}

// The clock's bounds.
const (
	// spanNanos is how long a root extrapolates before it reads the system
	// clock again.
	spanNanos = int64(time.Millisecond)
	// A rate is measured over at least minBaseline, and over long enough
	// that the uncertainty of its two samples (half their brackets) moves
	// an extrapolation over spanNanos by at most spanNanos/precision
	// (250 ns).
	minBaseline = 200 * int64(time.Microsecond)
	precision   = 4000
	// maxMiss is how far an extrapolation may land from the system clock
	// before it counts as a miss; maxMisses misses in a row end
	// extrapolation.
	maxMiss   = 2 * int64(time.Microsecond)
	maxMisses = 2
	// A system read's sample counts when its counter readings are at most
	// four times as far apart as the quickest read's so far (a read takes
	// about 150 ticks; the quickest starts at maxBracket and never drops
	// below minBracket): more means the goroutine was interrupted between
	// them.
	maxBracket = 1000
	minBracket = 32
	// maxRun is the most records extrapolated between two system reads, so
	// a counter that stopped cannot hold a root's time still for long.
	maxRun = 1024
)

// recordClock is one root's reader of its Clock; the root's lock guards it.
type recordClock struct {
	shared      *Clock
	ticks       func() uint64 // the counter; nil: the CPU's (tests inject one)
	start       time.Time     // the root's start, with its monotonic reading
	startMicros int64

	base        sample // the root's own calibration base
	anchor      sample // the last system read; extrapolation starts here
	mult        uint64 // the rate in use; 0: read the system clock
	span        uint64 // extrapolate while ticks - anchor.ticks < span
	run         int    // records left to extrapolate before a system read
	misses      int
	off         bool // extrapolation failed its checks: never again
	last        int64
	haveCounter bool
	quickest    uint64 // the narrowest bracket of a read so far
	reads       int    // system clock reads, for tests
}

// sample pairs a counter reading with the system clock's time since
// start. The counter was read width ticks around the clock, before and
// after; ticks is the middle.
type sample struct {
	ticks uint64
	nanos int64
	width uint64
	ok    bool
}

func newRecordClock(shared *Clock, ticks func() uint64) recordClock {
	if shared == nil {
		shared = NewClock()
	}
	c := recordClock{shared: shared, ticks: ticks, haveCounter: ticks != nil || haveCPUTicks, quickest: maxBracket}
	c.start = time.Now()
	c.startMicros = c.start.UnixMicro()
	c.last = c.startMicros
	if c.haveCounter {
		c.base = c.read()
		c.anchor, c.run = c.base, maxRun
		if c.base.ok {
			c.adopt(c.shared.rate.Load())
		}
	}
	return c
}

// tick reads the counter.
func (c *recordClock) tick() uint64 {
	if c.ticks != nil {
		return c.ticks()
	}
	return cpuTicks()
}

// read takes a system clock reading bracketed by two counter readings; the
// sample is ok when the bracket is tight and the counter moved forward.
func (c *recordClock) read() sample {
	c.reads++
	t1 := c.tick()
	ns := time.Since(c.start).Nanoseconds()
	t2 := c.tick()
	if t2 < t1 {
		return sample{nanos: ns}
	}
	w := t2 - t1
	ok := w/4 <= c.quickest
	if ok {
		c.quickest = max(min(c.quickest, w), minBracket)
	}
	return sample{ticks: t1 + w/2, nanos: ns, width: w, ok: ok}
}

// micros returns the time of a record in Unix microseconds.
func (c *recordClock) micros() int64 { return c.microsAt(c.early()) }

// early reads the counter for microsAt. It needs no lock (a caller reads it
// before taking the root's, so the read overlaps the wait) and reads
// nothing where there is no counter.
func (c *recordClock) early() uint64 {
	if !c.haveCounter {
		return 0
	}
	return c.tick()
}

// microsAt returns the time of a record whose counter reading, taken by
// early, is t.
func (c *recordClock) microsAt(t uint64) int64 {
	if c.mult != 0 && c.run > 0 {
		// A reading older than the anchor (another record read the system
		// clock in between) wraps around to more than the span.
		if d := t - c.anchor.ticks; d < c.span {
			c.run--
			return c.clamp(c.startMicros + (c.anchor.nanos+int64(d*c.mult>>32))/1000)
		}
	}
	if !c.haveCounter || c.off {
		return c.clamp(c.startMicros + time.Since(c.start).Microseconds())
	}
	s := c.read()
	if s.ok {
		if !c.base.ok {
			// The first read was interrupted: calibrate from this one.
			c.base = s
		}
		c.check(s)
		c.calibrate(s)
		c.anchor, c.run = s, maxRun
	} else {
		// An interrupted read anchors nothing: read again next time.
		c.mult = 0
	}
	return c.clamp(c.startMicros + s.nanos/1000)
}

// check compares the extrapolation from the anchor to s with the system
// clock.
func (c *recordClock) check(s sample) {
	if c.mult == 0 || !c.anchor.ok {
		return
	}
	d := s.ticks - c.anchor.ticks
	if s.ticks < c.anchor.ticks || d > 4*c.span {
		// Too far to extrapolate without overflow: nothing to check.
		return
	}
	if miss := c.anchor.nanos + int64(d*c.mult>>32) - s.nanos; miss <= maxMiss && miss >= -maxMiss {
		c.misses = 0
		return
	}
	c.misses++
	if c.misses >= maxMisses {
		c.off, c.mult = true, 0
	}
}

// calibrate measures the rate over the root's own base once the base is
// long enough, shares it when it beats the Clock's, and otherwise adopts
// the Clock's.
func (c *recordClock) calibrate(s sample) {
	if c.off {
		return
	}
	shared := c.shared.rate.Load()
	dn, dt := s.nanos-c.base.nanos, s.ticks-c.base.ticks
	if c.base.ok && s.ticks > c.base.ticks && dn >= minBaseline && (c.base.width+s.width)/2*precision <= dt &&
		(shared == nil || dn > shared.baseline) {
		if own := (&tickRate{mult: rateOf(dn, dt), baseline: dn}); own.mult != 0 {
			c.shared.rate.CompareAndSwap(shared, own)
			shared = own
		}
	}
	c.adopt(shared)
}

// adopt starts extrapolating at rate r.
func (c *recordClock) adopt(r *tickRate) {
	if r == nil || r.mult == 0 || c.off {
		c.mult = 0
		return
	}
	c.mult = r.mult
	c.span = uint64(spanNanos<<32) / r.mult
}

// rateOf is nanos/ticks in 32.32 fixed point, or 0 when it does not fit.
func rateOf(nanos int64, ticks uint64) uint64 {
	// Keep nanos<<32 within 64 bits: a baseline over about 2 s is scaled
	// down with its ticks, which costs nothing of the rate's precision.
	n := uint64(nanos)
	for n >= 1<<31 {
		n, ticks = n>>1, ticks>>1
	}
	if ticks == 0 {
		return 0
	}
	m := n << 32 / ticks
	if m < 1<<28 || m >= 1<<40 {
		// Over 16 GHz or under 4 MHz: not a counter to extrapolate from.
		return 0
	}
	return m
}

// clamp keeps record times from going backwards.
func (c *recordClock) clamp(us int64) int64 {
	if us < c.last {
		return c.last
	}
	c.last = us
	return us
}
