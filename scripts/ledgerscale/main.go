// Command ledgerscale fills a ledger store with small finished tasks
// through the ledger API, and measures a command run again and again: the
// two halves of scripts/ledger-scale.sh, which reports what a store's size
// costs a host's start-up and the ledger commands (a report, not a timed
// test).
//
//	ledgerscale fill -store PATH|URL -tasks N [-workers W] [-nosync]
//	ledgerscale measure -runs N [-label TEXT] -- COMMAND [ARG...]
//	ledgerscale with-postgres -- COMMAND [ARG...]
//
// fill appends N tasks shaped like a trivial `pablo run` (a task record, a
// snapshot-sized decision, four events, one model call, the terminal
// record: 11 records and 3 barriers each) to a bbolt file or a
// postgres:// URL (the password from PGPASSWORD or PGPASSFILE), W tasks at
// a time. measure runs the command N times and prints one line: the
// median and range of its wall time, and of its peak resident set size
// (getrusage of the child: ru_maxrss), with the load average before and
// after. with-postgres starts a throw-away PostgreSQL cluster (Debian's
// server, as the tests start it: a temporary directory, a Unix socket
// only), creates a database, runs the command with LEDGERSCALE_PG_URL
// naming it and PGPASSWORD set, and stops the cluster.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/internal/pgtest"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/ledger/outcome"
	"github.com/pabloagent/pablo/ledger/postgres"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "fill":
		err = fill(os.Args[2:])
	case "measure":
		err = measure(os.Args[2:])
	case "with-postgres":
		err = withPostgres(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ledgerscale:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: ledgerscale fill -store PATH|URL -tasks N [-workers W] [-nosync]\n       ledgerscale measure -runs N [-label TEXT] -- COMMAND [ARG...]\n       ledgerscale with-postgres -- COMMAND [ARG...]")
	os.Exit(2)
}

func fill(args []string) error {
	fs := flag.NewFlagSet("fill", flag.ExitOnError)
	where := fs.String("store", "", "the bbolt file or postgres:// URL to fill")
	tasks := fs.Int("tasks", 0, "how many tasks to append")
	workers := fs.Int("workers", 8, "tasks appended at a time")
	nosync := fs.Bool("nosync", false, "bbolt only: skip fsync while filling")
	fs.Parse(args)
	if *where == "" || *tasks <= 0 || *workers <= 0 {
		return errors.New("fill needs -store and a positive -tasks")
	}
	ctx := context.Background()
	var store ledger.Store
	var err error
	if postgres.IsConnectionString(*where) {
		store, err = postgres.Open(ctx, postgres.Options{URL: *where, MaxConns: int32(min(*workers, 16))})
	} else {
		store, err = ledger.OpenBolt(*where, ledger.BoltOptions{NoSync: *nosync})
	}
	if err != nil {
		return err
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, *workers)
	for range *workers {
		wg.Go(func() {
			for next.Add(1) <= int64(*tasks) {
				if err := smallTask(ctx, store); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		store.Close()
		return err
	}
	return store.Close()
}

// smallTask appends one finished task shaped like a trivial run.
func smallTask(ctx context.Context, store ledger.Store) error {
	r, err := ledger.NewRoot(ctx, ledger.Options{Store: store, InputDigest: "sha256:" + strings.Repeat("0", 64),
		Fingerprint: "sha256:" + strings.Repeat("1", 64), TrustedPayloads: true})
	if err != nil {
		return err
	}
	a := r.RootAgentID()
	if err := r.RecordDecision(ctx, a, "model", authority.Decision{Allowed: true, Layer: "configuration", RuleID: "builtin.configured"}); err != nil {
		return err
	}
	for _, typ := range []string{"run.started", "model.started"} {
		if _, err := r.Append(ctx, a, typ, json.RawMessage(`{"note":"ledgerscale"}`)); err != nil {
			return err
		}
	}
	id, err := r.ReserveModelCall(ctx, a, ledger.ModelCall{Route: "script/script"})
	if err != nil {
		return err
	}
	if err := r.Dispatch(ctx, a, id); err != nil {
		return err
	}
	if err := r.SettleModelCall(ctx, a, id, ledger.ModelSettlement{Status: outcome.Completed, Delivery: outcome.ResponseReceived}); err != nil {
		return err
	}
	for _, typ := range []string{"assistant.text.delta", "model.finished"} {
		if _, err := r.Append(ctx, a, typ, json.RawMessage(`{"text":"done"}`)); err != nil {
			return err
		}
	}
	_, err = r.Finish(ctx, a, ledger.Finish{Outcome: ledger.Outcome{Status: outcome.Completed}})
	return err
}

func measure(args []string) error {
	fs := flag.NewFlagSet("measure", flag.ExitOnError)
	runs := fs.Int("runs", 5, "how many times to run the command")
	label := fs.String("label", "", "what the line is about")
	fs.Parse(args)
	cmdline := fs.Args()
	if len(cmdline) == 0 || *runs <= 0 {
		return errors.New("measure needs a command and a positive -runs")
	}
	before := loadavg()
	var walls []time.Duration
	var rss []int64
	for range *runs {
		cmd := exec.Command(cmdline[0], cmdline[1:]...)
		cmd.Stdout, cmd.Stderr = nil, os.Stderr
		start := time.Now()
		err := cmd.Run()
		wall := time.Since(start)
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			return err
		}
		if err != nil && ee.ExitCode() > 1 {
			// 1 is "an outcome is unknown" for ledger recover: still a run.
			return fmt.Errorf("%s: %v", strings.Join(cmdline, " "), err)
		}
		ru, _ := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		walls = append(walls, wall)
		if ru != nil {
			rss = append(rss, ru.Maxrss)
		}
	}
	slices.Sort(walls)
	slices.Sort(rss)
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d.Microseconds())/1000) }
	mib := func(k int64) string { return fmt.Sprintf("%.1f", float64(k)/1024) }
	fmt.Printf("%-44s wall ms median %s (%s–%s)  peak RSS MiB median %s (%s–%s)  n=%d  load %s → %s\n",
		*label, ms(walls[len(walls)/2]), ms(walls[0]), ms(walls[len(walls)-1]),
		mib(rss[len(rss)/2]), mib(rss[0]), mib(rss[len(rss)-1]), *runs, before, loadavg())
	return nil
}

func withPostgres(args []string) error {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		return errors.New("with-postgres needs a command")
	}
	ctx := context.Background()
	c, err := pgtest.Start(ctx)
	if err != nil {
		return err
	}
	defer c.Stop()
	db, err := c.CreateDB(ctx, "ledgerscale")
	if err != nil {
		return err
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), "LEDGERSCALE_PG_URL="+c.URL(db, "postgres"), "PGPASSWORD="+c.Password)
	return cmd.Run()
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
