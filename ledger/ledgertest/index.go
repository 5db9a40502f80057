package ledgertest

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/pabloagent/pablo/ledger"
)

// CheckIndex checks that what s answers about what needs attention (its
// [ledger.IndexedStore] index, or the scan [ledger.PendingTasks] and the
// others fall back to) agrees with a full read of every task's records:
// the pending tasks are those whose recovery finds no outcome, the live
// process groups those of the pending tasks (less forgotten, named by
// task ID and N), and each session's tasks those whose task record links
// them to it, with the time of their last record.
func CheckIndex(t testing.TB, s ledger.Store, forgotten ...ledger.TaskProcessGroup) {
	t.Helper()
	var wantPending []string
	var wantGroups []ledger.TaskProcessGroup
	var wantSessions []ledger.SessionTask
	ids, err := s.Tasks(bg)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		recs, err := s.Records(bg, id)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := ledger.RecoverTask(bg, s, id)
		if err != nil {
			t.Fatal(err)
		}
		last := recs[len(recs)-1].Time
		for _, r := range recs {
			if r.Kind == ledger.RecordTask && r.Task != nil && r.Task.Session != nil {
				wantSessions = append(wantSessions, ledger.SessionTask{TaskID: id, Session: *r.Task.Session, Updated: last})
			}
			if rep.Outcome == nil && r.Kind == ledger.RecordProcessGroup && r.ProcessGroup != nil &&
				!slices.ContainsFunc(forgotten, func(g ledger.TaskProcessGroup) bool { return g.TaskID == id && g.N == r.N }) {
				wantGroups = append(wantGroups, ledger.TaskProcessGroup{TaskID: id, N: r.N, ProcessGroupRecord: *r.ProcessGroup})
			}
		}
		if rep.Outcome == nil {
			wantPending = append(wantPending, id)
		}
	}
	gotPending, err := collect(ledger.PendingTasks(bg, s))
	if err != nil {
		t.Fatalf("PendingTasks: %v", err)
	}
	if !slices.Equal(gotPending, wantPending) {
		t.Errorf("pending tasks = %q, a full read says %q", gotPending, wantPending)
	}
	gotGroups, err := collect(groupsOf(s))
	if err != nil {
		t.Fatalf("process groups: %v", err)
	}
	sameJSON(t, "live process groups", gotGroups, wantGroups)
	gotSessions, err := collect(ledger.SessionTasks(bg, s, ""))
	if err != nil {
		t.Fatalf("SessionTasks: %v", err)
	}
	slices.SortStableFunc(wantSessions, compareSessionTasks)
	slices.SortStableFunc(gotSessions, compareSessionTasks)
	sameJSON(t, "session tasks", gotSessions, wantSessions)
}

func compareSessionTasks(a, b ledger.SessionTask) int {
	ka := fmt.Sprintf("%s\x00%020d\x00%s", a.Session.SessionID, a.Session.Turn, a.TaskID)
	kb := fmt.Sprintf("%s\x00%020d\x00%s", b.Session.SessionID, b.Session.Turn, b.TaskID)
	switch {
	case ka < kb:
		return -1
	case ka > kb:
		return 1
	}
	return 0
}

func sameJSON[T any](t testing.TB, what string, got, want []T) {
	t.Helper()
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if string(g) != string(w) {
		t.Errorf("%s:\n got %s\nwant %s (a full read)", what, g, w)
	}
}

func collect[T any](seq func(func(T, error) bool)) ([]T, error) {
	var out []T
	for v, err := range seq {
		if err != nil {
			return out, err
		}
		out = append(out, v)
	}
	return out, nil
}

// groupsOf is what s's index holds of live process groups, or what
// LiveProcessGroups finds when it keeps none. (LiveProcessGroups leaves
// out a task whose lease is live: one this very store still holds.)
func groupsOf(s ledger.Store) func(func(ledger.TaskProcessGroup, error) bool) {
	if is, ok := s.(ledger.IndexedStore); ok {
		return is.ProcessGroups(bg)
	}
	return ledger.LiveProcessGroups(bg, s)
}

// rec builds record n of task id of kind k.
func rec(id string, n uint64, k ledger.RecordKind, at time.Time) ledger.Record {
	r := ledger.Record{TaskID: id, N: n, Kind: k, Time: at}
	switch k {
	case ledger.RecordEvent:
		r.Event = ledger.Event{RootSeq: n, Seq: n, RootID: id, AgentID: "root", Type: "tick", Time: at}
	}
	return r
}

func taskRec(id, root string, session *ledger.SessionLink) ledger.Record {
	r := rec(id, 1, ledger.RecordTask, at)
	r.Task = &ledger.TaskRecord{TaskID: id, RootAgentID: root, Session: session}
	return r
}

func finishRec(id string, n uint64, agent string) ledger.Record {
	r := rec(id, n, ledger.RecordFinish, at.Add(time.Duration(n)*time.Second))
	r.Finish = &ledger.FinishRecord{AgentID: agent, Outcome: ledger.Outcome{Status: "completed"}}
	return r
}

func groupRec(id string, n uint64, pgid int) ledger.Record {
	r := rec(id, n, ledger.RecordProcessGroup, at.Add(time.Duration(n)*time.Second))
	r.ProcessGroup = &ledger.ProcessGroupRecord{AgentID: "root", BootID: "boot", Pgid: pgid, LeaderStart: uint64(pgid), Program: "/bin/sleep"}
	return r
}

func appendAll(t *testing.T, s ledger.Store, recs ...ledger.Record) {
	t.Helper()
	for _, r := range recs {
		if err := s.Append(bg, []ledger.Record{r}); err != nil {
			t.Fatalf("Append task %s record %d: %v", r.TaskID, r.N, err)
		}
	}
}

// pendingAfterTerminal: a task is pending until its root agent's terminal
// record; a child's terminal record, or a task without a task record, does
// not end it.
func pendingAfterTerminal(t *testing.T, f Factory) {
	s := open(t, f)
	appendAll(t, s,
		taskRec("a-running", "root", nil), rec("a-running", 2, ledger.RecordEvent, at),
		finishRec("a-running", 3, "child"), // a child finished, not the root
		taskRec("b-done", "root", nil), finishRec("b-done", 2, "root"),
		rec("c-no-task-record", 1, ledger.RecordEvent, at),
		taskRec("d-done-late", "root", nil), rec("d-done-late", 2, ledger.RecordEvent, at),
	)
	want := []string{"a-running", "c-no-task-record", "d-done-late"}
	if got, err := collect(ledger.PendingTasks(bg, s)); err != nil || !slices.Equal(got, want) {
		t.Fatalf("pending = %q, %v; want %q", got, err, want)
	}
	appendAll(t, s, finishRec("d-done-late", 3, "root"))
	s = reopen(t, f, s)
	want = []string{"a-running", "c-no-task-record"}
	if got, err := collect(ledger.PendingTasks(bg, s)); err != nil || !slices.Equal(got, want) {
		t.Fatalf("after reopening, pending = %q, %v; want %q", got, err, want)
	}
	CheckIndex(t, s)
}

// liveGroupsAfterReaping: a process group is live while its task is
// pending, ends with the task's terminal record, and once forgotten (the
// host reaped it) stays forgotten across a reopen; a volatile group is
// live as soon as it is visible.
func liveGroupsAfterReaping(t *testing.T, f Factory) {
	s := open(t, f)
	appendAll(t, s,
		taskRec("a", "root", nil), groupRec("a", 2, 101), groupRec("a", 3, 102),
		taskRec("b", "root", nil), groupRec("b", 2, 201), finishRec("b", 3, "root"),
		taskRec("c", "root", nil), groupRec("c", 2, 301),
	)
	pgids := func() []int {
		t.Helper()
		gs, err := collect(groupsOf(s))
		if err != nil {
			t.Fatal(err)
		}
		var out []int
		for _, g := range gs {
			out = append(out, g.Pgid)
		}
		return out
	}
	if got := pgids(); !slices.Equal(got, []int{101, 102, 301}) {
		t.Fatalf("live groups = %v, want [101 102 301] (b's ended with b)", got)
	}
	forgotten := []ledger.TaskProcessGroup{{TaskID: "a", N: 2}, {TaskID: "c", N: 2}, {TaskID: "b", N: 2}, {TaskID: "none", N: 9}}
	if err := ledger.ForgetProcessGroups(bg, s, forgotten); err != nil {
		t.Fatalf("ForgetProcessGroups: %v", err)
	}
	if _, ok := s.(ledger.IndexedStore); !ok {
		return // nothing is forgotten without an index
	}
	if got := pgids(); !slices.Equal(got, []int{102}) {
		t.Fatalf("after forgetting 101 and 301, live groups = %v, want [102]", got)
	}
	if vs, ok := s.(ledger.VolatileStore); ok {
		if err := vs.AppendVolatile(bg, []ledger.Record{groupRec("a", 4, 103)}); err != nil {
			t.Fatal(err)
		}
		if got := pgids(); !slices.Equal(got, []int{102, 103}) {
			t.Fatalf("after a volatile group, live groups = %v, want [102 103]", got)
		}
	} else {
		appendAll(t, s, groupRec("a", 4, 103))
	}
	s = reopen(t, f, s)
	if got := pgids(); !slices.Equal(got, []int{102, 103}) {
		t.Fatalf("after reopening, live groups = %v, want [102 103]", got)
	}
	if f.Reopen != nil {
		// No process holds task a now (a store that leases tasks released
		// its lease at Close): what a host's start-up reads.
		gs, err := collect(ledger.LiveProcessGroups(bg, s))
		if err != nil || len(gs) != 2 || gs[0].Pgid != 102 || gs[1].Pgid != 103 {
			t.Fatalf("after reopening, LiveProcessGroups = %+v, %v; want 102 and 103", gs, err)
		}
	}
	// A task started after the reopen: its groups end with it.
	appendAll(t, s, taskRec("d", "root", nil), groupRec("d", 2, 401))
	if got := pgids(); !slices.Equal(got, []int{102, 103, 401}) {
		t.Fatalf("live groups = %v, want [102 103 401]", got)
	}
	appendAll(t, s, finishRec("d", 3, "root"))
	if got := pgids(); !slices.Equal(got, []int{102, 103}) {
		t.Fatalf("after d ended, live groups = %v, want [102 103]", got)
	}
	CheckIndex(t, s, forgotten...)
}

// sessionsListing: a session's tasks are listed from their task records,
// in turn order, each with the time of its last record.
func sessionsListing(t *testing.T, f Factory) {
	s := open(t, f)
	link := func(sid string, turn uint64) *ledger.SessionLink {
		return &ledger.SessionLink{SessionID: sid, Workspace: "/ws", Turn: turn, Prompt: fmt.Sprintf("prompt %d of %s", turn, sid)}
	}
	appendAll(t, s,
		taskRec("t-s1-2", "root", link("s1", 2)), rec("t-s1-2", 2, ledger.RecordEvent, at.Add(time.Minute)),
		taskRec("t-s1-1", "root", link("s1", 1)), finishRec("t-s1-1", 2, "root"),
		taskRec("t-s2-1", "root", link("s2", 1)),
		taskRec("t-plain", "root", nil), rec("t-plain", 2, ledger.RecordEvent, at),
	)
	s = reopen(t, f, s)
	got, err := collect(ledger.SessionTasks(bg, s, "s1"))
	if err != nil {
		t.Fatal(err)
	}
	want := []ledger.SessionTask{
		{TaskID: "t-s1-1", Session: *link("s1", 1), Updated: at.Add(2 * time.Second)},
		{TaskID: "t-s1-2", Session: *link("s1", 2), Updated: at.Add(time.Minute)},
	}
	sameJSON(t, "session s1", got, want)
	if len(got) != 2 || !got[1].Updated.Equal(want[1].Updated) {
		t.Fatalf("session s1 = %+v", got)
	}
	if got, err := collect(ledger.SessionTasks(bg, s, "no-such-session")); err != nil || len(got) != 0 {
		t.Fatalf("an unknown session lists %+v, %v", got, err)
	}
	all, err := collect(ledger.SessionTasks(bg, s, ""))
	if err != nil || len(all) != 3 {
		t.Fatalf("every session's tasks = %+v, %v; want 3", all, err)
	}
	CheckIndex(t, s)
}

// pagedTasks: a walk over every task, a page at a time, sees each task
// once, in order.
func pagedTasks(t *testing.T, f Factory) {
	s := open(t, f)
	var want []string
	for i := range 600 {
		id := fmt.Sprintf("p%04d", 599-i)
		want = append(want, id)
	}
	var recs []ledger.Record
	for _, id := range want {
		recs = append(recs, rec(id, 1, ledger.RecordEvent, at))
	}
	if err := s.Append(bg, recs); err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	got, err := collect(ledger.EachTask(bg, s))
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("EachTask: %d tasks, %v; want %d in order", len(got), err, len(want))
	}
	if p, ok := s.(ledger.TaskPager); ok {
		page, err := p.TasksAfter(bg, "p0100", 3)
		if err != nil || !slices.Equal(page, []string{"p0101", "p0102", "p0103"}) {
			t.Fatalf("TasksAfter(p0100, 3) = %q, %v", page, err)
		}
	}
}
