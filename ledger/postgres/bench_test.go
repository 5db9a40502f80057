package postgres_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/ledger/outcome"
	"github.com/pabloagent/pablo/ledger/postgres"
)

// BenchmarkSequentialToolCall is one sequential task's tool call (admit,
// dispatch, settle: two barriers) on each durable store, fsync on:
// go test -bench SequentialToolCall -count 8 | benchstat -col /store.
func BenchmarkSequentialToolCall(b *testing.B) {
	allow := authority.Decision{Allowed: true, Layer: "policy", RuleID: "r"}
	run := func(b *testing.B, store ledger.Store) {
		r, err := ledger.NewRoot(bg, ledger.Options{Store: store, RootAgentID: "root"})
		if err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := 0; b.Loop(); i++ {
			id := strconv.Itoa(i)
			if err := r.AdmitToolCall(bg, "root", ledger.ToolCall{ID: id, Name: "fs.read", Decision: allow}); err != nil {
				b.Fatal(err)
			}
			if err := r.Dispatch(bg, "root", id); err != nil {
				b.Fatal(err)
			}
			if err := r.SettleToolCall(bg, "root", id, ledger.ToolSettlement{Status: outcome.ToolCompleted, Delivery: outcome.ResponseReceived}); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("store=bbolt", func(b *testing.B) {
		s, err := ledger.OpenBolt(filepath.Join(b.TempDir(), "ledger.db"), ledger.BoltOptions{})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		run(b, s)
	})
	b.Run("store=postgres", func(b *testing.B) {
		s := openStore(b, testDB(b))
		run(b, s)
	})
}

// loadTasks runs n tasks at once on store for d, each appending one event
// and a barrier at a time, and returns how many events were made durable.
func loadTasks(store ledger.Store, n int, d time.Duration) (uint64, error) {
	var events atomic.Uint64
	var wg sync.WaitGroup
	errs := make(chan error, n)
	deadline := time.Now().Add(d)
	for range n {
		wg.Go(func() {
			r, err := ledger.NewRoot(bg, ledger.Options{Store: store, RootAgentID: "root"})
			if err != nil {
				errs <- err
				return
			}
			for time.Now().Before(deadline) {
				if _, err := r.Append(bg, "root", "e", nil); err != nil {
					errs <- err
					return
				}
				if err := r.Flush(bg); err != nil {
					errs <- err
					return
				}
				events.Add(1)
			}
		})
	}
	wg.Wait()
	close(errs)
	return events.Load(), <-errs
}

// TestFigureThroughputAcrossTwoHosts measures durable events/s with 1, 4
// and 16 concurrent tasks split across two processes (this one and a host
// child) sharing one database, each event its own barrier, and how many
// commits carried them: fewer commits than events is group commit across
// tasks. Run with PABLO_PG_FIGURES=1; it is a figure, not a check.
func TestFigureThroughputAcrossTwoHosts(t *testing.T) {
	if os.Getenv("PABLO_PG_FIGURES") == "" {
		t.Skip("a figure: set PABLO_PG_FIGURES=1")
	}
	const d = 3 * time.Second
	for _, n := range []int{1, 4, 16} {
		opts := testDB(t)
		s := openStore(t, opts)
		var child *host
		if n > 1 {
			child = startHost(t, "load:"+strconv.Itoa(n/2)+":"+d.String(), opts)
		}
		local := n - n/2
		if n == 1 {
			local = 1
		}
		mine, err := loadTasks(s, local, d)
		if err != nil {
			t.Fatal(err)
		}
		var theirs, theirCommits uint64
		if child != nil {
			fmt.Sscanf(child.line(t), "%d %d", &theirs, &theirCommits)
		}
		total := mine + theirs
		t.Logf("%2d tasks across %d process(es): %6.0f events/s durable; %d events in %d commits (%.1f a commit)",
			n, map[bool]int{true: 2, false: 1}[n > 1], float64(total)/d.Seconds(), total, s.Commits()+theirCommits,
			float64(total)/float64(s.Commits()+theirCommits))
		s.Close()
	}
}

func runLoadChild(store *postgres.Store, spec string) int {
	var n int
	var d time.Duration
	var ds string
	fmt.Sscanf(spec, "%d:%s", &n, &ds)
	d, _ = time.ParseDuration(ds)
	events, err := loadTasks(store, n, d)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	fmt.Printf("%d %d\n", events, store.Commits())
	return 0
}
