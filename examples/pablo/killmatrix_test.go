package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// killPoints are the barriers of crashTask, each a PABLO_FAULT spec: the
// first model call before and after its dispatch is durable, and each
// tool call (the root's fs.write, MCP call, shell append and spawn, and
// the child's own fs.write) before its dispatch, after it, before its
// settlement (the effect happened, nothing says so) and after it.
func killPoints() []string {
	points := []string{"before-dispatch:model:*:1", "after-dispatch:model:*:1"}
	for _, call := range []string{"fs.write:1", "mcp/counter/bump:1", "shell.run:1", "subagent:1", "fs.write:2"} {
		for _, when := range []string{"before-dispatch", "after-dispatch", "before-settle", "after-settle"} {
			points = append(points, when+":tool:"+call)
		}
	}
	return points
}

// TestKillAtEveryBarrierLeavesALedgerThatTellsWhatHappened kills a real
// `pablo run` (SIGKILL of its process group) at each barrier of killPoints
// on a bbolt ledger, and checks what `ledger recover --json` says against
// what the world shows: a call killed before its dispatch was durable left
// no trace (or, while the child runs beside the root, was admitted by the
// other agent's barrier: retryable) and no effect; one killed after it is
// an unknown outcome whose
// effect did not happen (after-dispatch) or did, exactly once
// (before-settle); one killed after its settlement is completed with its
// effect exactly once. Every effect the world shows belongs to a call the
// ledger lists as completed or unknown, the MCP server saw every key at
// most once, and nothing is retryable that ran with the root alone: no
// call here is admitted durably by a barrier of its own before its
// dispatch. Then `pablo resume` continues the task to its end
// (checkResumed), and resuming it once more is refused as task_settled.
func TestKillAtEveryBarrierLeavesALedgerThatTellsWhatHappened(t *testing.T) {
	bin, counter := crashBinaries(t)
	for _, spec := range killPoints() {
		t.Run(spec, func(t *testing.T) {
			t.Parallel()
			c := newCrashTask(t, counter)
			store := filepath.Join(c.dir, "ledger.db")
			c.killAt(t, bin, store, spec)
			rep := c.recover(t, bin, store)
			if len(rep.Tasks) != 1 || rep.Tasks[0].Outcome != nil {
				t.Fatalf("want one task without an outcome: %+v", rep)
			}
			was := c.effects(t)
			checkKillPoint(t, spec, &rep, was)
			_, obj := c.resume(t, bin, store, rep.Tasks[0].TaskID)
			after := c.recover(t, bin, store)
			checkResumed(t, spec, &rep, was, obj, &after, c.effects(t))
			if code, again := c.resume(t, bin, store, rep.Tasks[0].TaskID); code != 2 || !strings.Contains(again.raw, "task_settled") {
				t.Errorf("resuming the settled task again: exit %d %s, want 2 and task_settled", code, again.raw)
			}
		})
	}
}

// checkKillPoint checks the recovery report of a task killed at spec
// against the effects the world shows.
func checkKillPoint(t *testing.T, spec string, rep *crashReport, e effects) {
	t.Helper()
	task := rep.Tasks[0]
	root := func(c recoveredRef) bool { return c.AgentID == task.RootAgentID }
	named := func(name string, ofRoot bool) func(recoveredRef) bool {
		return func(c recoveredRef) bool { return c.Name == name && root(c) == ofRoot }
	}
	// A call's admission is durable with the task's next barrier: its own
	// dispatch, or, while the child runs beside the root, a barrier of the
	// other agent, and a kill before the call's dispatch then leaves it
	// admitted and never dispatched (retryable) whichever agent got there
	// first. Only the root's calls of that time (its model calls, its
	// subagent calls) and the child's can be; the root's calls before the
	// spawn ran with no other agent to carry them.
	concurrent := false
	for _, a := range task.Agents {
		concurrent = concurrent || a.ParentID != ""
	}
	for _, c := range task.Retryable {
		if !concurrent || root(c) && c.Kind == "tool" && c.Name != "subagent" {
			t.Errorf("retryable call where no other agent's barrier could carry its admission: %+v", c)
		}
	}
	// Each effect against its call's class.
	_, mcpCall := rep.class(named("mcp/counter/bump", true))
	sides := sideEffects(rep, e)
	for _, s := range sides {
		class, _ := rep.class(s.call)
		switch {
		case class == "completed" && s.applied != 1:
			t.Errorf("%s is completed but the world shows it %d times", s.label, s.applied)
		case class == "" && s.applied != 0:
			t.Errorf("%s left no trace in the ledger but the world shows it %d times", s.label, s.applied)
		case class == "retryable" && s.applied != 0:
			t.Errorf("%s was never dispatched but the world shows it %d times", s.label, s.applied)
		case s.applied > 1:
			t.Errorf("%s happened %d times", s.label, s.applied)
		}
	}
	for key, n := range e.calls {
		if n != 1 {
			t.Errorf("the MCP server saw key %s %d times", key, n)
		}
		if key != mcpCall.IdempotencyKey {
			t.Errorf("the MCP server saw key %s, the ledger's call has %q", key, mcpCall.IdempotencyKey)
		}
	}
	// The call killed at its barrier, by the barrier's phase.
	parts := strings.Split(spec, ":")
	when, kind, name := parts[0], parts[1], parts[2]
	var target func(recoveredRef) bool
	applied := -1 // unknown for the model and the spawn
	switch {
	case kind == "model":
		target = func(c recoveredRef) bool { return c.Kind == "model" && root(c) }
	default:
		target = named(name, parts[3] == "1")
		for _, s := range sides {
			if s.label == name+":"+parts[3] {
				applied = s.applied
			}
		}
	}
	class, _ := rep.class(target)
	want, wantApplied := map[string]string{"before-dispatch": "", "after-dispatch": "unknown", "before-settle": "unknown", "after-settle": "completed"}[when], map[string]int{"before-dispatch": 0, "after-dispatch": 0, "before-settle": 1, "after-settle": 1}[when]
	if when == "before-dispatch" && class == "retryable" && concurrent {
		want = class // admitted by the other agent's barrier, as above
	}
	if class != want {
		t.Errorf("the ledger calls the %s call %q, want %q: %+v", when, class, want, task)
	}
	if applied >= 0 && applied != wantApplied {
		t.Errorf("killed %s, the world shows the effect %d times, want %d", when, applied, wantApplied)
	}
}

// TestKillAtEveryBarrierLeavesAPostgresLedgerThatTellsWhatHappened is the
// kill matrix on a PostgreSQL ledger: each killed host's task is refused
// to a second host while the dead host's lease is live (`ledger recover`
// and `pablo resume` exit 3), and once it expired the second host's
// `ledger recover` says what the world shows, as on bbolt, and its
// `pablo resume` takes the task over and continues it (checkResumed).
func TestKillAtEveryBarrierLeavesAPostgresLedgerThatTellsWhatHappened(t *testing.T) {
	bin, counter := crashBinaries(t)
	for _, spec := range killPoints() {
		t.Run(spec, func(t *testing.T) {
			t.Parallel()
			u, cluster := pgDB(t)
			c := newCrashTask(t, counter)
			c.env = []string{"PGPASSWORD=" + cluster.Password}
			c.killAt(t, bin, u, spec)
			rep := c.recover(t, bin, u, leaseExpired)
			if len(rep.Tasks) != 1 || rep.Tasks[0].Outcome != nil {
				t.Fatalf("want one task without an outcome: %+v", rep)
			}
			live := exec.Command(bin, "ledger", "recover", "--store", u, rep.Tasks[0].TaskID)
			live.Env = append(append(os.Environ(), c.env...), c.atKill())
			if out, err := live.CombinedOutput(); exitCode(err) != 3 {
				t.Errorf("recover while the dead host's lease is live: %v %s, want exit 3", err, out)
			}
			was := c.effects(t)
			checkKillPoint(t, spec, &rep, was)
			if code, obj := c.resume(t, bin, u, rep.Tasks[0].TaskID, c.atKill()); code != 3 {
				t.Errorf("resume while the dead host's lease is live: exit %d %s, want 3", code, obj.raw)
			}
			_, obj := c.resume(t, bin, u, rep.Tasks[0].TaskID, leaseExpired)
			after := c.recover(t, bin, u, leaseExpired)
			checkResumed(t, spec, &rep, was, obj, &after, c.effects(t))
		})
	}
}

// checkResumed checks a task resumed after a kill at spec (before and was:
// what recover said and the world showed at the kill; obj: the resume's
// task object; after and now: the same once the resume ended). The task
// completes; a call whose outcome was unknown is never run again (the
// fs.write not installed twice, the MCP key not sent again, the shell
// append not repeated), any other call's effect happens exactly once; the
// resume's completed, unknown and retried lists are the ledger's classes at
// the kill; and the final ledger tells each attempt's part: the first
// attempt's completed calls kept with their results, its unknown calls
// settled by the resume as unknown under their original keys.
func checkResumed(t *testing.T, spec string, before *crashReport, was effects, obj resumedTask, after *crashReport, now effects) {
	t.Helper()
	// The scripted model cannot name a child whose spawn result it never
	// got: where the spawn's outcome is unknown, its wait turn fails the
	// task. A real model decides what to do; the script ends there.
	// The spawn is the root's call of its fifth turn.
	spawnUnknown := false
	for _, c := range before.Tasks[0].Unknown {
		spawnUnknown = spawnUnknown || c.AgentID == before.Tasks[0].RootAgentID && c.CallID == "call_4_1"
	}
	switch {
	case spawnUnknown:
		if obj.Outcome.Status != "failed" || !strings.Contains(obj.Outcome.Reason, "no spawn result") {
			t.Errorf("resumed past an unknown spawn: %s, want the script to fail at its wait", obj.raw)
		}
	case obj.Outcome.Status != "completed":
		t.Errorf("the resumed task did not complete: %s", obj.raw)
	}
	if obj.Resume.Attempt != 2 {
		t.Errorf("resume attempt %d, want 2", obj.Resume.Attempt)
	}
	// Past a known spawn the child completes: continued from its records,
	// or started when it never had.
	for _, a := range after.Tasks[0].Agents {
		if a.ParentID != "" && !spawnUnknown && (a.Outcome == nil || a.Outcome.Status != "completed") {
			t.Errorf("child %s after the resume: %+v, want it completed", a.AgentID, a.Outcome)
		}
	}
	// Each effect: a call whose outcome was unknown is never run again,
	// any other runs once, the child's own write included: the resume
	// continues the child from its records. Past an unknown spawn the
	// child is not continued: its write never runs twice nor is undone.
	for i, s := range sideEffects(before, was) {
		class, _ := before.class(s.call)
		got := sideEffects(after, now)[i].applied
		switch {
		case s.label == "fs.write:2" && spawnUnknown:
			if got > 1 || got < s.applied {
				t.Errorf("%s: shown %d times at the kill, %d after the resume", s.label, s.applied, got)
			}
		case class == "unknown":
			if got != s.applied {
				t.Errorf("%s, unknown at the kill (shown %d times), is shown %d times after the resume: an unknown outcome was run again", s.label, s.applied, got)
			}
		case got != 1:
			t.Errorf("%s (%q at the kill) is shown %d times after the resume, want once", s.label, class, got)
		}
	}
	for key, n := range now.calls {
		if n != 1 {
			t.Errorf("the MCP server saw key %s %d times", key, n)
		}
	}
	if now.out != "" && now.out != "one\n" {
		t.Errorf("out.txt holds %q", now.out)
	}
	// The resume's lists are the ledger's classes at the kill, call by call.
	root := before.Tasks[0].RootAgentID
	ids := func(calls []recoveredRef) []string {
		var out []string
		for _, c := range calls {
			if c.Kind == "tool" && c.AgentID == root {
				out = append(out, c.CallID)
			}
		}
		slices.Sort(out)
		return out
	}
	sorted := func(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }
	k := before.Tasks[0]
	if !slices.Equal(sorted(obj.Resume.Completed), ids(k.Completed)) || !slices.Equal(sorted(obj.Resume.Unknown), ids(k.Unknown)) || !slices.Equal(sorted(obj.Resume.Retried), ids(k.Retryable)) {
		t.Errorf("the resume's classes %+v are not the ledger's at the kill: completed %v unknown %v retryable %v", obj.Resume, ids(k.Completed), ids(k.Unknown), ids(k.Retryable))
	}
	// The final ledger keeps what each attempt did: the first attempt's
	// completed calls with their results, its unknown calls settled by the
	// resume as unknown, never dispatched again.
	final := map[string]recoveredRef{}
	finalClass := map[string]string{}
	a := after.Tasks[0]
	for class, calls := range map[string][]recoveredRef{"completed": a.Completed, "unknown": a.Unknown, "retryable": a.Retryable} {
		for _, c := range calls {
			final[c.AgentID+"/"+c.CallID] = c
			finalClass[c.AgentID+"/"+c.CallID] = class
		}
	}
	for _, c := range k.Completed {
		f, key := final[c.AgentID+"/"+c.CallID], c.AgentID+"/"+c.CallID
		if finalClass[key] != "completed" || f.Result != c.Result || f.Status != c.Status {
			t.Errorf("call %s %s, completed at the kill, is %s %+v in the final ledger", c.CallID, c.Name, finalClass[key], f)
		}
	}
	for _, c := range k.Unknown {
		if c.Kind != "tool" {
			continue
		}
		f, key := final[c.AgentID+"/"+c.CallID], c.AgentID+"/"+c.CallID
		if finalClass[key] != "unknown" || f.Status == "" || f.Delivery != "may_have_been_sent" || f.IdempotencyKey != c.IdempotencyKey {
			t.Errorf("call %s %s, unknown at the kill, is %s %+v in the final ledger; want it settled unknown under its key", c.CallID, c.Name, finalClass[key], f)
		}
	}
	if len(a.Retryable) != 0 || a.Outcome == nil {
		t.Errorf("the final ledger leaves work open: %+v", a)
	}
}
