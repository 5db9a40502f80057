package ledger

import (
	"encoding/binary"
	"sync"
	"testing"
	"time"
)

// micros is the time of a record taken now, as the root takes it.
func (c *recordClock) micros() int64 { return c.microsAt(c.ticksNow()) }

// fakeTime is a timestamp counter and a system clock under the test's
// control. The counter runs at perNs ticks per nanosecond of the system
// clock until the test makes it lie; reading either costs readNs of time.
type fakeTime struct {
	mono      int64   // the system clock, ns
	ticks     float64 // the counter
	perNs     float64
	readNs    int64
	monoReads int
}

func newFakeTime() *fakeTime { return &fakeTime{mono: 1e9, ticks: 5e9, perNs: 2, readNs: 10} }

// advance lets ns of time pass, the counter running at its rate.
func (f *fakeTime) advance(ns int64) {
	f.mono += ns
	f.ticks += float64(ns) * f.perNs
}

func (f *fakeTime) tick() uint64 {
	f.advance(f.readNs)
	return uint64(f.ticks)
}

func (f *fakeTime) now() int64 {
	f.monoReads++
	return f.mono
}

// clock is a Clock reading this fake time.
func (f *fakeTime) clock() *Clock { return &Clock{counter: true, ticks: f.tick, mono: f.now} }

// root starts a root's clock on shared now.
func (f *fakeTime) root(shared *Clock) *recordClock {
	c := &recordClock{}
	c.init(shared)
	return c
}

// system is the fake system clock's time for c, in µs.
func (f *fakeTime) system(c *recordClock) int64 { return c.startMicros + (f.mono-c.startMono)/1000 }

// records appends n records every gap ns on c and checks each time against
// the system clock: never behind the root's previous time, never ahead of
// the system clock by a span or more, and, with an honest counter, within a
// microsecond of it.
func (f *fakeTime) records(t *testing.T, c *recordClock, n int, gap int64, honest bool) {
	t.Helper()
	for i := range n {
		f.advance(gap)
		prev := c.last
		got := c.microsAt(c.ticksNow())
		sys := f.system(c)
		switch {
		case got < prev:
			t.Fatalf("record %d: time went backwards: %d after %d", i, got, prev)
		case got >= sys+spanNanos/1000:
			t.Fatalf("record %d: time %d is ahead of the system clock's %d by a span or more", i, got, sys)
		case honest && (got < sys-1 || got > sys+1):
			t.Fatalf("record %d: time %d, system clock %d: off by more than a microsecond with an honest counter", i, got, sys)
		}
	}
}

// calibrated returns a Clock with a rate confirmed by one root's checks.
func (f *fakeTime) calibrated(t *testing.T) *Clock {
	t.Helper()
	shared := f.clock()
	c := f.root(shared)
	for i := 0; shared.rate.Load() == nil; i++ {
		if i > 100_000 {
			t.Fatal("the clock never calibrated")
		}
		f.records(t, c, 1, 400, true)
	}
	return shared
}

func TestClockExtrapolatesBetweenSystemReads(t *testing.T) {
	f := newFakeTime()
	shared := f.calibrated(t)
	c := f.root(shared)
	if c.mult == 0 {
		t.Fatal("a root sharing a calibrated Clock does not extrapolate from its start")
	}
	reads := f.monoReads
	const n = 100_000
	f.records(t, c, n, 400, true)
	// One read per 1,024 records (a millisecond is 2,500 of them here).
	if got, most := f.monoReads-reads, n/maxRun+1; got > most {
		t.Fatalf("%d system reads for %d records, want at most %d", got, n, most)
	}
	f.records(t, c, 1000, 3*spanNanos/2, true) // records further apart than a span
	if !c.counting.Load() {
		t.Fatal("an honest counter failed its checks")
	}
}

// Without a counter, or on the zero Clock, every record reads the system
// clock.
func TestClockWithoutCounterReadsTheSystemClock(t *testing.T) {
	for name, clock := range map[string]*Clock{"zero Clock": {}, "no Clock": nil} {
		t.Run(name, func(t *testing.T) {
			c := &recordClock{}
			c.init(clock)
			prev := int64(0)
			for range 1000 {
				before := c.startMicros + int64(time.Since(c.start))/1000
				got := c.micros()
				after := c.startMicros + int64(time.Since(c.start))/1000
				if got < prev || got < before || got > after {
					t.Fatalf("time %d outside [%d, %d] or before %d", got, before, after, prev)
				}
				prev = got
			}
			if c.mult != 0 || c.counting.Load() {
				t.Fatal("extrapolating without a counter")
			}
		})
	}
}

// A counter that changes its rate after calibration (runs slow, fast,
// stops, goes backwards) never moves a time backwards or a span ahead of the
// system clock. The root misses, calibrates afresh, and from then on is
// exact again: extrapolating at the new rate, or reading the system clock
// where the counter no longer counts.
func TestClockRecalibratesWhenTheCounterChangesRate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		perNs float64
	}{{"slowed", 1}, {"sped up", 4}, {"stopped", 0}, {"backwards", -0.5}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeTime()
			c := f.root(f.calibrated(t))
			f.records(t, c, 3000, 400, true)
			f.perNs = tc.perNs
			f.records(t, c, 10_000, 400, false)
			if tc.perNs > 0 {
				if want := float64(1<<32) / tc.perNs; float64(c.mult) < want*0.999 || float64(c.mult) > want*1.001 {
					t.Fatalf("rate %d after the change, want about %.0f", c.mult, want)
				}
			} else if c.mult != 0 {
				t.Fatalf("extrapolating at %d from a counter that does not count", c.mult)
			}
			f.records(t, c, 10_000, 400, true)
		})
	}
}

// A counter that stops never holds a time still: a record whose reading
// has not moved since the last record's reads the system clock, however
// sparse or dense the records.
func TestClockStoppedCounterNeverFreezesTime(t *testing.T) {
	for _, gap := range []int64{100, 150_000, 3 * spanNanos} {
		f := newFakeTime()
		c := f.root(f.calibrated(t))
		f.records(t, c, 3000, 400, true)
		f.perNs = 0
		f.records(t, c, 2000, gap, true)
	}
}

// A counter whose rate keeps changing misses every check: the root gives
// up on it and reads the system clock for every record.
func TestClockGivesUpOnAnErraticCounter(t *testing.T) {
	f := newFakeTime()
	c := f.root(f.calibrated(t))
	for i := 0; c.counting.Load(); i++ {
		if i > 1000 {
			t.Fatal("the erratic counter was never given up on")
		}
		f.perNs = []float64{2, 1.5, 3}[i%3]
		f.records(t, c, 1500, 400, false)
	}
	reads := f.monoReads
	f.records(t, c, 100, 400, true)
	if f.monoReads-reads != 100 {
		t.Fatalf("%d system reads for 100 records after giving up", f.monoReads-reads)
	}
}

// One jump of the counter (a virtual machine paused, say) costs a single
// miss: the root calibrates afresh, the rate measured across the jump is
// never shared, and a root started after it extrapolates correctly.
func TestClockOneJumpDoesNotPoisonTheClock(t *testing.T) {
	f := newFakeTime()
	shared := f.calibrated(t)
	a := f.root(shared)
	f.records(t, a, 50_000, 400, true) // 20 ms
	f.ticks += 4e6 * f.perNs           // 4 ms of ticks and no time
	f.records(t, a, 1, 400, false)
	f.records(t, a, 12_500, 400, false) // 5 ms
	if !a.counting.Load() {
		t.Fatal("one jump turned extrapolation off")
	}
	if r := shared.rate.Load(); r != nil && (r.mult < 1<<31-1<<20 || r.mult > 1<<31+1<<20) {
		t.Fatalf("the Clock's rate is %d after the jump, want about %d", r.mult, 1<<31)
	}
	b := f.root(shared)
	f.records(t, b, 50_000, 400, true)
	if !b.counting.Load() {
		t.Fatal("a root after the jump turned extrapolation off")
	}
}

// Records further apart than a span read the system clock, and slewing
// within the tolerance does not count as a miss.
func TestClockSparseRecordsStayOnTheCounter(t *testing.T) {
	f := newFakeTime()
	shared := f.clock()
	shared.rate.Store(&tickRate{mult: 1<<31 + 1<<31*750/1_000_000, baseline: 1 << 40}) // 750 ppm off
	c := f.root(shared)
	f.records(t, c, 100, 3300*int64(time.Microsecond), false)
	if !c.counting.Load() {
		t.Fatalf("sparse records turned extrapolation off (%d misses)", c.misses)
	}
}

// An interrupted first read (a wide bracket) calibrates nothing; a later
// tight one becomes the base.
func TestClockIgnoresInterruptedReads(t *testing.T) {
	f := newFakeTime()
	shared := f.clock()
	calls := 0
	shared.ticks = func() uint64 {
		if calls++; calls == 2 {
			f.advance(50 * maxBracket) // the goroutine lost the CPU mid-read
		}
		return f.tick()
	}
	c := f.root(shared)
	if c.base.ok || c.mult != 0 {
		t.Fatalf("an interrupted base was used: %+v", c.base)
	}
	for i := 0; shared.rate.Load() == nil; i++ {
		if i > 100_000 {
			t.Fatal("the clock never calibrated after an interrupted first read")
		}
		f.records(t, c, 1, 400, false)
	}
	if r := shared.rate.Load(); r.mult < 1<<31-1<<20 || r.mult > 1<<31+1<<20 {
		t.Fatalf("rate %d, want about %d", r.mult, 1<<31)
	}
}

// A counter reading taken before another record re-anchored the clock
// (ticksNow runs outside the root's lock) is not extrapolated backwards: the
// clock reads the system clock, and times stay in order.
func TestClockReadingOlderThanTheAnchor(t *testing.T) {
	f := newFakeTime()
	c := f.root(f.calibrated(t))
	early := c.ticksNow()
	f.advance(spanNanos / 2)
	c.run = 0 // the next record reads the system clock and re-anchors
	later := c.micros()
	reads := f.monoReads
	if got := c.microsAt(early); got < later {
		t.Fatalf("time went backwards: %d after %d", got, later)
	}
	if f.monoReads != reads+1 {
		t.Fatalf("a reading older than the anchor was extrapolated (%d system reads, want 1)", f.monoReads-reads)
	}
}

// On this machine's own counter, extrapolated times stay within a couple
// of microseconds of the system clock read around them.
func TestClockTracksTheSystemClock(t *testing.T) {
	shared := NewClock()
	if !shared.counter {
		t.Skip("no invariant timestamp counter here")
	}
	c := &recordClock{}
	c.init(shared)
	deadline := time.Now().Add(10 * time.Second)
	for c.mult == 0 || shared.rate.Load() == nil {
		if time.Now().After(deadline) {
			t.Skip("no calibration within 10 s (every read interrupted?)")
		}
		c.micros()
	}
	const n = 200_000
	const slack = missNanos/1000 + 1 // µs, and one for the rounding
	prev, checked := int64(0), 0
	for range n {
		before := c.startMicros + int64(time.Since(c.start))/1000
		got := c.micros()
		after := c.startMicros + int64(time.Since(c.start))/1000
		if got < prev {
			t.Fatalf("time went backwards: %d after %d", got, prev)
		}
		prev = got
		if after-before > 20 {
			continue // interrupted: the bracket says nothing
		}
		checked++
		if got < before-slack || got > after+slack {
			t.Fatalf("record time %d µs outside the system clock's [%d, %d] ± %d µs", got, before, after, slack)
		}
	}
	if checked < n/2 {
		t.Skipf("only %d of %d samples were uninterrupted", checked, n)
	}
	if !c.counting.Load() {
		t.Fatal("this machine's counter failed its checks")
	}
}

// Roots on many goroutines share one Clock: each comes to extrapolate.
func TestClockIsSharedAcrossRoots(t *testing.T) {
	shared := NewClock()
	if !shared.counter {
		t.Skip("no invariant timestamp counter here")
	}
	clocks := make([]recordClock, 8)
	var wg sync.WaitGroup
	for i := range clocks {
		wg.Go(func() {
			c := &clocks[i]
			c.init(shared)
			for deadline := time.Now().Add(10 * time.Second); c.mult == 0 && time.Now().Before(deadline); {
				c.micros()
			}
		})
	}
	wg.Wait()
	for i := range clocks {
		if clocks[i].mult == 0 {
			t.Fatalf("root %d never extrapolated", i)
		}
	}
}

func TestRateOf(t *testing.T) {
	for _, tc := range []struct {
		nanos int64
		ticks uint64
		want  uint64
	}{
		{1000, 2000, 1 << 31},             // 2 GHz
		{1000, 1000, 1 << 32},             // 1 GHz
		{1000, 40, 25 << 32},              // 40 MHz
		{3 << 40, 3 << 40, 1 << 32},       // a long baseline scales down
		{1000, 0, 0},                      // no ticks
		{1000, 17_000, 0},                 // 17 GHz: not a counter
		{1000, 3, 0},                      // 3 MHz: too coarse
		{1<<63 - 1, 1<<63 - 1, 1 << 32},   // the longest baseline
		{1<<63 - 1, 1<<62 - 1, 1<<33 + 4}, // and at half the ticks
		{200_000, 50_000, 4 << 32},        // 250 MHz
		{200_000, 3_200_000, 1 << 28},     // 16 GHz: the fastest
		{255_000, 1000, 255 << 32},        // 3.9 MHz: the slowest
		{256_000, 1000, 0},                // just too slow
	} {
		got := rateOf(tc.nanos, tc.ticks)
		if diff := int64(got - tc.want); diff > 1 || diff < -1 {
			t.Errorf("rateOf(%d, %d) = %d, want %d", tc.nanos, tc.ticks, got, tc.want)
		}
	}
}

// FuzzClockCounter drives a root's clock with whatever the input makes of
// time and the counter (time passing, the counter jumping, changing rate,
// going backwards, reads interrupted): times never go backwards and never
// run a span or more ahead of the system clock.
func FuzzClockCounter(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7})
	f.Add(binary.LittleEndian.AppendUint64([]byte{1}, 1<<63))
	f.Add([]byte("\x02\xff\x03\x00\x04\x80\x00\x10\x00\x10"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ft := newFakeTime()
		shared := ft.clock()
		shared.rate.Store(&tickRate{mult: 1 << 31, baseline: minBaseline})
		c := ft.root(shared)
		for len(data) >= 2 {
			op, arg := data[0], int64(data[1])
			data = data[2:]
			switch op % 6 {
			case 0: // time passes
				ft.advance(arg * 1000)
			case 1: // the counter jumps
				ft.ticks += float64(arg) * 1e5
			case 2: // the counter goes back
				ft.ticks = max(0, ft.ticks-float64(arg)*1e3)
			case 3: // the counter's rate changes
				ft.perNs = float64(arg) / 64
			case 4: // a read gets slow
				ft.readNs = arg * 10
			case 5: // many records
				for range arg * 8 {
					ft.records(t, c, 1, 300, false)
				}
			}
			ft.records(t, c, 1, 100, false)
		}
	})
}
