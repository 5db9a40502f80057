package ledger

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/pabloagent/pablo/internal/fsx"
)

// BoltOptions configure [OpenBolt]. The zero value is the durable default.
type BoltOptions struct {
	// MaxBatch caps how many Append calls share one transaction and fsync.
	// Zero means 4096.
	MaxBatch int
	// Timeout bounds the wait for the file lock held by another process.
	// Zero means one second.
	Timeout time.Duration
	// NoSync skips fsync. Appends are then not crash-durable; for benchmarks
	// that isolate encoding cost only.
	NoSync bool
	// ReadOnly opens an existing ledger to read it: a missing file is an
	// error (errors.Is fs.ErrNotExist), nothing is created or migrated, the
	// file is locked shared, and Append fails with ErrReadOnly.
	ReadOnly bool
}

// Bucket names: "tasks" holds one sub-bucket per task, which holds one
// chunk bucket per 32 records (see chunkKey), keyed by the record's N as 8
// big-endian bytes; "results" maps a ResultRef to canonical JSON.
//
// A store is created with pages of storePageSize (one that exists keeps its
// own): every commit allocates one page for bbolt's meta page and reads in
// the pages on the path to each leaf it changes, and a record is a few
// hundred bytes, so small pages keep a barrier's allocation small.
const (
	storePageSize = 2048
	bucketTasks   = "tasks"
	bucketResults = "results"
)

// Bolt is the embedded default [Store], a bbolt database file. Concurrent
// appends are grouped: one committer goroutine, owned by the store and joined
// by Close, writes every queued Append in one transaction with one fsync, then
// acknowledges each of them.
type Bolt struct {
	db       *bolt.DB
	maxBatch int
	readOnly bool

	mu     sync.RWMutex // guards closed against sends on reqs
	closed bool
	reqs   chan *appendReq
	done   chan struct{} // closed when the committer has exited

	commits atomic.Uint64

	// The sidecar of volatile records (see [Bolt.AppendVolatile]): vfile is
	// nil when the store is read-only; vol holds the records written since
	// open that no commit has made durable yet, or, read-only, those the
	// sidecar held at open.
	vpath string
	vmu   sync.Mutex
	vfile *os.File
	vsize int64
	vol   volatileSet

	// free holds appendReqs acknowledged and free to serve another Append:
	// a sequential task appends two or three times a tool call.
	free sync.Pool
}

// volatileSuffix names the sidecar file beside a bbolt ledger at PATH:
// PATH.volatile holds its volatile records (see [Bolt.AppendVolatile]); a
// copy of the store copies both files.
const volatileSuffix = ".volatile"

// maxVolatile bounds the sidecar a store reads at open.
const maxVolatile = 1 << 30

type appendReq struct {
	items []encodedRecord
	done  chan error
}

// encodedRecord is one record ready to be put: its task's bucket name
// (shared by the records of one Append of one task), its key and its JSON,
// and for a result record the result to store under its reference.
type encodedRecord struct {
	task   []byte
	key    [8]byte
	value  []byte
	result *ResultRecord
	// index is set on a record that can change the index (see
	// bolt_index.go): most records, events, cannot.
	index *indexInfo
}

// OpenBolt opens or creates the database at path (mode 0600) and starts its
// committer.
func OpenBolt(path string, opts BoltOptions) (*Bolt, error) {
	if opts.MaxBatch < 0 {
		return nil, &InvalidError{Field: "BoltOptions.MaxBatch", Reason: "must not be negative"}
	}
	if opts.MaxBatch == 0 {
		opts.MaxBatch = 4096
	}
	if opts.Timeout == 0 {
		opts.Timeout = time.Second
	}
	if opts.ReadOnly {
		return openBoltReadOnly(path, opts)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: opts.Timeout, NoSync: opts.NoSync, OpenFile: openStoreFile, PageSize: storePageSize})
	if errors.Is(err, bolterrors.ErrTimeout) {
		err = fmt.Errorf("%w: waited %s for the file lock, which the process running its tasks holds (%w)", ErrLocked, opts.Timeout, err)
	}
	if err != nil {
		return nil, &StoreError{Op: "open " + path, Err: err}
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range []string{bucketTasks, bucketResults} {
			if _, err := tx.CreateBucketIfNotExists([]byte(name)); err != nil {
				return err
			}
		}
		return buildIndex(tx)
	})
	if err != nil {
		db.Close()
		return nil, &StoreError{Op: "initialize " + path, Err: err}
	}
	b := &Bolt{db: db, maxBatch: opts.MaxBatch, reqs: make(chan *appendReq, opts.MaxBatch), done: make(chan struct{}), vpath: path + volatileSuffix}
	if err := b.openSidecar(); err != nil {
		db.Close()
		return nil, err
	}
	go b.commitLoop()
	return b, nil
}

// openSidecar opens (or creates) the sidecar of a writable store, makes the
// records a killed writer left in it durable, in one commit, and empties it.
func (b *Bolt) openSidecar() error {
	f, _, err := fsx.OpenFile(b.vpath, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return &StoreError{Op: "open " + b.vpath, Err: err}
	}
	data, err := io.ReadAll(io.LimitReader(f, maxVolatile))
	if err == nil && len(data) > 0 {
		var left volatileSet
		recs, _ := decodeVolatile(data)
		left.add(recs)
		err = b.importVolatile(&left)
		if err == nil {
			err = f.Truncate(0)
		}
	}
	if err != nil {
		f.Close()
		return &StoreError{Op: "recover " + b.vpath, Err: err}
	}
	b.vfile = f
	return nil
}

// importVolatile commits the records of v that continue each task's durable
// records.
func (b *Bolt) importVolatile(v *volatileSet) error {
	if v.empty() {
		return nil
	}
	return b.db.Update(func(tx *bolt.Tx) error {
		tasks := tx.Bucket([]byte(bucketTasks))
		results := tx.Bucket([]byte(bucketResults))
		ix := openIndex(tx)
		for id := range v.tasks {
			bk, created, err := openTaskBucket(tasks, []byte(id))
			if err != nil {
				return err
			}
			recs := v.continuing(id, lastN(bk))
			if created && len(recs) > 0 {
				if err := ix.created([]byte(id)); err != nil {
					return err
				}
			}
			for _, r := range recs {
				val, err := encodeRecord(&r)
				if err != nil {
					return err
				}
				var key [8]byte
				binary.BigEndian.PutUint64(key[:], r.N)
				ck := chunkKey(r.N)
				chunk, err := openBucket(bk, ck[:])
				if err != nil {
					return err
				}
				if err := chunk.Put(key[:], val); err != nil {
					return err
				}
				info, err := indexInfoOf(&r)
				if err != nil {
					return err
				}
				if info != nil {
					if err := ix.apply([]byte(id), r.N, info); err != nil {
						return err
					}
				}
				if r.Kind == RecordResult && r.Result != nil && results.Get([]byte(r.Result.ID)) == nil {
					if err := results.Put([]byte(r.Result.ID), r.Result.Data); err != nil {
						return err
					}
				}
			}
		}
		return nil
	})
}

// AppendVolatile implements [VolatileStore]. The records go to the sidecar
// file beside the database (PATH.volatile) in one write(2), with no
// fsync: a kill of this process cannot lose them once it returns, a power
// loss can (and the database itself is never committed without its fsyncs,
// so it cannot be torn by one). Every reader merges the sidecar: this store
// from memory, a read-only open from the file; the next writable open
// commits what a killed writer left there and empties it, and a commit that
// makes every volatile record durable empties it too.
func (b *Bolt) AppendVolatile(ctx context.Context, recs []Record) error {
	if b.readOnly {
		return &StoreError{Op: "append", Err: ErrReadOnly}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	var buf []byte
	for i := range recs {
		r := &recs[i]
		if r.TaskID == "" || r.N == 0 {
			return &InvalidError{Field: "record", Reason: "needs a TaskID and an N of at least 1"}
		}
		var err error
		if buf, err = appendVolatileLine(buf, r); err != nil {
			return &InvalidError{Field: "record", Reason: fmt.Sprintf("task %s record %d does not encode: %v", r.TaskID, r.N, err)}
		}
	}
	if len(buf) == 0 {
		return nil
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
		return ErrClosed
	}
	b.vmu.Lock()
	defer b.vmu.Unlock()
	if _, err := b.vfile.Write(buf); err != nil {
		// Drop a partial line, so the next one starts clean.
		b.vfile.Truncate(b.vsize)
		return &StoreError{Op: "append volatile", Err: err}
	}
	b.vsize += int64(len(buf))
	b.vol.add(recs)
	return nil
}

// pruneVolatile forgets the volatile records a committed batch made
// durable, and empties the sidecar once none is left.
func (b *Bolt) pruneVolatile(batch []*appendReq) {
	b.vmu.Lock()
	defer b.vmu.Unlock()
	if b.vol.empty() {
		return
	}
	for _, r := range batch {
		for i := range r.items {
			it := &r.items[i]
			b.vol.prune(string(it.task), binary.BigEndian.Uint64(it.key[:]))
		}
	}
	if b.vol.empty() && b.vsize > 0 && b.vfile.Truncate(0) == nil {
		b.vsize = 0
	}
}

// openBoltReadOnly opens an existing ledger file for reading only. A file
// that is not a bbolt database, or one without the ledger's buckets, is not
// a ledger.
// openStoreFile opens the store file without blocking and only if it is a
// regular file: a FIFO planted at the path is refused instead of hanging
// the host.
func openStoreFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	f, _, err := fsx.OpenFile(name, flag, perm)
	return f, err
}

func openBoltReadOnly(path string, opts BoltOptions) (*Bolt, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, &StoreError{Op: "open " + path, Err: err}
	}
	if !st.Mode().IsRegular() {
		return nil, &StoreError{Op: "open " + path, Err: errors.New("not a regular file")}
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: opts.Timeout, ReadOnly: true, OpenFile: openStoreFile})
	if err != nil {
		return nil, &StoreError{Op: "open " + path, Err: err}
	}
	err = db.View(func(tx *bolt.Tx) error {
		for _, name := range []string{bucketTasks, bucketResults} {
			if tx.Bucket([]byte(name)) == nil {
				return fmt.Errorf("no %q bucket: not a Pablo ledger", name)
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, &StoreError{Op: "open " + path, Err: err}
	}
	done := make(chan struct{})
	close(done) // no committer to join
	b := &Bolt{db: db, readOnly: true, done: done, vpath: path + volatileSuffix}
	// The sidecar is read, never created: its records are visible as they
	// were when the store was opened.
	data, err := fsx.ReadFile(context.Background(), b.vpath, maxVolatile)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		db.Close()
		return nil, &StoreError{Op: "open " + b.vpath, Err: err}
	}
	recs, _ := decodeVolatile(data)
	b.vol.add(recs)
	return b, nil
}

// Append implements [Store]. Records are encoded on the caller's goroutine and
// committed by the group committer; Append returns once their transaction is
// durable. If ctx ends first, Append returns ctx's error and the records may
// or may not become durable.
func (b *Bolt) Append(ctx context.Context, recs []Record) error {
	if b.readOnly {
		return &StoreError{Op: "append", Err: ErrReadOnly}
	}
	if len(recs) == 0 {
		return nil
	}
	req, _ := b.free.Get().(*appendReq)
	if req == nil {
		req = &appendReq{done: make(chan error, 1)}
	}
	req.items = slices.Grow(req.items[:0], len(recs))[:len(recs)]
	for i := range recs {
		r := &recs[i]
		if r.TaskID == "" || r.N == 0 {
			b.release(req)
			return &InvalidError{Field: "record", Reason: "needs a TaskID and an N of at least 1"}
		}
		v, err := encodeRecord(r)
		if err != nil {
			b.release(req)
			return &InvalidError{Field: "record", Reason: fmt.Sprintf("task %s record %d does not encode: %v", r.TaskID, r.N, err)}
		}
		it := &req.items[i]
		if i > 0 && recs[i-1].TaskID == r.TaskID {
			it.task = req.items[i-1].task
		} else {
			it.task = []byte(r.TaskID)
		}
		binary.BigEndian.PutUint64(it.key[:], r.N)
		it.value = v
		if r.Kind == RecordResult && r.Result != nil && r.Result.ID != "" {
			it.result = r.Result
		}
		if indexed(r.Kind) {
			if it.index, err = indexInfoOf(r); err != nil {
				b.release(req)
				return &InvalidError{Field: "record", Reason: fmt.Sprintf("task %s record %d does not encode: %v", r.TaskID, r.N, err)}
			}
		}
	}
	b.mu.RLock()
	if b.closed {
		b.mu.RUnlock()
		b.release(req)
		return ErrClosed
	}
	select {
	case b.reqs <- req:
		b.mu.RUnlock()
	case <-ctx.Done():
		b.mu.RUnlock()
		b.release(req)
		return ctx.Err()
	}
	select {
	case err := <-req.done:
		b.release(req)
		return err
	case <-ctx.Done():
		// The committer still holds req: it is not reused.
		return ctx.Err()
	}
}

// release makes req, which the committer does not hold, free for another
// Append, keeping none of its records.
func (b *Bolt) release(req *appendReq) {
	clear(req.items)
	b.free.Put(req)
}

func (b *Bolt) commitLoop() {
	defer close(b.done)
	batch := make([]*appendReq, 0, b.maxBatch)
	for first := range b.reqs {
		batch = append(batch[:0], first)
	drain:
		for len(batch) < b.maxBatch {
			select {
			case r, ok := <-b.reqs:
				if !ok {
					break drain
				}
				batch = append(batch, r)
			default:
				break drain
			}
		}
		err := b.db.Update(func(tx *bolt.Tx) error { return writeBatch(tx, batch) })
		b.commits.Add(1)
		if err != nil {
			err = &StoreError{Op: "commit", Err: err}
		} else {
			b.pruneVolatile(batch)
		}
		for _, r := range batch {
			r.done <- err
		}
		clear(batch)
	}
}

// chunkBits sets how many records share one chunk bucket of a task: 1<<5.
// A chunk bucket's key is chunkPrefix and the chunk's number, 8 bytes big
// endian, so chunk buckets sort after the records a task bucket holds
// directly (the layout before chunks, still read).
const (
	chunkBits   = 5
	chunkPrefix = 0xff
)

func chunkKey(n uint64) [9]byte {
	var k [9]byte
	k[0] = chunkPrefix
	binary.BigEndian.PutUint64(k[1:], n>>chunkBits)
	return k
}

// openBucket returns parent's bucket name, created if missing, filled to
// its pages' end: its keys only ever grow.
func openBucket(parent *bolt.Bucket, name []byte) (*bolt.Bucket, error) {
	b := parent.Bucket(name)
	if b == nil {
		var err error
		if b, err = parent.CreateBucket(name); err != nil {
			return nil, err
		}
	}
	b.FillPercent = 1
	return b, nil
}

// openTaskBucket is openBucket for a task's bucket in "tasks", and reports
// whether it was created: the task's first record.
func openTaskBucket(tasks *bolt.Bucket, name []byte) (*bolt.Bucket, bool, error) {
	if b := tasks.Bucket(name); b != nil {
		b.FillPercent = 1
		return b, false, nil
	}
	b, err := openBucket(tasks, name)
	return b, err == nil, err
}

// lastN returns the N of the last record of a task's bucket, zero if it
// holds none.
func lastN(task *bolt.Bucket) uint64 {
	k, v := task.Cursor().Last()
	if len(k) == 9 && k[0] == chunkPrefix && v == nil {
		k, _ = task.Bucket(k).Cursor().Last()
	}
	if len(k) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(k)
}

func writeBatch(tx *bolt.Tx, batch []*appendReq) error {
	tasks := tx.Bucket([]byte(bucketTasks))
	var ix boltIndex // opened for the first record that changes it
	index := func() boltIndex {
		if ix.pending == nil {
			ix = openIndex(tx)
		}
		return ix
	}
	var results *bolt.Bucket // opened for the first result only
	var last []byte
	var lastChunk [9]byte
	var task, chunk *bolt.Bucket
	for _, r := range batch {
		for i := range r.items {
			it := &r.items[i]
			var err error
			if task == nil || string(last) != string(it.task) {
				var created bool
				if task, created, err = openTaskBucket(tasks, it.task); err != nil {
					return err
				}
				if created {
					if err := index().created(it.task); err != nil {
						return err
					}
				}
				last, chunk = it.task, nil
			}
			// A commit changes the path from the root to the last leaf of
			// each bucket it writes: chunks keep that path short however
			// long the task.
			if ck := chunkKey(binary.BigEndian.Uint64(it.key[:])); chunk == nil || ck != lastChunk {
				if chunk, err = openBucket(task, ck[:]); err != nil {
					return err
				}
				lastChunk = ck
			}
			if it.index != nil && chunk.Get(it.key[:]) == nil {
				// A record seen for the first time (a barrier carries
				// volatile records again) changes the index.
				if err := index().apply(it.task, binary.BigEndian.Uint64(it.key[:]), it.index); err != nil {
					return err
				}
			}
			if err := chunk.Put(it.key[:], it.value); err != nil {
				return err
			}
			if it.result == nil {
				continue
			}
			if results == nil {
				results = tx.Bucket([]byte(bucketResults))
			}
			if results.Get([]byte(it.result.ID)) == nil {
				if err := results.Put([]byte(it.result.ID), it.result.Data); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// Records implements [Store].
func (b *Bolt) Records(ctx context.Context, taskID string) ([]Record, error) {
	var recs []Record
	known := true
	err := b.view(func(tx *bolt.Tx) error {
		bk := tx.Bucket([]byte(bucketTasks)).Bucket([]byte(taskID))
		if bk == nil {
			known = false // unless it has volatile records
			return nil
		}
		var read func(k, v []byte) error
		read = func(k, v []byte) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			if v == nil { // a chunk bucket
				return bk.Bucket(k).ForEach(read)
			}
			var r Record
			if err := json.Unmarshal(v, &r); err != nil {
				return &StoreError{Op: "decode", Err: fmt.Errorf("task %s record %x: %w", taskID, k, err)}
			}
			recs = append(recs, r)
			return nil
		}
		return bk.ForEach(read)
	})
	if err != nil {
		return recs, err
	}
	b.vmu.Lock()
	recs = b.vol.merge(taskID, recs)
	b.vmu.Unlock()
	if !known && len(recs) == 0 {
		return nil, &StateError{What: "task", ID: taskID, Op: "read", Reason: reasonUnknown}
	}
	return recs, nil
}

// Tasks implements [Store].
func (b *Bolt) Tasks(ctx context.Context) ([]string, error) {
	var ids []string
	err := b.view(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte(bucketTasks)).ForEachBucket(func(k []byte) error {
			ids = append(ids, string(k))
			return ctx.Err()
		})
	})
	if err != nil {
		return ids, err
	}
	b.vmu.Lock()
	defer b.vmu.Unlock()
	n := len(ids)
	for id := range b.vol.tasks {
		if _, found := slices.BinarySearch(ids[:n], id); !found {
			ids = append(ids, id)
		}
	}
	if len(ids) > n {
		slices.Sort(ids)
	}
	return ids, nil
}

// Result implements [Store].
func (b *Bolt) Result(_ context.Context, ref ResultRef) (json.RawMessage, error) {
	var data json.RawMessage
	err := b.view(func(tx *bolt.Tx) error {
		v := tx.Bucket([]byte(bucketResults)).Get([]byte(ref))
		if v == nil {
			b.vmu.Lock()
			data, ok := b.vol.result(ref)
			b.vmu.Unlock()
			if ok {
				v = data
			}
		}
		if v == nil {
			return &StateError{What: "result", ID: string(ref), Op: "read", Reason: reasonUnknown}
		}
		data = append(json.RawMessage(nil), v...)
		return nil
	})
	return data, err
}

func (b *Bolt) view(fn func(*bolt.Tx) error) error {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
		return ErrClosed
	}
	err := b.db.View(fn)
	var se *StateError
	var st *StoreError
	if err != nil && !errors.As(err, &se) && !errors.As(err, &st) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		err = &StoreError{Op: "read", Err: err}
	}
	return err
}

// Close stops accepting appends, commits every queued one, joins the committer
// and closes the database file. Later calls return nil.
func (b *Bolt) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	if !b.readOnly {
		close(b.reqs)
	}
	b.mu.Unlock()
	<-b.done
	if b.vfile != nil {
		// Make what is still only volatile durable, and drop the sidecar.
		b.vmu.Lock()
		err := b.importVolatile(&b.vol)
		if err == nil {
			b.vol = volatileSet{}
			err = os.Remove(b.vpath)
		}
		b.vfile.Close()
		b.vmu.Unlock()
		if err != nil {
			b.db.Close()
			return &StoreError{Op: "close " + b.vpath, Err: err}
		}
	}
	if err := b.db.Close(); err != nil {
		return &StoreError{Op: "close", Err: err}
	}
	return nil
}

// Commits reports how many transactions the store has committed since it was
// opened: barriers, fewer when concurrent appends shared one. Each is two
// fdatasyncs of the file (its pages, then its meta page) unless NoSync is set.
func (b *Bolt) Commits() uint64 { return b.commits.Load() }
