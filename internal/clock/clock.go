// Package clock holds [Manual], the one test clock of the module, moved and
// fired by hand so no rule is ever tested with a sleep, and aliases of the
// public clock package's types, which every package's rules are written
// against (children.Clock, acp.Clock, a2a.Clock are aliases too), so one
// test clock serves them all.
package clock

import "github.com/pabloagent/pablo/clock"

// Clock is [clock.Clock].
type Clock = clock.Clock

// Timer is [clock.Timer].
type Timer = clock.Timer

// System is [clock.System].
type System = clock.System
