package ledger

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/pabloagent/pablo/ledger/outcome"
)

// checkIndexMatchesScan fails t unless what the store's index answers (its
// pending tasks, live process groups and session tasks) is what a scan of
// every task's records says: the index's definition.
func checkIndexMatchesScan(t testing.TB, s IndexedStore) {
	t.Helper()
	same := func(what string, got, want any) {
		t.Helper()
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		if string(g) != string(w) {
			t.Fatalf("%s: the index says\n%s\na full scan says\n%s", what, g, w)
		}
	}
	same("pending tasks", must(collectSeq(s.Pending(bg))), must(collectSeq(scanPending(bg, s))))
	same("live process groups", must(collectSeq(s.ProcessGroups(bg))), must(collectSeq(scanProcessGroups(bg, s))))
	same("session tasks", must(collectSeq(s.SessionTasks(bg, ""))), must(collectSeq(scanSessionTasks(bg, s, ""))))
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func collectSeq[T any](seq func(func(T, error) bool)) ([]T, error) {
	out := []T{}
	for v, err := range seq {
		if err != nil {
			return out, err
		}
		out = append(out, v)
	}
	return out, nil
}

// writeOldLayout writes a store as the code before the index did: the
// "tasks" and "results" buckets only, each task's records in chunk
// buckets (and task a's first records directly in its bucket, the layout
// before chunks).
func writeOldLayout(t *testing.T, path string, tasks map[string][]Record) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{PageSize: storePageSize})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		tb, err := tx.CreateBucket([]byte(bucketTasks))
		if err != nil {
			return err
		}
		if _, err := tx.CreateBucket([]byte(bucketResults)); err != nil {
			return err
		}
		for id, recs := range tasks {
			bk, err := tb.CreateBucket([]byte(id))
			if err != nil {
				return err
			}
			for i, r := range recs {
				v, err := encodeRecord(&r)
				if err != nil {
					return err
				}
				var key [8]byte
				binary.BigEndian.PutUint64(key[:], r.N)
				dst := bk
				if id != "a" || i >= 2 {
					ck := chunkKey(r.N)
					if dst, err = openBucket(bk, ck[:]); err != nil {
						return err
					}
				}
				if err := dst.Put(key[:], v); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestBoltBuildsItsIndexForAStoreWrittenBeforeIt: a store written before
// the index is answered by a scan when opened read-only (which never
// migrates) and gets its index on its first writable open, matching the
// scan, and kept from then on.
func TestBoltBuildsItsIndexForAStoreWrittenBeforeIt(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	task := func(id, sid string, turn uint64) Record {
		r := Record{TaskID: id, N: 1, Kind: RecordTask, Time: at, Task: &TaskRecord{TaskID: id, RootAgentID: "root"}}
		if sid != "" {
			r.Task.Session = &SessionLink{SessionID: sid, Turn: turn, Prompt: "p"}
		}
		return r
	}
	group := func(id string, n uint64, pgid int) Record {
		return Record{TaskID: id, N: n, Kind: RecordProcessGroup, Time: at, ProcessGroup: &ProcessGroupRecord{AgentID: "root", BootID: "b", Pgid: pgid}}
	}
	finish := func(id string, n uint64) Record {
		return Record{TaskID: id, N: n, Kind: RecordFinish, Time: at.Add(time.Second), Finish: &FinishRecord{AgentID: "root", Outcome: Outcome{Status: outcome.Completed}}}
	}
	path := filepath.Join(t.TempDir(), "old.db")
	writeOldLayout(t, path, map[string][]Record{
		"a":    {task("a", "s1", 1), group("a", 2, 11), group("a", 3, 12)},
		"b":    {task("b", "s1", 2), group("b", 2, 21), finish("b", 3)},
		"c":    {task("c", "", 0), finish("c", 2)},
		"d-ev": {eventRecord("d-ev", 1)},
	})
	ro, err := OpenBolt(path, BoltOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var noIndex bool
	ro.db.View(func(tx *bolt.Tx) error { noIndex = !hasIndex(tx); return nil })
	if !noIndex {
		t.Fatal("a read-only open built an index")
	}
	pending := must(collectSeq(ro.Pending(bg)))
	checkIndexMatchesScan(t, ro)
	ro.Close()
	if !slices.Equal(pending, []string{"a", "d-ev"}) {
		t.Fatalf("read-only, unindexed: pending = %q", pending)
	}

	s, err := OpenBolt(path, BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.db.View(func(tx *bolt.Tx) error { noIndex = !hasIndex(tx); return nil })
	if noIndex {
		t.Fatal("the first writable open built no index")
	}
	checkIndexMatchesScan(t, s)
	if got := must(collectSeq(s.Pending(bg))); !slices.Equal(got, []string{"a", "d-ev"}) {
		t.Fatalf("pending = %q, want [a d-ev]", got)
	}
	gs := must(collectSeq(s.ProcessGroups(bg)))
	if len(gs) != 2 || gs[0].Pgid != 11 || gs[1].Pgid != 12 || gs[1].N != 3 {
		t.Fatalf("live groups = %+v, want a's 11 and 12", gs)
	}
	if st := must(collectSeq(s.SessionTasks(bg, "s1"))); len(st) != 2 || st[0].TaskID != "a" || st[1].TaskID != "b" || !st[1].Updated.Equal(at.Add(time.Second)) {
		t.Fatalf("session s1 = %+v", st)
	}
	// The index is kept from here on.
	if err := s.Append(bg, []Record{finish("a", 4)}); err != nil {
		t.Fatal(err)
	}
	checkIndexMatchesScan(t, s)
	if got := must(collectSeq(s.Pending(bg))); !slices.Equal(got, []string{"d-ev"}) {
		t.Fatalf("after a finished, pending = %q", got)
	}
}

// pageCounter is a store that refuses to list its tasks whole and counts
// the pages it is asked for.
type pageCounter struct {
	*MemoryStore
	pages int
}

func (p *pageCounter) Tasks(context.Context) ([]string, error) {
	return nil, errors.New("the whole task list was read")
}

func (p *pageCounter) TasksAfter(ctx context.Context, after string, limit int) ([]string, error) {
	p.pages++
	return p.MemoryStore.TasksAfter(ctx, after, limit)
}

// TestRecoverEachWalksTheStoreAPageAtATime: a whole-store recovery holds
// one page of task IDs and one task's records at a time: it never lists
// every task at once, and a walk stopped early reads no further page.
func TestRecoverEachWalksTheStoreAPageAtATime(t *testing.T) {
	s := &pageCounter{MemoryStore: NewMemoryStore()}
	const tasks = 2*pageSize + 10
	for i := range tasks {
		if err := s.Append(bg, []Record{eventRecord(fmt.Sprintf("t%05d", i), 1)}); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for r, err := range RecoverEach(bg, s) {
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("t%05d", n); r.TaskID != want {
			t.Fatalf("task %d is %s, want %s", n, r.TaskID, want)
		}
		n++
	}
	if n != tasks || s.pages != 3 {
		t.Fatalf("walked %d tasks in %d pages, want %d in 3", n, s.pages, tasks)
	}
	s.pages = 0
	for range RecoverEach(bg, s) {
		break
	}
	if s.pages != 1 {
		t.Fatalf("a walk stopped at its first task read %d pages", s.pages)
	}
	if _, err := Recover(bg, s); err != nil {
		t.Fatalf("Recover: %v", err)
	}
}

// plainStore hides every optional interface of the store it wraps, as a
// host's wrapper that forwards only Store does.
type plainStore struct{ Store }

// TestAStoreWithoutTheIndexIsScanned: a store that keeps no index (a
// host's own, or a wrapper that does not forward IndexedStore) answers
// PendingTasks, LiveProcessGroups and SessionTasks by reading every task,
// with what the index answers.
func TestAStoreWithoutTheIndexIsScanned(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	m := NewMemoryStore()
	for i, id := range []string{"t1", "t2", "t3"} {
		recs := []Record{
			{TaskID: id, N: 1, Kind: RecordTask, Time: at, Task: &TaskRecord{TaskID: id, RootAgentID: "root", Session: &SessionLink{SessionID: "s", Turn: uint64(3 - i)}}},
			{TaskID: id, N: 2, Kind: RecordProcessGroup, Time: at, ProcessGroup: &ProcessGroupRecord{BootID: "b", Pgid: 100 + i}},
		}
		if i == 1 {
			recs = append(recs, Record{TaskID: id, N: 3, Kind: RecordFinish, Time: at.Add(time.Second), Finish: &FinishRecord{AgentID: "root"}})
		}
		if err := m.Append(bg, recs); err != nil {
			t.Fatal(err)
		}
	}
	p := plainStore{m}
	same := func(what string, got, want any) {
		t.Helper()
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		if string(g) != string(w) {
			t.Fatalf("%s: the scan says\n%s\nthe index says\n%s", what, g, w)
		}
	}
	same("pending", must(collectSeq(PendingTasks(bg, p))), must(collectSeq(PendingTasks(bg, m))))
	same("groups", must(collectSeq(LiveProcessGroups(bg, p))), must(collectSeq(LiveProcessGroups(bg, m))))
	same("sessions", must(collectSeq(SessionTasks(bg, p, "s"))), must(collectSeq(SessionTasks(bg, m, "s"))))
	if got := must(collectSeq(PendingTasks(bg, p))); !slices.Equal(got, []string{"t1", "t3"}) {
		t.Fatalf("pending = %q", got)
	}
	// Nothing to forget without an index: not an error.
	if err := ForgetProcessGroups(bg, p, []TaskProcessGroup{{TaskID: "t1", N: 2}}); err != nil {
		t.Fatal(err)
	}
}
