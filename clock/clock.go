// Package clock is the one clock interface the time-based rules of the
// supervisor, ACP, A2A, MCP and the ledger are written against (timeouts,
// stalls, coalescing windows), and the system clock that serves it. It is
// public because a host that injects a clock (children.Options.Clock,
// acp.Options.Clock, a2a.Options.Clock, ledger.Options.Clock, …) writes
// one of these; the aliases in those packages name these types, so one
// clock a host writes serves them all.
package clock

import "time"

// Clock is the time a package reads and the timers it arms.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f once, in its own goroutine, when d has passed,
	// unless the returned Timer is stopped first.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending [Clock.AfterFunc] call; *time.Timer is one.
type Timer interface {
	// Stop prevents the call if it has not started; it reports whether it
	// did.
	Stop() bool
}

// System is the system clock.
type System struct{}

// Now returns time.Now().
func (System) Now() time.Time { return time.Now() }

// AfterFunc is time.AfterFunc.
func (System) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
