//go:build !pablofault

package main

import (
	"github.com/pabloagent/pablo/clock"
	"github.com/pabloagent/pablo/ledger"
)

// withFault returns s: only a binary built with the pablofault tag (the
// crash tests' own) can stop at a ledger barrier. A released binary reads
// no fault variable, so none of them can change what it does.
func withFault(_ *host, s ledger.Store) ledger.Store { return s }

// faultClock is the lease clock of a PostgreSQL store: nil (the system
// clock) outside a pablofault build.
func faultClock(*host) clock.Clock { return nil }
