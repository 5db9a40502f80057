package postgres_test

import (
	"context"
	"fmt"
	"log"

	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/ledger/postgres"
)

// A host keeps its tasks' ledgers in a database that every host of its
// fleet shares. The URL carries no password: it comes from PGPASSFILE or
// PGPASSWORD (or Options.Password, from a credential for ledger.store).
func ExampleOpen() {
	ctx := context.Background()
	store, err := postgres.Open(ctx, postgres.Options{URL: "postgres://pablo@db.internal/ledger?sslmode=verify-full"})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	root, err := ledger.NewRoot(ctx, ledger.Options{Store: store})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("task", root.ID(), "owned by", store.Owner())
}

// Another host recovers a task whose owner died: once its lease has
// expired, the report lists its completed, unknown and retryable work;
// while the lease is live it is refused with ledger.ErrLeaseLive.
func ExampleStore_Lease() {
	ctx := context.Background()
	store, err := postgres.Open(ctx, postgres.Options{URL: "postgres://pablo@db.internal/ledger", ReadOnly: true})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	rep, err := ledger.RecoverTask(ctx, store, "TASK_ID")
	if err != nil {
		log.Fatal(err) // errors.Is(err, ledger.ErrLeaseLive): still running elsewhere
	}
	fmt.Println(len(rep.Unknown), "unknown outcomes: reconcile them, never replay")
}

// A host takes over an abandoned task's lease; from then on the database
// refuses every write of the previous owner (ledger.ErrLeaseLost).
func ExampleStore_Claim() {
	ctx := context.Background()
	store, err := postgres.Open(ctx, postgres.Options{URL: "postgres://pablo@db.internal/ledger"})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	lease, err := store.Claim(ctx, "TASK_ID")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("fencing token", lease.Token)
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
