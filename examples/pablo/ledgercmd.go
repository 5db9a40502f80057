package main

import (
	"context"
	"fmt"

	"github.com/pabloagent/pablo/ledger"
)

// ledgerCommand implements `pablo ledger show|recover --store PATH`.
func ledgerCommand(ctx context.Context, args []string, h *host) error {
	if len(args) == 0 || (args[0] != "show" && args[0] != "recover") {
		return usagef("usage: pablo ledger show|recover --store PATH [TASK_ID] [--json]")
	}
	p, err := parseArgs(args[1:], "ledger "+args[0])
	if err != nil {
		return err
	}
	path := p.one("store")
	if path == "" {
		return usagef("--store is required")
	}
	store, err := ledger.OpenBolt(path, ledger.BoltOptions{})
	if err != nil {
		return fmt.Errorf("open the ledger store: %w", err)
	}
	defer store.Close()
	var report ledger.Report
	if len(p.args) == 1 {
		t, err := ledger.RecoverTask(ctx, store, p.args[0])
		if err != nil {
			return err
		}
		report.Tasks = []ledger.TaskReport{t}
	} else if report, err = ledger.Recover(ctx, store); err != nil {
		return err
	}
	if p.bools["json"] {
		writeJSON(h, report)
		return nil
	}
	for _, t := range report.Tasks {
		outcome := "interrupted (no terminal outcome recorded)"
		if t.Outcome != nil {
			outcome = string(t.Outcome.Status)
		}
		fmt.Fprintf(h.stdout, "task %s  %s\n  fingerprint %s\n  %d events, %d completed, %d unknown, %d retryable\n",
			t.TaskID, outcome, t.Fingerprint, t.Events, len(t.Completed), len(t.Unknown), len(t.Retryable))
		if args[0] == "recover" || len(p.args) == 1 {
			for _, c := range t.Completed {
				fmt.Fprintf(h.stdout, "    completed  %-5s %-24s %s%s\n", c.Kind, c.Name, c.Status, decided(c.Decision))
			}
			for _, c := range t.Unknown {
				fmt.Fprintf(h.stdout, "    UNKNOWN    %-5s %-24s dispatched, never settled: do not replay; reconcile%s\n", c.Kind, c.Name, decided(c.Decision))
			}
			for _, c := range t.Retryable {
				fmt.Fprintf(h.stdout, "    retryable  %-5s %-24s admitted, never dispatched%s\n", c.Kind, c.Name, decided(c.Decision))
			}
			for _, d := range t.Decisions {
				fmt.Fprintf(h.stdout, "    decision   %-30s%s\n", d.Capability, decided(&d.Decision))
			}
		}
	}
	return nil
}

// decided is the text form of a call's recorded decision, as --json gives
// it: who allowed or denied the call, by which rule.
func decided(d *ledger.Decision) string {
	if d == nil {
		return ""
	}
	verdict := "denied"
	if d.Allowed {
		verdict = "allowed"
	}
	return fmt.Sprintf("  (%s by layer %q rule %q)", verdict, d.Layer, d.RuleID)
}
