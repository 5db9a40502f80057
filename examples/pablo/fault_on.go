//go:build pablofault

package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pabloagent/pablo/clock"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/ledger/postgres"
)

// A binary built with the pablofault tag is the crash tests' host: it can
// stop dead at one ledger barrier, so a test kills it at exactly that
// point, without a sleep and without guessing. The fault is named by
// PABLO_FAULT as WHEN:KIND:NAME:NTH, where WHEN is after-admit (a barrier
// that made the call's admission durable without its dispatch, as the one
// before an approval waits), before-dispatch, after-dispatch,
// before-settle or after-settle, KIND is model or tool,
// NAME is a tool's capability ID or a model route ("*" for any) and NTH
// counts the matching calls of the task from 1, in the order they were
// admitted. At that barrier the store writes one line to the FIFO named by
// PABLO_FAULT_SIGNAL and never returns, from that or any later write: the
// records durable are exactly those a crash at that point leaves.
//
// PABLO_FAULT_SKEW, a Go duration, moves the clock a PostgreSQL store's
// leases are read with: a second host whose clock is past a dead host's
// lease expiry, so a test never waits the lease out.

// fault is one parsed PABLO_FAULT and the calls it has seen.
type fault struct {
	when, name string
	kind       ledger.CallKind
	nth        int
	signal     string

	mu sync.Mutex
	// calls maps an agent's call to "kind name"; seen counts admissions
	// that matched; target is the call chosen.
	calls   map[string]string
	seen    int
	target  string
	tripped bool
}

func withFault(h *host, s ledger.Store) ledger.Store {
	spec, ok := h.lookupEnv("PABLO_FAULT")
	if !ok || spec == "" {
		return s
	}
	parts := strings.Split(spec, ":")
	if len(parts) != 4 {
		panic("PABLO_FAULT: want WHEN:KIND:NAME:NTH, got " + spec)
	}
	nth, err := strconv.Atoi(parts[3])
	if err != nil || nth < 1 {
		panic("PABLO_FAULT: NTH must count from 1, got " + parts[3])
	}
	signal, _ := h.lookupEnv("PABLO_FAULT_SIGNAL")
	f := &fault{when: parts[0], kind: ledger.CallKind(parts[1]), name: parts[2], nth: nth, signal: signal, calls: map[string]string{}}
	switch s := s.(type) {
	case *ledger.Bolt:
		return &faultBolt{s, f}
	case *postgres.Store:
		return &faultPostgres{s, f}
	}
	panic(fmt.Sprintf("PABLO_FAULT: no fault store for %T", s))
}

func faultClock(h *host) clock.Clock {
	v, ok := h.lookupEnv("PABLO_FAULT_SKEW")
	if !ok || v == "" {
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		panic("PABLO_FAULT_SKEW: " + err.Error())
	}
	return skewed{d}
}

// skewed is the system clock moved by d.
type skewed struct{ d time.Duration }

func (c skewed) Now() time.Time { return time.Now().Add(c.d) }
func (c skewed) AfterFunc(d time.Duration, f func()) clock.Timer {
	return time.AfterFunc(d, f)
}

// faultBolt and faultPostgres keep every method of their store (its lease,
// index and volatile writes) and route the writes through the fault.
type faultBolt struct {
	*ledger.Bolt
	f *fault
}

func (s *faultBolt) Append(ctx context.Context, recs []ledger.Record) error {
	return s.f.write(ctx, recs, s.Bolt.Append)
}

func (s *faultBolt) AppendVolatile(ctx context.Context, recs []ledger.Record) error {
	return s.f.write(ctx, recs, s.Bolt.AppendVolatile)
}

type faultPostgres struct {
	*postgres.Store
	f *fault
}

func (s *faultPostgres) Append(ctx context.Context, recs []ledger.Record) error {
	return s.f.write(ctx, recs, s.Store.Append)
}

func (s *faultPostgres) AppendVolatile(ctx context.Context, recs []ledger.Record) error {
	return s.f.write(ctx, recs, s.Store.AppendVolatile)
}

// write stops before or after recs when they hold the fault's transition,
// and stops every write once it has stopped one.
func (f *fault) write(ctx context.Context, recs []ledger.Record, next func(context.Context, []ledger.Record) error) error {
	f.mu.Lock()
	if f.tripped {
		f.mu.Unlock()
		hang()
	}
	hit := f.match(recs)
	before := hit && strings.HasPrefix(f.when, "before-")
	if before {
		f.tripped = true
	}
	f.mu.Unlock()
	if before {
		f.stop()
	}
	err := next(ctx, recs)
	if hit {
		f.mu.Lock()
		f.tripped = true
		f.mu.Unlock()
		f.stop()
	}
	return err
}

// match notes the calls recs admit and reports whether recs hold the
// chosen call's transition.
func (f *fault) match(recs []ledger.Record) bool {
	state := ledger.CallDispatched
	switch {
	case strings.HasSuffix(f.when, "-settle"):
		state = ledger.CallSettled
	case f.when == "after-admit":
		state = ledger.CallAdmitted
	}
	hit, dispatched := false, false
	for i := range recs {
		c := recs[i].Call
		if recs[i].Kind != ledger.RecordCall || c == nil {
			continue
		}
		key := c.AgentID + "\x00" + c.CallID
		if c.State == ledger.CallAdmitted && c.Kind == f.kind && (f.name == "*" || c.Name == f.name) {
			f.seen++
			if f.seen == f.nth {
				f.target = key
			}
		}
		if f.target == key && c.State == state {
			hit = true
		}
		dispatched = dispatched || f.target == key && c.State == ledger.CallDispatched
	}
	if f.when == "after-admit" && dispatched {
		return false // admitted and dispatched at one barrier
	}
	return hit
}

// stop tells the test where the host stands and never returns.
func (f *fault) stop() {
	if f.signal != "" {
		if w, err := os.OpenFile(f.signal, os.O_WRONLY, 0); err == nil {
			fmt.Fprintf(w, "%s:%s:%s:%d\n", f.when, f.kind, f.name, f.nth)
			w.Close()
		}
	}
	hang()
}

// hang blocks the calling goroutine until the process is killed.
func hang() {
	for {
		time.Sleep(time.Hour)
	}
}
