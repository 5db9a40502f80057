package postgres_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/pabloagent/pablo/internal/pgtest"
	"github.com/pabloagent/pablo/ledger/postgres"
)

// cluster is the one throw-away server of this package's test run, started
// by TestMain and torn down after every test (nil when none could start).
// It is set once, before any test runs, and only read after.
var cluster *pgtest.Cluster

// childEnv switches the test binary into a host process of the two-host
// tests (see hosts_test.go).
const childEnv = "PABLO_PG_HOST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(runHostChild())
	}
	c, err := pgtest.Start(context.Background())
	if err != nil {
		fmt.Fprintf(os.Stderr, "\n!!! ledger/postgres: NO POSTGRESQL SERVER, the PostgreSQL store tests SKIP: %v\n\n", err)
	}
	cluster = c
	code := m.Run()
	if c != nil {
		pid := c.PID()
		if err := c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "ledger/postgres: tearing down the test cluster:", err)
			code = 1
		}
		if pgtest.Alive(pid) {
			fmt.Fprintf(os.Stderr, "ledger/postgres: the test cluster's postmaster %d outlived the tests\n", pid)
			code = 1
		}
	}
	os.Exit(code)
}

// testDB creates a fresh database and returns its URL (no password) and
// the options that open it.
func testDB(t testing.TB) postgres.Options {
	t.Helper()
	if cluster == nil {
		t.Skip("no PostgreSQL server (see the message at the start of the run)")
	}
	name, err := cluster.CreateDB(context.Background(), t.Name())
	if err != nil {
		t.Fatal(err)
	}
	return postgres.Options{URL: cluster.URL(name, "postgres"), Password: cluster.Password}
}

func openStore(t testing.TB, opts postgres.Options) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
