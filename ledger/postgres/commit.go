package postgres

import (
	"context"
	"crypto/sha256"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pabloagent/pablo/internal/jsonx"
	"github.com/pabloagent/pablo/ledger"
)

// appendReq is one Append (or AppendVolatile) waiting for the committer.
type appendReq struct {
	items    []item
	volatile bool
	done     chan error
}

// item is one record ready to be written: its key, its JSON and digest,
// the result it carries, and what it means for the task's lease.
type item struct {
	task   string
	n      uint64
	body   []byte
	digest []byte
	result *ledger.ResultRecord
	// rootAgent is set on a task record: the agent whose terminal record
	// releases the lease. finish is set on a finish record.
	rootAgent, finish string
	// What the record changes in the index (see index.go): taskRecord is
	// set on a task record, session on one with a session, group on a
	// process group record.
	taskRecord, group, isFinish bool
	session                     *ledger.SessionLink
}

// Append implements [ledger.Store]: the records are encoded on the caller's
// goroutine and committed by the group committer; Append returns once their
// transaction has committed (synchronous_commit as the server sets it: on
// by default, so the commit's WAL is flushed). If ctx ends first, Append
// returns ctx's error and the records may or may not become durable.
func (s *Store) Append(ctx context.Context, recs []ledger.Record) error {
	return s.append(ctx, recs, false)
}

// AppendVolatile implements [ledger.VolatileStore]: the records are
// committed with synchronous_commit off, so the commit returns before its
// WAL reaches the disk: visible to every reader at once and surviving a kill
// of this process, not a crash of the server's machine. A later Append may
// carry the same records again; the store keeps them once.
func (s *Store) AppendVolatile(ctx context.Context, recs []ledger.Record) error {
	return s.append(ctx, recs, true)
}

func (s *Store) append(ctx context.Context, recs []ledger.Record, volatile bool) error {
	if s.readOnly {
		return &ledger.StoreError{Op: "append", Err: ledger.ErrReadOnly}
	}
	if len(recs) == 0 {
		return nil
	}
	req := &appendReq{items: make([]item, len(recs)), volatile: volatile, done: make(chan error, 1)}
	for i := range recs {
		r := &recs[i]
		if r.TaskID == "" || r.N == 0 {
			return &ledger.InvalidError{Field: "record", Reason: "needs a TaskID and an N of at least 1"}
		}
		if r.N > 1<<63-1 {
			return &ledger.InvalidError{Field: "record", Reason: fmt.Sprintf("task %s record N %d does not fit a bigint", r.TaskID, r.N)}
		}
		// Not json.Marshal: it would HTML-escape a result's Data, whose
		// bytes are its content address.
		body, err := jsonx.Marshal(r)
		if err != nil {
			return &ledger.InvalidError{Field: "record", Reason: fmt.Sprintf("task %s record %d does not encode: %v", r.TaskID, r.N, err)}
		}
		sum := sha256.Sum256(body)
		it := &req.items[i]
		*it = item{task: r.TaskID, n: r.N, body: body, digest: sum[:]}
		if r.Kind == ledger.RecordResult && r.Result != nil && r.Result.ID != "" {
			it.result = r.Result
		}
		if r.Kind == ledger.RecordTask && r.Task != nil {
			it.rootAgent, it.taskRecord, it.session = r.Task.RootAgentID, true, r.Task.Session
		}
		it.group = r.Kind == ledger.RecordProcessGroup && r.ProcessGroup != nil
		if r.Kind == ledger.RecordFinish && r.Finish != nil {
			it.finish, it.isFinish = r.Finish.AgentID, true
		}
	}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return ledger.ErrClosed
	}
	select {
	case s.reqs <- req:
		s.mu.RUnlock()
	case <-ctx.Done():
		s.mu.RUnlock()
		return ctx.Err()
	}
	select {
	case err := <-req.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Store) commitLoop() {
	defer close(s.done)
	batch := make([]*appendReq, 0, s.maxBatch)
	for first := range s.reqs {
		batch = append(batch[:0], first)
	drain:
		for len(batch) < s.maxBatch {
			select {
			case r, ok := <-s.reqs:
				if !ok {
					break drain
				}
				batch = append(batch, r)
			default:
				break drain
			}
		}
		s.commit(batch)
		clear(batch)
	}
}

// taskWrite is what one commit does for one task.
type taskWrite struct {
	token     int64 // the fencing token held, 0 when the commit acquires the lease
	rootAgent string
	release   bool
	refused   error // set when the task cannot be written
	acquired  int64 // the token this commit's acquisition got
}

// The statements of one commit. The fencing is the database's: sqlFence
// locks this owner's live lease rows FOR UPDATE (so a concurrent claim
// waits for this commit), and sqlRecords and sqlResults insert only the
// rows whose task's lease row has the token the write carries.
const (
	sqlAcquire = `INSERT INTO pablo_leases (task_id, owner, token, expires_at)
		SELECT t, $2, nextval('pablo_fencing_tokens'), $3 FROM unnest($1::text[]) AS t
		ON CONFLICT (task_id) DO NOTHING`
	sqlFence = `SELECT task_id, token FROM pablo_leases
		WHERE task_id = ANY($1::text[]) AND owner = $2 AND NOT released AND expires_at > $3
		FOR UPDATE`
	sqlRecords = `INSERT INTO pablo_records (task_id, n, body, digest)
		SELECT r.task_id, r.n, r.body, r.digest
		FROM unnest($1::text[], $2::bigint[], $3::bytea[], $4::bytea[], $5::bigint[]) AS r(task_id, n, body, digest, token)
		JOIN pablo_leases l ON l.task_id = r.task_id
		WHERE l.owner = $6 AND NOT l.released AND l.expires_at > $7 AND (r.token = 0 OR l.token = r.token)
		ON CONFLICT (task_id, n) DO NOTHING`
	sqlResults = `INSERT INTO pablo_results (ref, data)
		SELECT r.ref, r.data
		FROM unnest($1::text[], $2::bytea[], $3::text[], $4::bigint[]) AS r(ref, data, task_id, token)
		JOIN pablo_leases l ON l.task_id = r.task_id
		WHERE l.owner = $5 AND NOT l.released AND l.expires_at > $6 AND (r.token = 0 OR l.token = r.token)
		ON CONFLICT (ref) DO NOTHING`
	sqlRelease = `UPDATE pablo_leases l SET released = true
		FROM unnest($1::text[], $2::bigint[]) AS f(task_id, token)
		WHERE l.task_id = f.task_id AND l.owner = $3 AND (f.token = 0 OR l.token = f.token)`
)

// commit writes batch in one transaction and acknowledges each request.
// The transaction first takes the new tasks' leases and reads (locking
// them) this owner's live leases of every task in the batch; a request
// that touches a task whose lease is not held then writes nothing, so an
// Append stays all or nothing; the inserts that follow check the token in
// SQL again.
func (s *Store) commit(batch []*appendReq) {
	ctx := context.Background()
	now := s.clock.Now()
	tasks := map[string]*taskWrite{}
	var order []string
	volatile := true
	for _, r := range batch {
		volatile = volatile && r.volatile
		for i := range r.items {
			it := &r.items[i]
			tw := tasks[it.task]
			if tw == nil {
				tw = &taskWrite{}
				tasks[it.task] = tw
				order = append(order, it.task)
				h, state := s.leases.get(it.task)
				switch {
				case state == leaseHeld:
					tw.token, tw.rootAgent = h.token, h.rootAgent
				case state == leaseNone && it.n == 1:
					// A new task: this commit takes its lease.
				default:
					tw.refused = &ledger.LeaseError{Lost: true, Lease: ledger.Lease{TaskID: it.task, Owner: s.owner, Token: uint64(h.token), Released: state == leaseReleased}}
				}
			}
			if it.rootAgent != "" && tw.rootAgent == "" {
				tw.rootAgent = it.rootAgent
			}
			if it.finish != "" && it.finish == tw.rootAgent {
				tw.release = true
			}
		}
	}
	err := s.write(ctx, now, volatile, batch, tasks, order)
	if err == nil {
		s.commits.Add(1)
	} else {
		err = &ledger.StoreError{Op: "commit", Err: err}
	}
	for _, r := range batch {
		rerr := err
		if rerr == nil {
			for i := range r.items {
				if tw := tasks[r.items[i].task]; tw.refused != nil {
					rerr = &ledger.StoreError{Op: "append", Err: tw.refused}
					break
				}
			}
		}
		r.done <- rerr
	}
}

// refuses reports whether r touches a task that cannot be written.
func refuses(r *appendReq, tasks map[string]*taskWrite) bool {
	for i := range r.items {
		if tasks[r.items[i].task].refused != nil {
			return true
		}
	}
	return false
}

// write runs one commit's transaction: two round trips (the leases, then
// the rows) and the commit. On success it updates the store's leases;
// tasks whose lease the database did not show held are marked refused.
func (s *Store) write(ctx context.Context, now time.Time, volatile bool, batch []*appendReq, tasks map[string]*taskWrite, order []string) error {
	var newTasks, fenceTasks []string
	for _, id := range order {
		if tw := tasks[id]; tw.refused == nil {
			if tw.token == 0 {
				newTasks = append(newTasks, id)
			}
			fenceTasks = append(fenceTasks, id)
		}
	}
	if len(fenceTasks) == 0 {
		return nil
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	b := &pgx.Batch{}
	if volatile {
		b.Queue(`SET LOCAL synchronous_commit = off`)
	}
	if len(newTasks) > 0 {
		b.Queue(sqlAcquire, newTasks, s.owner, now.Add(s.ttl))
	}
	held := map[string]int64{}
	b.Queue(sqlFence, fenceTasks, s.owner, now).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var id string
			var tok int64
			if err := rows.Scan(&id, &tok); err != nil {
				return err
			}
			held[id] = tok
		}
		return rows.Err()
	})
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return err
	}
	for _, id := range fenceTasks {
		tw := tasks[id]
		if tok, ok := held[id]; !ok || (tw.token != 0 && tok != tw.token) {
			tw.refused = &ledger.LeaseError{Lost: true, Lease: ledger.Lease{TaskID: id, Owner: s.owner, Token: uint64(tw.token)}}
		} else if tw.token == 0 {
			tw.acquired = tok
		}
	}
	var ix indexWrite
	var (
		recTask            []string
		recN               []int64
		recBody, recDigest [][]byte
		recToken           []int64
		resRef, resTask    []string
		resData            [][]byte
		resToken           []int64
		relTasks           []string
		relTokens          []int64
	)
	for _, r := range batch {
		if refuses(r, tasks) {
			continue
		}
		for i := range r.items {
			it := &r.items[i]
			tw := tasks[it.task]
			recTask = append(recTask, it.task)
			recN = append(recN, int64(it.n))
			recBody = append(recBody, it.body)
			recDigest = append(recDigest, it.digest)
			recToken = append(recToken, tw.token)
			ix.add(it, tw.token == 0)
			if it.result != nil {
				resRef = append(resRef, string(it.result.ID))
				resData = append(resData, it.result.Data)
				resTask = append(resTask, it.task)
				resToken = append(resToken, tw.token)
			}
		}
	}
	for _, id := range order {
		if tw := tasks[id]; tw.refused == nil && tw.release {
			relTasks = append(relTasks, id)
			relTokens = append(relTokens, tw.token)
		}
	}
	b = &pgx.Batch{}
	if len(recTask) > 0 {
		b.Queue(sqlRecords, recTask, recN, recBody, recDigest, recToken, s.owner, now)
	}
	if len(resRef) > 0 {
		b.Queue(sqlResults, resRef, resData, resTask, resToken, s.owner, now)
	}
	ix.queue(b)
	if len(relTasks) > 0 {
		b.Queue(sqlRelease, relTasks, relTokens, s.owner)
	}
	if b.Len() > 0 {
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	for _, id := range order {
		tw := tasks[id]
		switch {
		case tw.refused != nil:
			if _, state := s.leases.get(id); state == leaseHeld {
				s.leases.lose(id, tw.token)
			}
		case tw.release:
			s.leases.release(id, max(tw.token, tw.acquired))
		case tw.token == 0:
			s.leases.hold(id, tw.acquired, tw.rootAgent, now.Add(s.ttl))
		}
	}
	return nil
}
