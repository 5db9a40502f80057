package ledger

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

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

// Bucket names: "tasks" holds one sub-bucket per task, keyed by the record's
// N as 8 big-endian bytes; "results" maps a ResultRef to canonical JSON.
const (
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
}

type appendReq struct {
	items []encodedRecord
	done  chan error
}

type encodedRecord struct {
	task   []byte
	key    [8]byte
	value  []byte
	result ResultRef
	data   []byte
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
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: opts.Timeout, NoSync: opts.NoSync, OpenFile: openStoreFile})
	if err != nil {
		return nil, &StoreError{Op: "open " + path, Err: err}
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range []string{bucketTasks, bucketResults} {
			if _, err := tx.CreateBucketIfNotExists([]byte(name)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, &StoreError{Op: "initialize " + path, Err: err}
	}
	b := &Bolt{db: db, maxBatch: opts.MaxBatch, reqs: make(chan *appendReq, opts.MaxBatch), done: make(chan struct{})}
	go b.commitLoop()
	return b, nil
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
	return &Bolt{db: db, readOnly: true, done: done}, nil
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
	req := &appendReq{items: make([]encodedRecord, len(recs)), done: make(chan error, 1)}
	for i := range recs {
		r := &recs[i]
		if r.TaskID == "" || r.N == 0 {
			return &InvalidError{Field: "record", Reason: "needs a TaskID and an N of at least 1"}
		}
		v, err := encodeRecord(r)
		if err != nil {
			return &InvalidError{Field: "record", Reason: fmt.Sprintf("task %s record %d does not encode: %v", r.TaskID, r.N, err)}
		}
		it := &req.items[i]
		it.task = []byte(r.TaskID)
		binary.BigEndian.PutUint64(it.key[:], r.N)
		it.value = v
		if r.Kind == RecordResult && r.Result != nil {
			it.result, it.data = r.Result.ID, r.Result.Data
		}
	}
	b.mu.RLock()
	if b.closed {
		b.mu.RUnlock()
		return ErrClosed
	}
	select {
	case b.reqs <- req:
		b.mu.RUnlock()
	case <-ctx.Done():
		b.mu.RUnlock()
		return ctx.Err()
	}
	select {
	case err := <-req.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
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
		}
		for _, r := range batch {
			r.done <- err
		}
		clear(batch)
	}
}

func writeBatch(tx *bolt.Tx, batch []*appendReq) error {
	tasks := tx.Bucket([]byte(bucketTasks))
	results := tx.Bucket([]byte(bucketResults))
	var last []byte
	var bucket *bolt.Bucket
	for _, r := range batch {
		for i := range r.items {
			it := &r.items[i]
			if bucket == nil || string(last) != string(it.task) {
				var err error
				if bucket, err = tasks.CreateBucketIfNotExists(it.task); err != nil {
					return err
				}
				// A task's keys only ever grow: fill each page before
				// splitting it, which halves the pages and the splits.
				bucket.FillPercent = 1
				last = it.task
			}
			if err := bucket.Put(it.key[:], it.value); err != nil {
				return err
			}
			if it.result != "" && results.Get([]byte(it.result)) == nil {
				if err := results.Put([]byte(it.result), it.data); err != nil {
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
	err := b.view(func(tx *bolt.Tx) error {
		bk := tx.Bucket([]byte(bucketTasks)).Bucket([]byte(taskID))
		if bk == nil {
			return &StateError{What: "task", ID: taskID, Op: "read", Reason: reasonUnknown}
		}
		return bk.ForEach(func(k, v []byte) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			var r Record
			if err := json.Unmarshal(v, &r); err != nil {
				return &StoreError{Op: "decode", Err: fmt.Errorf("task %s record %x: %w", taskID, k, err)}
			}
			recs = append(recs, r)
			return nil
		})
	})
	return recs, err
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
	return ids, err
}

// Result implements [Store].
func (b *Bolt) Result(_ context.Context, ref ResultRef) (json.RawMessage, error) {
	var data json.RawMessage
	err := b.view(func(tx *bolt.Tx) error {
		v := tx.Bucket([]byte(bucketResults)).Get([]byte(ref))
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
	if err := b.db.Close(); err != nil {
		return &StoreError{Op: "close", Err: err}
	}
	return nil
}

// Commits reports how many transactions the store has committed since it was
// opened: barriers, fewer when concurrent appends shared one. Each is two
// fdatasyncs of the file (its pages, then its meta page) unless NoSync is set.
func (b *Bolt) Commits() uint64 { return b.commits.Load() }
