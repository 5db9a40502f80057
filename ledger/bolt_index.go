package ledger

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"iter"
	"maps"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// The bolt store's index (see [IndexedStore]) lives in four buckets beside
// "tasks", written in the same transaction as the records that change it:
//
//   - "pending" maps the ID of a task not yet terminal to 'r' and its root
//     agent's ID (empty until its task record);
//   - "groups" holds one sub-bucket per pending task with live process
//     groups, mapping the record's N (8 bytes big endian) to the JSON of
//     its [ProcessGroupRecord];
//   - "sessions" holds one sub-bucket per session, named 's' and the
//     session ID, mapping the turn (8 bytes big endian) and the task ID to
//     the JSON of the task's [SessionLink];
//   - "index" holds "version", the index's layout, [boltIndexVersion].
//
// A store written before the index has none of them: its first writable
// open builds them from a scan, in one transaction; a read-only open of
// it answers the index's questions by scanning.
const (
	bucketPending    = "pending"
	bucketGroups     = "groups"
	bucketSessions   = "sessions"
	bucketIndex      = "index"
	boltIndexVersion = 1
)

var indexVersionKey = []byte("version")

// indexInfo is what a record that can change the index says, taken when
// it is encoded.
type indexInfo struct {
	kind    RecordKind
	root    string       // RecordTask: the root agent
	session *SessionLink // RecordTask: its session, if any
	agent   string       // RecordFinish: the agent that finished
	group   []byte       // RecordProcessGroup: the group's JSON
}

func indexInfoOf(r *Record) (*indexInfo, error) {
	switch {
	case r.Kind == RecordTask && r.Task != nil:
		return &indexInfo{kind: r.Kind, root: r.Task.RootAgentID, session: r.Task.Session}, nil
	case r.Kind == RecordFinish && r.Finish != nil:
		return &indexInfo{kind: r.Kind, agent: r.Finish.AgentID}, nil
	case r.Kind == RecordProcessGroup && r.ProcessGroup != nil:
		g, err := json.Marshal(r.ProcessGroup)
		if err != nil {
			return nil, err
		}
		return &indexInfo{kind: r.Kind, group: g}, nil
	}
	return nil, nil
}

// boltIndex is the index's buckets in one writable transaction.
type boltIndex struct {
	pending, groups, sessions *bolt.Bucket
}

func openIndex(tx *bolt.Tx) boltIndex {
	return boltIndex{pending: tx.Bucket([]byte(bucketPending)), groups: tx.Bucket([]byte(bucketGroups)), sessions: tx.Bucket([]byte(bucketSessions))}
}

// created records a task's first record: the task is pending.
func (ix boltIndex) created(task []byte) error {
	return ix.pending.Put(task, []byte{'r'})
}

// apply folds one new record of task into the index, as [attention.apply]
// does.
func (ix boltIndex) apply(task []byte, n uint64, info *indexInfo) error {
	root := ix.pending.Get(task) // nil: terminal
	switch info.kind {
	case RecordTask:
		if root != nil && string(root[1:]) != info.root {
			if err := ix.pending.Put(task, append([]byte{'r'}, info.root...)); err != nil {
				return err
			}
		}
		if l := info.session; l != nil {
			sb, err := openBucket(ix.sessions, append([]byte{'s'}, l.SessionID...))
			if err != nil {
				return err
			}
			v, err := json.Marshal(l)
			if err != nil {
				return err
			}
			if err := sb.Put(sessionKey(l.Turn, task), v); err != nil {
				return err
			}
		}
	case RecordFinish:
		if root != nil && string(root[1:]) == info.agent {
			if err := ix.pending.Delete(task); err != nil {
				return err
			}
			if ix.groups.Bucket(task) != nil {
				return ix.groups.DeleteBucket(task)
			}
		}
	case RecordProcessGroup:
		if root == nil {
			return nil
		}
		gb, err := openBucket(ix.groups, task)
		if err != nil {
			return err
		}
		var key [8]byte
		binary.BigEndian.PutUint64(key[:], n)
		return gb.Put(key[:], info.group)
	}
	return nil
}

func sessionKey(turn uint64, task []byte) []byte {
	k := make([]byte, 8, 8+len(task))
	binary.BigEndian.PutUint64(k, turn)
	return append(k, task...)
}

// buildIndex creates the index's buckets and, for a store written before
// them, fills them from every task's records; it does nothing once the
// index exists.
func buildIndex(tx *bolt.Tx) error {
	meta, err := tx.CreateBucketIfNotExists([]byte(bucketIndex))
	if err != nil {
		return err
	}
	if v := meta.Get(indexVersionKey); v != nil {
		if len(v) != 1 || v[0] != boltIndexVersion {
			return fmt.Errorf("the store's index is version %x, not %d that this code keeps; upgrade Pablo on this host", v, boltIndexVersion)
		}
		return nil
	}
	for _, name := range []string{bucketPending, bucketGroups, bucketSessions} {
		if b := tx.Bucket([]byte(name)); b != nil {
			// Left by an interrupted build: built again.
			if err := tx.DeleteBucket([]byte(name)); err != nil {
				return err
			}
		}
		if _, err := tx.CreateBucket([]byte(name)); err != nil {
			return err
		}
	}
	ix := openIndex(tx)
	tasks := tx.Bucket([]byte(bucketTasks))
	err = tasks.ForEachBucket(func(id []byte) error {
		task := bytes.Clone(id)
		if err := ix.created(task); err != nil {
			return err
		}
		return eachRecord(tasks.Bucket(id), func(k, v []byte) error {
			var r Record
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("task %s record %x: %w", task, k, err)
			}
			info, err := indexInfoOf(&r)
			if err != nil || info == nil {
				return err
			}
			return ix.apply(task, r.N, info)
		})
	})
	if err != nil {
		return err
	}
	return meta.Put(indexVersionKey, []byte{boltIndexVersion})
}

// hasIndex reports whether a store's index exists (a read-only open of a
// store written before it has none).
func hasIndex(tx *bolt.Tx) bool {
	meta := tx.Bucket([]byte(bucketIndex))
	return meta != nil && bytes.Equal(meta.Get(indexVersionKey), []byte{boltIndexVersion})
}

// eachRecord calls fn with every record of a task's bucket, chunks
// included, in N order.
func eachRecord(bk *bolt.Bucket, fn func(k, v []byte) error) error {
	var read func(k, v []byte) error
	read = func(k, v []byte) error {
		if v == nil { // a chunk bucket
			return bk.Bucket(k).ForEach(read)
		}
		return fn(k, v)
	}
	return bk.ForEach(read)
}

// lastRecord decodes the last record of a task's bucket.
func lastRecord(bk *bolt.Bucket) (Record, error) {
	var r Record
	k, v := bk.Cursor().Last()
	if len(k) == 9 && k[0] == chunkPrefix && v == nil {
		_, v = bk.Bucket(k).Cursor().Last()
	}
	if v == nil {
		return r, fmt.Errorf("task bucket holds no record")
	}
	err := json.Unmarshal(v, &r)
	return r, err
}

// overlay is what the volatile records of one task change in the index:
// the task's attention as the durable index and its volatile records that
// continue it say, and the time of its last record.
type overlay struct {
	att     attention
	durable bool // the task has durable records
	last    Record
	news    []SessionLink // the sessions only the volatile records name
}

// overlays computes the overlay of every task with volatile records that
// continue its durable ones. The caller holds the view's transaction.
func (b *Bolt) overlays(tx *bolt.Tx) (map[string]*overlay, error) {
	b.vmu.Lock()
	defer b.vmu.Unlock()
	if b.vol.empty() {
		return nil, nil
	}
	tasks := tx.Bucket([]byte(bucketTasks))
	pending := tx.Bucket([]byte(bucketPending))
	groups := tx.Bucket([]byte(bucketGroups))
	out := map[string]*overlay{}
	for id := range b.vol.tasks {
		bk := tasks.Bucket([]byte(id))
		var last uint64
		o := &overlay{}
		if bk != nil {
			last = lastN(bk)
			o.durable = true
			root := pending.Get([]byte(id))
			if root == nil {
				o.att.terminal = true
			} else {
				o.att.root = string(root[1:])
				gs, err := bucketGroupsOf(groups, id)
				if err != nil {
					return nil, err
				}
				o.att.groups = gs
			}
		}
		recs := b.vol.continuing(id, last)
		if len(recs) == 0 {
			continue
		}
		for i := range recs {
			o.att.apply(&recs[i])
		}
		o.news = o.att.sessions
		o.last = recs[len(recs)-1]
		out[id] = o
	}
	return out, nil
}

// bucketGroupsOf reads the live groups of one task from the groups bucket.
func bucketGroupsOf(groups *bolt.Bucket, id string) ([]TaskProcessGroup, error) {
	gb := groups.Bucket([]byte(id))
	if gb == nil {
		return nil, nil
	}
	var out []TaskProcessGroup
	err := gb.ForEach(func(k, v []byte) error {
		g := TaskProcessGroup{TaskID: id, N: binary.BigEndian.Uint64(k)}
		if err := json.Unmarshal(v, &g.ProcessGroupRecord); err != nil {
			return &StoreError{Op: "decode", Err: fmt.Errorf("process group %d of task %s: %w", g.N, id, err)}
		}
		out = append(out, g)
		return nil
	})
	return out, err
}

// indexView runs fn in a read transaction when the store has an index,
// with the overlays of its volatile records; it reports false when the
// store has none (a read-only open of a store written before it).
func (b *Bolt) indexView(fn func(tx *bolt.Tx, ov map[string]*overlay) error) (bool, error) {
	var indexed bool
	err := b.view(func(tx *bolt.Tx) error {
		if indexed = hasIndex(tx); !indexed {
			return nil
		}
		ov, err := b.overlays(tx)
		if err != nil {
			return err
		}
		return fn(tx, ov)
	})
	return indexed, err
}

// Pending implements [IndexedStore].
func (b *Bolt) Pending(ctx context.Context) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		var ids []string
		indexed, err := b.indexView(func(tx *bolt.Tx, ov map[string]*overlay) error {
			err := tx.Bucket([]byte(bucketPending)).ForEach(func(k, _ []byte) error {
				if o := ov[string(k)]; o == nil || !o.att.terminal {
					ids = append(ids, string(k))
				}
				return ctx.Err()
			})
			if err != nil {
				return err
			}
			n := len(ids)
			for id, o := range ov {
				if !o.durable && !o.att.terminal {
					ids = append(ids, id)
				}
			}
			if len(ids) > n {
				slices.Sort(ids)
			}
			return nil
		})
		if !indexed && err == nil {
			for id, err := range scanPending(ctx, b) {
				if !yield(id, err) || err != nil {
					return
				}
			}
			return
		}
		yieldIDs(yield, ids, err)
	}
}

// ProcessGroups implements [IndexedStore].
func (b *Bolt) ProcessGroups(ctx context.Context) iter.Seq2[TaskProcessGroup, error] {
	return func(yield func(TaskProcessGroup, error) bool) {
		byTask := map[string][]TaskProcessGroup{}
		indexed, err := b.indexView(func(tx *bolt.Tx, ov map[string]*overlay) error {
			groups := tx.Bucket([]byte(bucketGroups))
			err := groups.ForEachBucket(func(k []byte) error {
				if ov[string(k)] != nil {
					return nil // the overlay has them
				}
				gs, err := bucketGroupsOf(groups, string(k))
				byTask[string(k)] = gs
				if err != nil {
					return err
				}
				return ctx.Err()
			})
			for id, o := range ov {
				if len(o.att.groups) > 0 {
					byTask[id] = o.att.groups
				}
			}
			return err
		})
		if !indexed && err == nil {
			for g, err := range scanProcessGroups(ctx, b) {
				if !yield(g, err) || err != nil {
					return
				}
			}
			return
		}
		if err != nil {
			yield(TaskProcessGroup{}, err)
			return
		}
		for _, id := range slices.Sorted(maps.Keys(byTask)) {
			for _, g := range byTask[id] {
				if !yield(g, nil) {
					return
				}
			}
		}
	}
}

// ForgetProcessGroups implements [IndexedStore]. A group still only
// volatile (recorded by a task this process runs, before its next
// barrier) is not in the durable index and stays live.
func (b *Bolt) ForgetProcessGroups(ctx context.Context, groups []TaskProcessGroup) error {
	if b.readOnly {
		return &StoreError{Op: "forget process groups", Err: ErrReadOnly}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
		return ErrClosed
	}
	err := b.db.Update(func(tx *bolt.Tx) error {
		gb := tx.Bucket([]byte(bucketGroups))
		for _, g := range groups {
			tb := gb.Bucket([]byte(g.TaskID))
			if tb == nil {
				continue
			}
			var key [8]byte
			binary.BigEndian.PutUint64(key[:], g.N)
			if err := tb.Delete(key[:]); err != nil {
				return err
			}
			if k, _ := tb.Cursor().First(); k == nil {
				if err := gb.DeleteBucket([]byte(g.TaskID)); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return &StoreError{Op: "forget process groups", Err: err}
	}
	b.commits.Add(1)
	return nil
}

// SessionTasks implements [IndexedStore]: it reads the session's entries
// and the last record of each of its tasks.
func (b *Bolt) SessionTasks(ctx context.Context, sessionID string) iter.Seq2[SessionTask, error] {
	return func(yield func(SessionTask, error) bool) {
		var out []SessionTask
		indexed, err := b.indexView(func(tx *bolt.Tx, ov map[string]*overlay) error {
			tasks := tx.Bucket([]byte(bucketTasks))
			sessions := tx.Bucket([]byte(bucketSessions))
			read := func(name []byte) error {
				sb := sessions.Bucket(name)
				if sb == nil {
					return nil
				}
				return sb.ForEach(func(k, v []byte) error {
					st := SessionTask{TaskID: string(k[8:])}
					if err := json.Unmarshal(v, &st.Session); err != nil {
						return &StoreError{Op: "decode", Err: fmt.Errorf("session entry of task %s: %w", st.TaskID, err)}
					}
					if o := ov[st.TaskID]; o != nil {
						st.Updated = o.last.Time
					} else if bk := tasks.Bucket(k[8:]); bk != nil {
						last, err := lastRecord(bk)
						if err != nil {
							return &StoreError{Op: "decode", Err: fmt.Errorf("task %s: last record: %w", st.TaskID, err)}
						}
						st.Updated = last.Time
					}
					out = append(out, st)
					return ctx.Err()
				})
			}
			var err error
			if sessionID != "" {
				err = read(append([]byte{'s'}, sessionID...))
			} else {
				err = sessions.ForEachBucket(func(k []byte) error { return read(k) })
			}
			for id, o := range ov {
				for _, l := range o.news {
					if sessionID == "" || l.SessionID == sessionID {
						out = append(out, SessionTask{TaskID: id, Session: l, Updated: o.last.Time})
					}
				}
			}
			return err
		})
		if !indexed && err == nil {
			for st, err := range scanSessionTasks(ctx, b, sessionID) {
				if !yield(st, err) || err != nil {
					return
				}
			}
			return
		}
		if err != nil {
			yield(SessionTask{}, err)
			return
		}
		sortSessionTasks(out)
		for _, st := range out {
			if !yield(st, nil) {
				return
			}
		}
	}
}

// TasksAfter implements [TaskPager].
func (b *Bolt) TasksAfter(ctx context.Context, after string, limit int) ([]string, error) {
	if limit <= 0 {
		return nil, nil
	}
	var ids []string
	err := b.view(func(tx *bolt.Tx) error {
		if after != "" {
			// A walk over every task is under way: the pages of the tasks
			// it read are not needed again.
			releaseMapped(b.db, tx.Size())
		}
		c := tx.Bucket([]byte(bucketTasks)).Cursor()
		k, _ := c.Seek([]byte(after))
		if k != nil && string(k) == after {
			k, _ = c.Next()
		}
		for ; k != nil && len(ids) < limit; k, _ = c.Next() {
			ids = append(ids, string(k))
		}
		return ctx.Err()
	})
	if err != nil {
		return nil, err
	}
	b.vmu.Lock()
	defer b.vmu.Unlock()
	n := len(ids)
	for id := range b.vol.tasks {
		if _, found := slices.BinarySearch(ids[:n], id); !found && id > after {
			ids = append(ids, id)
		}
	}
	if len(ids) > n {
		slices.Sort(ids)
		ids = ids[:min(len(ids), limit)]
	}
	return ids, nil
}
