// Command ledgerscale fills a ledger store with small finished tasks
// through the ledger API, and measures a command run again and again: the
// two halves of scripts/ledger-scale.sh, which reports what a store's size
// costs a host's start-up and the ledger commands (a report, not a timed
// test).
//
//	ledgerscale fill -store PATH|URL -tasks N [-workers W] [-nosync]
//	ledgerscale measure -runs N -labels "A[;B...]" -- COMMAND [ARG...] [::: COMMAND [ARG...]]...
//	ledgerscale with-postgres -- COMMAND [ARG...]
//
// fill appends N tasks shaped like a trivial `pablo run` (a task record, an
// agent, a decision, four events, one model call, the terminal
// record) to a bbolt file or a postgres:// URL (the password from
// PGPASSWORD or PGPASSFILE), W tasks at a time. measure runs each command
// N times, round by round (each command once a round, so the load of a
// shared machine falls on all alike), and prints a line for each: the
// median and range of its wall time and of its peak resident set size
// (getrusage of the child: ru_maxrss), with the load average before and
// after. with-postgres starts a throw-away PostgreSQL cluster (Debian's
// server, as the tests start it: a temporary directory, a Unix socket
// only), creates two databases, runs the command with LEDGERSCALE_PG_URL
// and LEDGERSCALE_PG_FRESH_URL naming them and PGPASSWORD set, and stops
// the cluster.
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
	fmt.Fprintln(os.Stderr, "usage: ledgerscale fill -store PATH|URL -tasks N [-workers W] [-nosync]\n       ledgerscale measure -runs N -labels 'A[;B...]' -- COMMAND [ARG...] [::: COMMAND [ARG...]]...\n       ledgerscale with-postgres -- COMMAND [ARG...]")
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
	runs := fs.Int("runs", 5, "how many times to run each command")
	labels := fs.String("labels", "", "what each command is, separated by semicolons")
	fs.Parse(args)
	var cmds [][]string
	cmd := []string{}
	for _, a := range fs.Args() {
		if a == ":::" {
			cmds, cmd = append(cmds, cmd), []string{}
			continue
		}
		cmd = append(cmd, a)
	}
	cmds = append(cmds, cmd)
	names := strings.Split(*labels, ";")
	if len(names) != len(cmds) || *runs <= 0 || slices.ContainsFunc(cmds, func(c []string) bool { return len(c) == 0 }) {
		return errors.New("measure needs a positive -runs, and one label for each command (commands separated by :::)")
	}
	before := loadavg()
	walls := make([][]time.Duration, len(cmds))
	rss := make([][]int64, len(cmds))
	// Round by round, each command once: the load a shared machine adds
	// falls on every command alike.
	for range *runs {
		for i, c := range cmds {
			wall, maxrss, err := runOnce(c)
			if err != nil {
				return err
			}
			walls[i], rss[i] = append(walls[i], wall), append(rss[i], maxrss)
		}
	}
	after := loadavg()
	for i := range cmds {
		w, r := walls[i], rss[i]
		slices.Sort(w)
		slices.Sort(r)
		ms := func(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d.Microseconds())/1000) }
		mib := func(k int64) string { return fmt.Sprintf("%.1f", float64(k)/1024) }
		fmt.Printf("%-44s wall ms median %s (%s–%s)  peak RSS MiB median %s (%s–%s)  n=%d  load %s → %s\n",
			names[i], ms(w[len(w)/2]), ms(w[0]), ms(w[len(w)-1]), mib(r[len(r)/2]), mib(r[0]), mib(r[len(r)-1]), *runs, before, after)
	}
	return nil
}

// runOnce runs a command with its output discarded and returns its wall
// time and peak RSS in KiB. Exit 1 is a run (ledger recover exits 1 when
// an outcome is unknown); any other failure is an error.
func runOnce(cmdline []string) (time.Duration, int64, error) {
	cmd := exec.Command(cmdline[0], cmdline[1:]...)
	cmd.Stderr = os.Stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	var ee *exec.ExitError
	if err != nil && (!errors.As(err, &ee) || ee.ExitCode() > 1) {
		return 0, 0, fmt.Errorf("%s: %v", strings.Join(cmdline, " "), err)
	}
	var maxrss int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		maxrss = ru.Maxrss
	}
	return wall, maxrss, nil
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
	fresh, err := c.CreateDB(ctx, "fresh")
	if err != nil {
		return err
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), "LEDGERSCALE_PG_URL="+c.URL(db, "postgres"), "LEDGERSCALE_PG_FRESH_URL="+c.URL(fresh, "postgres"), "PGPASSWORD="+c.Password)
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
