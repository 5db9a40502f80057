package ledger

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// Clock times the records of the roots that share it (Options.Clock).
//
// A record's time is its root's start on the wall clock plus the monotonic
// time since, in microseconds, so times never go backwards within a task
// whatever happens to the wall clock. Reading the system's monotonic clock
// costs 40–60 ns on a virtual machine, and a streamed answer appends an
// event per delta. So on a CPU with an invariant timestamp counter (amd64),
// a root that shares a Clock reads the system clock once a millisecond or
// 1,024 records have passed since its last read, whichever comes first
// (and more often while it calibrates), and in between extrapolates from
// the counter at a rate calibrated against the system clock. A counter that
// is slow to read (trapped by a hypervisor) is not used.
//
// Every system read at least 100 µs after the one before checks the
// extrapolation between them: it holds when it lands within 2 µs plus
// 1,000 ppm of the time between. A rate that
// misses is withdrawn from the Clock and the root calibrates afresh; a root
// that misses twice in a row reads the system clock for every record from
// then on. A counter that has not moved since the root's last record is not
// extrapolated from. So an extrapolated time is never ahead of the system
// clock by a millisecond or more, and never behind the root's previous
// time.
//
// The first root to run a few hundred microseconds calibrates a rate, and
// shares it once a check has confirmed it; later roots extrapolate from
// their first record. A Clock is safe for concurrent use. A root without
// one, or sharing the zero Clock, reads the system clock for every record.
type Clock struct {
	counter bool // the CPU has an invariant timestamp counter
	rate    atomic.Pointer[tickRate]

	// Tests stand in for the counter and the system's monotonic clock.
	ticks func() uint64
	mono  func() int64
}

// NewClock returns a Clock with no rate yet: the first root to run long
// enough calibrates it for the others.
func NewClock() *Clock { return &Clock{counter: haveInvariantTicks() && cheapTicks()} }

// cheapTicks reports whether the counter is quick to read here. A
// hypervisor that traps the read makes it cost microseconds, far more than
// the system clock read it would save. The best of three trials counts, so
// that an interruption does not decide.
func cheapTicks() bool {
	const reads = 32
	best := time.Duration(1<<63 - 1)
	for range 3 {
		start := time.Now()
		for range reads {
			cpuTicks()
		}
		best = min(best, time.Since(start))
	}
	return best < reads*maxTickRead
}

// maxTickRead is the most a counter read may cost for the counter to be
// used (a read costs about 10–25 ns where it is not trapped).
const maxTickRead = 100 * time.Nanosecond

// tick reads the counter, unordered: for records.
func (k *Clock) tick() uint64 {
	if k.ticks != nil {
		return k.ticks()
	}
	return cpuTicks()
}

// tickOrdered reads the counter after every earlier instruction: for the
// readings around a system read.
func (k *Clock) tickOrdered() uint64 {
	if k.ticks != nil {
		return k.ticks()
	}
	return cpuTicksOrdered()
}

// tickRate converts counter ticks to nanoseconds.
type tickRate struct {
	mult     uint64 // nanoseconds per tick, 32.32 fixed point
	baseline int64  // nanoseconds of system clock it was measured over
}

// The clock's bounds.
const (
	// spanNanos is the longest a root extrapolates from one system read;
	// maxRun the most records.
	spanNanos = int64(time.Millisecond)
	maxRun    = 1024
	// A rate is measured over at least minBaseline, and over long enough
	// that the uncertainty of its two samples (half their brackets) moves
	// an extrapolation over spanNanos by at most spanNanos/precision
	// (250 ns).
	minBaseline = 200 * int64(time.Microsecond)
	precision   = 4000
	// An extrapolation holds when it lands within missNanos plus
	// missPPM/1e6 of the elapsed time from the system clock: the rate's
	// own error, a read's jitter and the system clock's slewing (NTP slews
	// by up to 500 ppm). maxMisses misses in a row end extrapolation.
	missNanos = 2 * int64(time.Microsecond)
	missPPM   = 1000
	maxMisses = 2
	// minCheck is the shortest extrapolation a check judges: over less,
	// the tolerance would be most of it.
	minCheck = 100 * int64(time.Microsecond)
	// A system read's sample counts when its counter readings are at most
	// four times as far apart as the quickest read's so far (a read takes
	// about 150 ticks; the quickest starts at maxBracket and never drops
	// below minBracket): more means the goroutine was interrupted between
	// them.
	maxBracket = 1000
	minBracket = 32
)

// recordClock is one root's reader of its Clock. The root's lock guards
// it, except ticksNow, which reads only what init wrote and an atomic.
type recordClock struct {
	shared      *Clock // nil: read the system clock for every record
	start       time.Time
	startMicros int64
	startMono   int64 // the test's system clock at start

	counting atomic.Bool // extrapolation is possible: a counter, not given up

	base     sample    // the start of the root's own calibration
	anchor   sample    // the last system read; extrapolation starts here
	mult     uint64    // the rate in use; 0: read the system clock
	span     uint64    // extrapolate while ticks - anchor.ticks < span
	run      int       // records left to extrapolate before a system read
	shares   *tickRate // the rate in use when it is the Clock's
	verified bool      // the last system read's check held
	misses   int       // checks missed in a row
	lastTick uint64    // the counter at the root's latest record
	quickest uint64    // the narrowest bracket of a read so far
	last     int64     // the latest time handed out, in µs
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

// init starts the clock of a root that starts now.
func (c *recordClock) init(shared *Clock) {
	c.shared = shared
	c.start = time.Now()
	c.startMicros = c.start.UnixMicro()
	c.last = c.startMicros
	if shared == nil || !shared.counter {
		return
	}
	if shared.mono != nil {
		c.startMono = shared.mono()
	}
	c.quickest = maxBracket
	c.counting.Store(true)
	c.base = c.read()
	c.anchor, c.run, c.lastTick = c.base, maxRun, c.base.ticks
	if c.base.ok {
		c.use(shared.rate.Load(), true)
	}
}

// ticksNow reads the counter for microsAt, or returns 0 when the root does
// not extrapolate. It needs no lock: a caller reads it before taking the
// root's, so the read overlaps the wait.
func (c *recordClock) ticksNow() uint64 {
	if !c.counting.Load() {
		return 0
	}
	return c.shared.tick()
}

// microsAt returns the time of a record whose counter reading, taken by
// ticksNow, is t.
func (c *recordClock) microsAt(t uint64) int64 {
	// A reading older than the anchor (another record read the system
	// clock since) wraps around to more than the span; one no newer than
	// the latest record's means the counter did not move.
	if c.mult != 0 && c.run > 0 && t > c.lastTick {
		if d := t - c.anchor.ticks; d < c.span {
			c.run--
			c.lastTick = t
			return c.at(c.anchor.nanos + int64(d*c.mult>>32))
		}
	}
	if !c.counting.Load() {
		return c.at(c.elapsed())
	}
	s := c.read()
	if !s.ok {
		// An interrupted read anchors nothing: read again next time.
		c.mult = 0
		return c.at(s.nanos)
	}
	if !c.base.ok {
		c.base = s
	}
	if c.mult != 0 && s.nanos-c.anchor.nanos < minCheck {
		// Too soon after the anchor to judge the rate (a counter that did
		// not move, records in a burst): keep the anchor, so the next check
		// spans long enough to tell.
		c.run = maxRun
		return c.at(s.nanos)
	}
	c.check(s)
	c.calibrate(s)
	c.anchor, c.run, c.lastTick = s, maxRun, s.ticks
	return c.at(s.nanos)
}

// elapsed is the system clock's time since start, in nanoseconds.
func (c *recordClock) elapsed() int64 {
	if c.shared != nil && c.shared.mono != nil {
		return c.shared.mono() - c.startMono
	}
	return int64(time.Since(c.start))
}

// read takes a system clock reading bracketed by two counter readings; the
// sample is ok when the bracket is tight and the counter moved forward.
func (c *recordClock) read() sample {
	t1 := c.shared.tickOrdered()
	ns := c.elapsed()
	t2 := c.shared.tickOrdered()
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

// check compares the extrapolation from the anchor to s, at the rate in
// use, with the system clock. A miss withdraws the rate from the Clock if
// it is the Clock's, and starts the root's calibration afresh.
func (c *recordClock) check(s sample) {
	c.verified = false
	if c.mult == 0 || !c.anchor.ok {
		return
	}
	elapsed := s.nanos - c.anchor.nanos
	tolerance := missNanos + elapsed/(1e6/missPPM)
	if s.ticks >= c.anchor.ticks {
		// hi < 2^31 keeps the extrapolation within int64; a longer one is
		// a jump, and a miss.
		if hi, lo := bits.Mul64(s.ticks-c.anchor.ticks, c.mult); hi < 1<<31 {
			if miss := int64(hi<<32|lo>>32) - elapsed; miss <= tolerance && miss >= -tolerance {
				c.misses, c.verified = 0, true
				return
			}
		}
	}
	c.misses++
	if c.shares != nil {
		c.shared.rate.CompareAndSwap(c.shares, nil)
		c.shares = nil
	}
	c.base, c.mult = s, 0
	if c.misses >= maxMisses {
		c.counting.Store(false)
	}
}

// calibrate measures the rate over the root's own base once the base is
// long enough, and uses the better measured of its own and the Clock's
// (the longer baseline). It shares its own only when the check of this
// read held, so a rate measured across a jump of the counter is never
// shared.
func (c *recordClock) calibrate(s sample) {
	if !c.counting.Load() {
		return
	}
	shared := c.shared.rate.Load()
	dn, dt := s.nanos-c.base.nanos, s.ticks-c.base.ticks
	if c.base.ok && s.ticks > c.base.ticks && dn >= minBaseline && (c.base.width+s.width)/2*precision <= dt &&
		(shared == nil || dn > shared.baseline) {
		if own := (&tickRate{mult: rateOf(dn, dt), baseline: dn}); own.mult != 0 {
			c.use(own, c.verified && c.shared.rate.CompareAndSwap(shared, own))
			return
		}
	}
	if shared != nil {
		c.use(shared, true)
	}
}

// use starts extrapolating at rate r, the Clock's when shared.
func (c *recordClock) use(r *tickRate, shared bool) {
	if r == nil || r.mult == 0 {
		return
	}
	c.mult = r.mult
	c.span = uint64(spanNanos<<32) / r.mult
	c.shares = nil
	if shared {
		c.shares = r
	}
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

// at is the time of a record nanos after start, in Unix microseconds, kept
// from going backwards.
func (c *recordClock) at(nanos int64) int64 {
	us := c.startMicros + nanos/1000
	if us < c.last {
		return c.last
	}
	c.last = us
	return us
}
