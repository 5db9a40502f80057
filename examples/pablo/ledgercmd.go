package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"slices"
	"time"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/approval"
	"github.com/pabloagent/pablo/authority"
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
	value := storeValue(h, p)
	if value == "" {
		return usagef("--store (or PABLO_STORE) is required")
	}
	if len(p.args) > 1 {
		return usagef("ledger %s takes at most one TASK_ID, got %d arguments", args[0], len(p.args))
	}
	// A read command never creates or migrates a store.
	store, err := openStore(ctx, h, nil, value, true)
	if errors.Is(err, fs.ErrNotExist) {
		return &exitError{code: 2, err: fmt.Errorf("no ledger store at %s", value)}
	}
	if err != nil {
		return &exitError{code: 2, err: fmt.Errorf("open the ledger store: %w", err)}
	}
	defer store.Close()
	// The tasks are reported one at a time as they are read, so a whole
	// store costs one task's memory: one task's report, or every task's
	// in ID order.
	var each iter.Seq2[ledger.TaskReport, error]
	if len(p.args) == 1 {
		t, err := ledger.RecoverTask(ctx, store, p.args[0])
		if errors.Is(err, ledger.ErrLeaseLive) {
			// Another host runs the task: its work is not abandoned.
			return &exitError{code: 3, err: err}
		}
		if err != nil {
			return err
		}
		each = func(yield func(ledger.TaskReport, error) bool) { yield(t, nil) }
	} else {
		each = ledger.RecoverEach(ctx, store)
	}
	show, jsonOut := args[0] == "show", p.bools["json"]
	// The JSON is the Report's (then, for show, the approvals; for
	// recover, the survivors), written element by element.
	if jsonOut {
		io.WriteString(h.stdout, `{"tasks":[`)
	}
	var live []ledger.Lease
	approvals := []approval.Record{}
	unknown, first := false, true
	for t, err := range each {
		if le, ok := errors.AsType[*ledger.LeaseError](err); ok && !le.Lost {
			live = append(live, le.Lease)
			continue
		}
		if err != nil {
			return err
		}
		unknown = unknown || len(t.Unknown) > 0
		var recs []approval.Record
		if show {
			if recs, err = approval.Records(ctx, store, t.TaskID); err != nil {
				return err
			}
		}
		if jsonOut {
			b, _ := json.Marshal(t)
			if !first {
				b = append([]byte{','}, b...)
			}
			h.stdout.Write(b)
			approvals = append(approvals, recs...)
		} else {
			// show details calls for one task; recover always.
			printTask(h, t, !show || len(p.args) == 1, show, recs)
		}
		first = false
	}
	if jsonOut {
		io.WriteString(h.stdout, "]")
		if len(live) > 0 {
			b, _ := json.Marshal(live)
			fmt.Fprintf(h.stdout, `,"live":%s`, b)
		}
	} else {
		printLive(h, live)
	}
	if show {
		if jsonOut {
			if len(approvals) > 0 {
				b, _ := json.Marshal(approvals)
				fmt.Fprintf(h.stdout, `,"approvals":%s`, b)
			}
			io.WriteString(h.stdout, "}\n")
		}
		return nil
	}
	// recover also reports the recorded process groups that outlived their
	// host, and with --reap kills them.
	survivors, err := pablo.ProcessGroupSurvivors(ctx, store, p.bools["reap"])
	if err != nil {
		if jsonOut {
			io.WriteString(h.stdout, "}\n")
		}
		return fmt.Errorf("process groups: %w", err)
	}
	if len(p.args) == 1 {
		survivors = slices.DeleteFunc(survivors, func(s pablo.SurvivingGroup) bool { return s.TaskID != p.args[0] })
	}
	if jsonOut {
		b, _ := json.Marshal(survivors)
		fmt.Fprintf(h.stdout, `,"surviving_process_groups":%s,"reaped":%t}`+"\n", b, p.bools["reap"])
	} else {
		verb := "ALIVE "
		if p.bools["reap"] {
			verb = "reaped"
		}
		for _, s := range survivors {
			fmt.Fprintf(h.stdout, "    %s process group %d (%s) of task %s: pids %v\n", verb, s.Pgid, s.Program, s.TaskID, s.Pids)
		}
	}
	// recover exits 1 when any outcome is unknown, so a script can act on it.
	if unknown {
		return &exitError{code: 1}
	}
	return nil
}

// printReport is the text form of a ledger report; calls are listed when
// detailed, each dispatch snapshot's entries with snapshots, and each
// task's approval requests (approvals, by task ID) always.
func printReport(h *host, report ledger.Report, detailed, snapshots bool, approvals map[string][]approval.Record) {
	for _, t := range report.Tasks {
		printTask(h, t, detailed, snapshots, approvals[t.TaskID])
	}
	printLive(h, report.Live)
}

// printTask is the text form of one task's report, as printReport gives
// it, followed by its approval requests.
func printTask(h *host, t ledger.TaskReport, detailed, snapshots bool, approvals []approval.Record) {
	end := "interrupted (no terminal outcome recorded)"
	if t.Outcome != nil {
		end = string(t.Outcome.Status)
	}
	fmt.Fprintf(h.stdout, "task %s  %s\n  fingerprint %s\n", t.TaskID, end, t.Fingerprint)
	for _, sn := range t.Snapshots {
		printSnapshot(h, t, sn, snapshots)
	}
	fmt.Fprintf(h.stdout, "  %d events, %d completed, %d unknown, %d retryable\n", t.Events, len(t.Completed), len(t.Unknown), len(t.Retryable))
	if detailed {
		for _, c := range t.Completed {
			fmt.Fprintf(h.stdout, "    completed  %-5s %-24s %s%s\n", c.Kind, c.Name, c.Status, decided(c.Decision))
		}
		for _, c := range t.Unknown {
			fmt.Fprintf(h.stdout, "    UNKNOWN    %-5s %-24s %s: do not replay; reconcile%s\n", c.Kind, c.Name, unknownState(c), decided(c.Decision))
		}
		for _, c := range t.Retryable {
			fmt.Fprintf(h.stdout, "    retryable  %-5s %-24s admitted, never dispatched%s\n", c.Kind, c.Name, decided(c.Decision))
		}
		for _, d := range t.Decisions {
			fmt.Fprintf(h.stdout, "    decision   %-30s%s\n", d.Capability, decided(&d.Decision))
		}
	}
	printApprovals(h, approvals)
}

// printLive is the text form of the tasks in flight in another process.
func printLive(h *host, live []ledger.Lease) {
	for _, l := range live {
		fmt.Fprintf(h.stdout, "task %s  in flight: owned by %s until %s (lease live; its work is reported once the lease has expired)\n", l.TaskID, l.Owner, l.Expires.UTC().Format(time.RFC3339))
	}
}

// unknownState says, as the JSON does, why an outcome is unknown: a call
// dispatched and never settled, or one settled with an uncertain delivery.
func unknownState(c ledger.CallReport) string {
	if c.State == ledger.CallSettled {
		return fmt.Sprintf("settled %s, delivery %s", c.Status, c.Delivery)
	}
	return string(c.State) + ", never settled"
}

// decided is the text form of a call's recorded decision, as --json gives
// it: who allowed or denied the call, by which rule.
func decided(d *authority.Decision) string {
	if d == nil {
		return ""
	}
	verdict := "denied"
	if d.Allowed {
		verdict = "allowed"
	}
	if d.Layer == "approval" {
		// An approval record's reason names the call it is bound to (ID,
		// arguments digest, effect, masked resources): who approved what.
		return fmt.Sprintf("  (%s by layer %q rule %q: %s)", verdict, d.Layer, d.RuleID, d.Reason)
	}
	return fmt.Sprintf("  (%s by layer %q rule %q)", verdict, d.Layer, d.RuleID)
}

// printSnapshot is the text form of one agent's dispatch snapshot: its
// digest and whose it is and, with entries, one line per admitted entry
// with its deciding layer and rule and its attributes.
func printSnapshot(h *host, t ledger.TaskReport, sn ledger.SnapshotReport, entries bool) {
	who := "root agent"
	if sn.AgentID != t.RootAgentID {
		who = "agent " + sn.AgentID
	}
	if sn.Snapshot == nil {
		fmt.Fprintf(h.stdout, "  snapshot %s of %s INVALID: %s\n", sn.Digest, who, sn.Invalid)
		return
	}
	fmt.Fprintf(h.stdout, "  snapshot %s of %s, %d admitted\n", sn.Digest, who, len(sn.Snapshot.Admitted))
	if !entries {
		return
	}
	for _, e := range sn.Snapshot.Admitted {
		line := fmt.Sprintf("    %-28s %-11s", e.ID, e.Kind)
		if e.Layer != "" || e.Rule != "" {
			line += fmt.Sprintf(" allowed by layer %q rule %q", e.Layer, e.Rule)
		}
		keys := make([]string, 0, len(e.Attributes))
		for k := range e.Attributes {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			line += " " + k + "=" + e.Attributes[k]
		}
		fmt.Fprintln(h.stdout, line)
	}
}
