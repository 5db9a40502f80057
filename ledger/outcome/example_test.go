package outcome_test

import (
	"fmt"

	"github.com/pabloagent/pablo/ledger/outcome"
)

// A failure is told in two words: why (its code) and whether the request may
// have reached its peer (its delivery). Only a delivery that is not certain
// makes the work an unknown outcome, never replayed.
func ExampleDelivery() {
	for _, d := range []outcome.Delivery{outcome.NotSent, outcome.MayHaveBeenSent, outcome.ResponseReceived, "lost"} {
		fmt.Println(d, d.Valid(), d == outcome.MayHaveBeenSent)
	}
	// Output:
	// not_sent true false
	// may_have_been_sent true true
	// response_received true false
	// lost false false
}
