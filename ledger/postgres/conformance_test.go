package postgres_test

import (
	"testing"

	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/ledger/ledgertest"
	"github.com/pabloagent/pablo/ledger/postgres"
)

func TestPostgresStoreConforms(t *testing.T) {
	var opts postgres.Options
	open := func(t *testing.T) ledger.Store { return openStore(t, opts) }
	ledgertest.Run(t, ledgertest.Factory{
		Open: func(t *testing.T) ledger.Store {
			opts = testDB(t)
			return open(t)
		},
		Reopen: open,
	})
}
