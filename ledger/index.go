package ledger

import (
	"cmp"
	"context"
	"errors"
	"iter"
	"slices"
	"time"
)

// IndexedStore is an optional interface of a [Store] that keeps an index of
// what needs attention: the tasks not yet terminal, the process groups
// they started, and the tasks of each session. A host's start-up (which
// reaps the process groups a crashed host left), a session listing and the
// recovery of one task then cost what they read, not the store's size.
// The memory, bbolt and PostgreSQL stores implement it; [PendingTasks],
// [LiveProcessGroups], [ForgetProcessGroups] and [SessionTasks] use it
// when a store has it and scan every task otherwise, so a host's own Store
// keeps working (a wrapper that embeds a Store hides it: forward these
// methods too).
//
// The index is a function of the records: a store keeps it in the same
// transaction as the records that change it, so it never disagrees with a
// full scan of the store, after a crash too. What it holds, record by
// record in N order:
//
//   - a task is pending from its first record until a [RecordFinish] of
//     its root agent (the RootAgentID of its [RecordTask]);
//   - a [RecordProcessGroup] of a pending task is live until the task
//     stops pending (a task settles only after joining every process it
//     started) or the host forgets it ([IndexedStore.ForgetProcessGroups]:
//     it has ended the group, or found it ended);
//   - a [RecordTask] with a Session places the task in its session for
//     good.
//
// Volatile records (see [VolatileStore]) count as soon as a reader sees
// them.
type IndexedStore interface {
	Store
	// Pending yields the ID of every task not yet terminal, in ascending
	// (bytewise) order.
	Pending(ctx context.Context) iter.Seq2[string, error]
	// ProcessGroups yields every live process group, by task ID in
	// ascending order and then in record order.
	ProcessGroups(ctx context.Context) iter.Seq2[TaskProcessGroup, error]
	// ForgetProcessGroups removes groups (named by TaskID and N) from the
	// live ones: the host ended them or found them ended. Naming one that
	// is not live is not an error. It commits before it returns.
	ForgetProcessGroups(ctx context.Context, groups []TaskProcessGroup) error
	// SessionTasks yields the tasks of the session sessionID, or of every
	// session when sessionID is empty: each session's in Turn order (then
	// by task ID), sessions in no particular order.
	SessionTasks(ctx context.Context, sessionID string) iter.Seq2[SessionTask, error]
}

// TaskPager is an optional interface of a [Store] that lists its task IDs
// a page at a time, so that a walk over every task ([EachTask],
// [RecoverEach]) holds one page of IDs at a time instead of all of them.
// Every store of this module implements it; a wrapper that embeds a Store
// hides it, so forward it too.
type TaskPager interface {
	Store
	// TasksAfter returns up to limit task IDs greater than after, in
	// ascending (bytewise) order; fewer than limit means there are no
	// more.
	TasksAfter(ctx context.Context, after string, limit int) ([]string, error)
}

// TaskProcessGroup is a process group a task recorded: the task, the N of
// its [RecordProcessGroup] record (which names it within the task) and the
// record.
type TaskProcessGroup struct {
	TaskID string `json:"task_id"`
	N      uint64 `json:"n"`
	ProcessGroupRecord
}

// SessionTask is one task of a session: its ID, its link to the session
// (session ID, workspace, turn and masked prompt, from its [RecordTask]) and
// the time of its last record.
type SessionTask struct {
	TaskID  string      `json:"task_id"`
	Session SessionLink `json:"session"`
	Updated time.Time   `json:"updated"`
}

// pageSize is how many task IDs a walk over a store reads at a time: a
// bolt store releases the pages of its file the walk has touched between
// two (see releaseMapped).
const pageSize = 32

// EachTask yields every task ID of store in ascending order. On a
// [TaskPager] it reads them a page at a time; otherwise it reads
// [Store.Tasks] whole.
func EachTask(ctx context.Context, store Store) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		p, ok := store.(TaskPager)
		if !ok {
			ids, err := store.Tasks(ctx)
			yieldIDs(yield, ids, err)
			return
		}
		after := ""
		for {
			ids, err := p.TasksAfter(ctx, after, pageSize)
			if !yieldIDs(yield, ids, err) || len(ids) < pageSize {
				return
			}
			after = ids[len(ids)-1]
		}
	}
}

// yieldIDs yields err alone when it is set, else each of ids; it reports
// whether the walk goes on (no error, and the consumer wants more).
func yieldIDs(yield func(string, error) bool, ids []string, err error) bool {
	if err != nil {
		yield("", err)
		return false
	}
	for _, id := range ids {
		if !yield(id, nil) {
			return false
		}
	}
	return true
}

// PendingTasks yields the ID of every task of store not yet terminal, in
// ascending order: from the index of an [IndexedStore], by reading every
// task otherwise.
func PendingTasks(ctx context.Context, store Store) iter.Seq2[string, error] {
	if is, ok := store.(IndexedStore); ok {
		return is.Pending(ctx)
	}
	return scanPending(ctx, store)
}

// LiveProcessGroups yields the live process groups of store (see
// [IndexedStore]) by task, except those of a task whose lease is live on a
// [LeaseStore]: that task is in flight in another process, which owns its
// groups.
func LiveProcessGroups(ctx context.Context, store Store) iter.Seq2[TaskProcessGroup, error] {
	groups := scanProcessGroups(ctx, store)
	if is, ok := store.(IndexedStore); ok {
		groups = is.ProcessGroups(ctx)
	}
	return func(yield func(TaskProcessGroup, error) bool) {
		var task string
		var live bool
		for g, err := range groups {
			if err != nil {
				yield(g, err)
				return
			}
			if g.TaskID != task {
				task = g.TaskID
				err := checkAbandoned(ctx, store, task)
				if le, ok := errors.AsType[*LeaseError](err); ok && !le.Lost {
					live, err = true, nil
				} else {
					live = false
				}
				if err != nil {
					yield(TaskProcessGroup{}, err)
					return
				}
			}
			if !live && !yield(g, nil) {
				return
			}
		}
	}
}

// ForgetProcessGroups removes groups from the live process groups of an
// [IndexedStore]; on another store it does nothing (a scan finds the
// groups again, and a host finds them ended again).
func ForgetProcessGroups(ctx context.Context, store Store, groups []TaskProcessGroup) error {
	if is, ok := store.(IndexedStore); ok && len(groups) > 0 {
		return is.ForgetProcessGroups(ctx, groups)
	}
	return nil
}

// SessionTasks yields the tasks of the session sessionID of store (every
// session's when it is empty), as [IndexedStore.SessionTasks] does: from
// the index when store has one, by reading every task otherwise.
func SessionTasks(ctx context.Context, store Store, sessionID string) iter.Seq2[SessionTask, error] {
	if is, ok := store.(IndexedStore); ok {
		return is.SessionTasks(ctx, sessionID)
	}
	return scanSessionTasks(ctx, store, sessionID)
}

// attention is what one task's records say needs attention, folded record
// by record in N order as every store's index is kept.
type attention struct {
	root     string
	terminal bool
	groups   []TaskProcessGroup
	sessions []SessionLink
}

// apply folds r into a.
func (a *attention) apply(r *Record) {
	switch r.Kind {
	case RecordTask:
		if r.Task == nil {
			return
		}
		if !a.terminal {
			a.root = r.Task.RootAgentID
		}
		if r.Task.Session != nil {
			a.sessions = append(a.sessions, *r.Task.Session)
		}
	case RecordFinish:
		if r.Finish != nil && !a.terminal && r.Finish.AgentID == a.root {
			a.terminal, a.groups = true, nil
		}
	case RecordProcessGroup:
		if r.ProcessGroup != nil && !a.terminal {
			a.groups = append(a.groups, TaskProcessGroup{TaskID: r.TaskID, N: r.N, ProcessGroupRecord: *r.ProcessGroup})
		}
	}
}

// indexed reports whether a record of kind k can change the index.
func indexed(k RecordKind) bool {
	return k == RecordTask || k == RecordFinish || k == RecordProcessGroup
}

// foldAttention folds a task's records.
func foldAttention(recs []Record) attention {
	var a attention
	for i := range recs {
		a.apply(&recs[i])
	}
	return a
}

// scanAttention yields each task of store with what its records say,
// reading them all: the index's definition, and the path of a store
// without one.
func scanAttention(ctx context.Context, store Store) iter.Seq2[*scanned, error] {
	return func(yield func(*scanned, error) bool) {
		for id, err := range EachTask(ctx, store) {
			if err != nil {
				yield(nil, err)
				return
			}
			recs, err := store.Records(ctx, id)
			if errors.Is(err, ErrNotFound) {
				continue
			}
			if err != nil {
				yield(nil, err)
				return
			}
			if !yield(&scanned{id: id, att: foldAttention(recs), last: recs[len(recs)-1].Time}, nil) {
				return
			}
		}
	}
}

type scanned struct {
	id   string
	att  attention
	last time.Time
}

func scanPending(ctx context.Context, store Store) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		for t, err := range scanAttention(ctx, store) {
			if err != nil {
				yield("", err)
				return
			}
			if !t.att.terminal && !yield(t.id, nil) {
				return
			}
		}
	}
}

func scanProcessGroups(ctx context.Context, store Store) iter.Seq2[TaskProcessGroup, error] {
	return func(yield func(TaskProcessGroup, error) bool) {
		for t, err := range scanAttention(ctx, store) {
			if err != nil {
				yield(TaskProcessGroup{}, err)
				return
			}
			for _, g := range t.att.groups {
				if !yield(g, nil) {
					return
				}
			}
		}
	}
}

func scanSessionTasks(ctx context.Context, store Store, sessionID string) iter.Seq2[SessionTask, error] {
	return func(yield func(SessionTask, error) bool) {
		var out []SessionTask
		for t, err := range scanAttention(ctx, store) {
			if err != nil {
				yield(SessionTask{}, err)
				return
			}
			for _, l := range t.att.sessions {
				if sessionID == "" || l.SessionID == sessionID {
					out = append(out, SessionTask{TaskID: t.id, Session: l, Updated: t.last})
				}
			}
		}
		sortSessionTasks(out)
		for _, st := range out {
			if !yield(st, nil) {
				return
			}
		}
	}
}

// sortSessionTasks orders tasks by session, then turn, then task ID.
func sortSessionTasks(ts []SessionTask) {
	slices.SortStableFunc(ts, func(a, b SessionTask) int {
		if a.Session.SessionID != b.Session.SessionID {
			return cmp.Compare(a.Session.SessionID, b.Session.SessionID)
		}
		if a.Session.Turn != b.Session.Turn {
			return cmp.Compare(a.Session.Turn, b.Session.Turn)
		}
		return cmp.Compare(a.TaskID, b.TaskID)
	})
}

// RecoverEach yields the report of every task of store in ID order, as
// [Recover] does, one task at a time: a walk of the whole store holds one
// task's records at a time. A task whose lease is live on a [LeaseStore]
// is yielded as a [*LeaseError] matching [ErrLeaseLive] (with an empty
// report), and the walk goes on; any other error ends it.
func RecoverEach(ctx context.Context, store Store) iter.Seq2[TaskReport, error] {
	return func(yield func(TaskReport, error) bool) {
		for id, err := range EachTask(ctx, store) {
			if err != nil {
				yield(TaskReport{}, err)
				return
			}
			t, err := RecoverTask(ctx, store, id)
			if le, ok := errors.AsType[*LeaseError](err); ok && !le.Lost {
				if !yield(TaskReport{}, err) {
					return
				}
				continue
			}
			if !yield(t, err) || err != nil {
				return
			}
		}
	}
}

// The stores of this package keep the index and list their tasks a page
// at a time.
var (
	_ IndexedStore = (*MemoryStore)(nil)
	_ IndexedStore = (*Bolt)(nil)
	_ TaskPager    = (*MemoryStore)(nil)
	_ TaskPager    = (*Bolt)(nil)
)
