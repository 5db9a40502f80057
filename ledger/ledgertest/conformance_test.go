package ledgertest_test

import (
	"path/filepath"
	"testing"

	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/ledger/ledgertest"
)

// TestMemoryStoreConforms is how a host runs the suite over its own store,
// from a test of its own.
func TestMemoryStoreConforms(t *testing.T) {
	ledgertest.Run(t, ledgertest.Factory{Open: func(*testing.T) ledger.Store { return ledger.NewMemoryStore() }})
}

func TestBoltStoreConforms(t *testing.T) {
	var path string
	open := func(t *testing.T) ledger.Store {
		s, err := ledger.OpenBolt(path, ledger.BoltOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	ledgertest.Run(t, ledgertest.Factory{
		Open: func(t *testing.T) ledger.Store {
			path = filepath.Join(t.TempDir(), "ledger.db")
			return open(t)
		},
		Reopen: open,
	})
}
