package ledgertest_test

import (
	"testing"

	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/ledger/ledgertest"
)

// A host's own store runs the suite from a test of its own; here the
// memory store stands in for it.
func ExampleRun() {
	test := func(t *testing.T) {
		ledgertest.Run(t, ledgertest.Factory{
			Open: func(*testing.T) ledger.Store { return ledger.NewMemoryStore() },
		})
	}
	_ = test // in a _test.go file: func TestMyStore(t *testing.T) { ... }
}
