package ledger

import (
	"encoding/binary"
	"sync"
	"testing"
	"time"
)

// calibrated returns a Clock calibrated by one root reading it for as long
// as calibration takes.
func calibrated(t testing.TB, ticks func() uint64) *Clock {
	t.Helper()
	shared := NewClock()
	c := newRecordClock(shared, ticks)
	for deadline := time.Now().Add(5 * time.Second); shared.rate.Load() == nil; {
		if time.Now().After(deadline) {
			t.Fatal("the clock never calibrated")
		}
		c.micros()
	}
	return shared
}

// systemMicros is what micros reads when it reads the system clock.
func systemMicros(c *recordClock) int64 {
	return c.startMicros + time.Since(c.start).Microseconds()
}

// TestClockTracksTheSystemClock checks every extrapolated time against the
// system clock read just before and just after it.
func TestClockTracksTheSystemClock(t *testing.T) {
	if !haveCPUTicks {
		t.Skip("no timestamp counter on this architecture")
	}
	shared := calibrated(t, nil)
	c := newRecordClock(shared, nil)
	if c.mult == 0 {
		t.Fatal("a root sharing a calibrated Clock does not extrapolate from its start")
	}
	const n = 200_000
	const slack = maxMiss/1000 + 1 // µs, and one for the rounding
	prev, checked := int64(0), 0
	for range n {
		before := systemMicros(&c)
		got := c.micros()
		after := systemMicros(&c)
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
	if c.off {
		t.Fatal("a healthy counter failed its checks")
	}
	if c.reads > n/10 {
		t.Fatalf("%d system reads for %d records: extrapolation is not in use", c.reads, n)
	}
}

// fakeCounter is a timestamp counter under the test's control: it follows
// the system clock at ticksPerMicro until the test slows or stops it.
type fakeCounter struct {
	mu     sync.Mutex
	start  time.Time
	base   uint64 // ticks at from
	from   time.Duration
	perSec uint64
}

func newFakeCounter(perSec uint64) *fakeCounter {
	return &fakeCounter{start: time.Now(), perSec: perSec}
}

func (f *fakeCounter) ticks() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	d := time.Since(f.start) - f.from
	return f.base + uint64(d)*f.perSec/uint64(time.Second)
}

// setRate changes how fast the counter runs from now on.
func (f *fakeCounter) setRate(perSec uint64) {
	now := f.ticks()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.base, f.from, f.perSec = now, time.Since(f.start), perSec
}

// A counter that changes its rate, or stops, after calibration is caught
// by the checks: the root stops extrapolating and reads the system clock.
func TestClockStopsTrustingALyingCounter(t *testing.T) {
	for _, tc := range []struct {
		name string
		rate uint64
	}{{"slowed", 1_000_000_000}, {"sped up", 4_000_000_000}, {"stopped", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeCounter(2_000_000_000)
			c := newRecordClock(calibrated(t, f.ticks), f.ticks)
			if c.mult == 0 {
				t.Fatal("not extrapolating after calibration")
			}
			f.setRate(tc.rate)
			prev := int64(0)
			for deadline := time.Now().Add(5 * time.Second); !c.off; {
				if time.Now().After(deadline) {
					t.Fatal("the lying counter was never caught")
				}
				got := c.micros()
				if got < prev {
					t.Fatalf("time went backwards: %d after %d", got, prev)
				}
				prev = got
			}
			// A counter that ran fast pushed times ahead by at most a span,
			// and times do not go back: from here they are the system
			// clock's, or held where they were.
			before := systemMicros(&c)
			got := c.micros()
			if after := systemMicros(&c); got < before || got > max(after, prev) {
				t.Fatalf("after the counter was caught, %d is not the system clock's [%d, %d] nor the last time %d", got, before, after, prev)
			}
			if prev > before+spanNanos/1000+1 {
				t.Fatalf("the lying counter pushed times %d µs ahead, more than a span", prev-before)
			}
			if c.mult != 0 {
				t.Fatal("still extrapolating")
			}
		})
	}
}

// An interrupted first read (a wide bracket) calibrates nothing; the next
// tight one becomes the base.
func TestClockIgnoresInterruptedReads(t *testing.T) {
	f := newFakeCounter(2_000_000_000)
	wide := true
	ticks := func() uint64 {
		v := f.ticks()
		if wide {
			wide = false
			return v - 10*maxBracket // the first reading looks long before the second
		}
		return v
	}
	shared := NewClock()
	c := newRecordClock(shared, ticks)
	if c.base.ok || c.mult != 0 {
		t.Fatalf("an interrupted base was used: %+v", c.base)
	}
	for deadline := time.Now().Add(5 * time.Second); shared.rate.Load() == nil; {
		if time.Now().After(deadline) {
			t.Fatal("the clock never calibrated after an interrupted first read")
		}
		c.micros()
	}
	r := shared.rate.Load()
	// 2 GHz is 0.5 ns per tick: 1<<31 in 32.32.
	if r.mult < 1<<31-1<<21 || r.mult > 1<<31+1<<21 {
		t.Fatalf("rate %d, want about %d", r.mult, uint64(1)<<31)
	}
}

// A counter reading taken before another record re-anchored the clock
// (early, outside the root's lock) is not extrapolated backwards: the clock
// reads the system clock, and times stay in order.
func TestClockEarlyReadingBeforeTheAnchor(t *testing.T) {
	f := newFakeCounter(2_000_000_000)
	c := newRecordClock(calibrated(t, f.ticks), f.ticks)
	early := c.early()
	time.Sleep(time.Millisecond)
	c.run = 0 // the next record reads the system clock and re-anchors
	later := c.micros()
	reads := c.reads
	got := c.microsAt(early)
	if got < later {
		t.Fatalf("time went backwards: %d after %d", got, later)
	}
	if c.reads != reads+1 {
		t.Fatalf("a reading older than the anchor was extrapolated (%d system reads, want %d)", c.reads, reads+1)
	}
}

// A root whose clock is older than the Clock's calibration adopts it at its
// next system read; roots share one calibration concurrently.
func TestClockIsSharedAcrossRoots(t *testing.T) {
	f := newFakeCounter(3_000_000_000)
	shared := NewClock()
	var wg sync.WaitGroup
	clocks := make([]recordClock, 8)
	for i := range clocks {
		clocks[i] = newRecordClock(shared, f.ticks)
	}
	for i := range clocks {
		wg.Go(func() {
			c := &clocks[i]
			for deadline := time.Now().Add(5 * time.Second); c.mult == 0 && time.Now().Before(deadline); {
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
	if shared.rate.Load() == nil {
		t.Fatal("no rate was shared")
	}
}

func TestRateOf(t *testing.T) {
	for _, tc := range []struct {
		nanos int64
		ticks uint64
		want  uint64
	}{
		{1000, 2000, 1 << 31},           // 2 GHz
		{1000, 1000, 1 << 32},           // 1 GHz
		{1000, 40, 25 << 32},            // 40 MHz
		{3 << 40, 3 << 40, 1 << 32},     // a long baseline scales down
		{1000, 0, 0},                    // no ticks
		{1000, 17_000, 0},               // 17 GHz: not a counter
		{1000, 3, 0},                    // 3 MHz: too coarse
		{1<<63 - 1, 1<<63 - 1, 1 << 32}, // the largest baseline
	} {
		got := rateOf(tc.nanos, tc.ticks)
		if diff := int64(got - tc.want); diff > 1 || diff < -1 {
			t.Errorf("rateOf(%d, %d) = %d, want %d", tc.nanos, tc.ticks, got, tc.want)
		}
	}
}

// FuzzClockCounter drives a root's clock with whatever counter readings the
// input makes up: times never go backwards and never run ahead of the
// system clock by more than one extrapolation span.
func FuzzClockCounter(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 1})
	f.Add(binary.LittleEndian.AppendUint64(nil, 1<<63))
	f.Add([]byte("\xff\xff\xff\xff\xff\xff\xff\xff\x00\x00\x00\x00\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var now uint64
		ticks := func() uint64 {
			if len(data) >= 8 {
				now += binary.LittleEndian.Uint64(data)
				data = data[8:]
			} else if len(data) > 0 {
				now -= uint64(data[0])
				data = data[1:]
			}
			return now
		}
		shared := NewClock()
		shared.rate.Store(&tickRate{mult: 1 << 31, baseline: minBaseline})
		c := newRecordClock(shared, ticks)
		prev := int64(0)
		for range 64 {
			got := c.micros()
			if got < prev {
				t.Fatalf("time went backwards: %d after %d", got, prev)
			}
			if limit := systemMicros(&c) + spanNanos/1000 + 1; got > limit {
				t.Fatalf("time %d runs ahead of the system clock's %d by more than a span", got, limit)
			}
			prev = got
		}
	})
}
