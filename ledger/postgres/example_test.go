package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/ledger/outcome"
	"github.com/pabloagent/pablo/ledger/postgres"
)

// exampleDB returns the options of a fresh database of this package's test
// server, so the examples run; a host writes its own URL there, such as
// "postgres://pablo@db.internal/ledger?sslmode=verify-full", with the
// password from PGPASSFILE or PGPASSWORD (or Options.Password, from a
// credential for ledger.store).
func exampleDB(name string) postgres.Options {
	if cluster == nil {
		log.Fatal("no PostgreSQL server (see the message at the start of the run)")
	}
	db, err := cluster.CreateDB(context.Background(), name)
	if err != nil {
		log.Fatal(err)
	}
	return postgres.Options{URL: cluster.URL(db, "postgres"), Password: cluster.Password}
}

// A host keeps its tasks' ledgers in a database that every host of its
// fleet shares. A task's first durable write takes its lease: the task is
// this store's until the task ends or the store closes.
func ExampleOpen() {
	ctx := context.Background()
	store, err := postgres.Open(ctx, exampleDB("example_open"))
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	root, err := ledger.NewRoot(ctx, ledger.Options{Store: store})
	if err != nil {
		log.Fatal(err)
	}
	if err := root.Flush(ctx); err != nil {
		log.Fatal(err)
	}
	lease, err := store.Lease(ctx, root.ID())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("live:", lease.Live, "owned by this store:", lease.Owner == store.Owner())
	// Output:
	// live: true owned by this store: true
}

// Another host recovers a task: while its owner's lease is live the task
// is in flight, and recovery refuses it with ledger.ErrLeaseLive; once
// the lease has ended (expired, or released when the task settled), the
// report lists its completed, unknown and retryable work.
func ExampleStore_Lease() {
	ctx := context.Background()
	opts := exampleDB("example_lease")
	owner, err := postgres.Open(ctx, opts)
	if err != nil {
		log.Fatal(err)
	}
	defer owner.Close()
	root, err := ledger.NewRoot(ctx, ledger.Options{Store: owner, TaskID: "T-1", RootAgentID: "root"})
	if err != nil {
		log.Fatal(err)
	}
	if err := root.Flush(ctx); err != nil {
		log.Fatal(err)
	}

	opts.ReadOnly = true
	reader, err := postgres.Open(ctx, opts)
	if err != nil {
		log.Fatal(err)
	}
	defer reader.Close()
	_, err = ledger.RecoverTask(ctx, reader, "T-1")
	fmt.Println("while it runs:", errors.Is(err, ledger.ErrLeaseLive))

	if _, err := root.Finish(ctx, "root", ledger.Finish{Outcome: ledger.Outcome{Status: outcome.Completed}}); err != nil {
		log.Fatal(err)
	}
	rep, err := ledger.RecoverTask(ctx, reader, "T-1")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("once it settled:", rep.Outcome.Status, len(rep.Unknown), "unknown outcomes")
	// Output:
	// while it runs: true
	// once it settled: completed 0 unknown outcomes
}

// A host takes over a task whose lease has ended; its lease carries a
// fencing token newer than any before it, and from then on the database
// refuses every write of a previous owner (ledger.ErrLeaseLost).
func ExampleStore_Claim() {
	ctx := context.Background()
	opts := exampleDB("example_claim")
	first, err := postgres.Open(ctx, opts)
	if err != nil {
		log.Fatal(err)
	}
	root, err := ledger.NewRoot(ctx, ledger.Options{Store: first, TaskID: "T-1"})
	if err != nil {
		log.Fatal(err)
	}
	if err := root.Flush(ctx); err != nil {
		log.Fatal(err)
	}
	before, _ := first.Lease(ctx, "T-1")
	first.Close() // releases its leases

	next, err := postgres.Open(ctx, opts)
	if err != nil {
		log.Fatal(err)
	}
	defer next.Close()
	lease, err := next.Claim(ctx, "T-1")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("claimed:", lease.Live, "newer token:", lease.Token > before.Token)
	// Output:
	// claimed: true newer token: true
}

// A host told a store value decides whether it names a database or a
// bbolt file: a connection string that is not an admissible URL is
// refused, never created as a file of that name.
func ExampleIsConnectionString() {
	for _, v := range []string{"/var/lib/pablo/ledger.db", "host=db user=pablo", "postgress://db/ledger", "postgres://db/ledger"} {
		fmt.Println(postgres.IsConnectionString(v), postgres.CheckURL(v) == nil)
	}
	// Output:
	// false false
	// true false
	// true false
	// true true
}
