package postgres

import (
	"context"
	"errors"
	"iter"

	"github.com/jackc/pgx/v5"

	"github.com/pabloagent/pablo/ledger"
)

// The store's index (see [ledger.IndexedStore]) is three tables of keys,
// written in the transaction of the records that change them (schema
// version 2 made them and filled them from the records already there):
//
//   - pablo_pending: a task not yet terminal, with its root agent's ID;
//   - pablo_groups: (task_id, n) of each live process group record;
//   - pablo_sessions: (session_id, turn, task_id, n) of each task record
//     that links its task to a session.
//
// Every statement that changes them joins the record that changes them by
// its key and digest, so a record the fence refused (its task's lease not
// held) changes nothing, and the reads take what the keys name from
// pablo_records, checked against its digest as Records checks it.
const (
	sqlIndexCreated = `INSERT INTO pablo_pending (task_id, root_agent)
		SELECT t, '' FROM unnest($1::text[]) AS t
		WHERE EXISTS (SELECT 1 FROM pablo_records r WHERE r.task_id = t)
		ON CONFLICT (task_id) DO NOTHING`
	sqlIndexRoot = `UPDATE pablo_pending p SET root_agent = u.root
		FROM unnest($1::text[], $2::bigint[], $3::bytea[], $4::text[]) AS u(task_id, n, digest, root)
		WHERE p.task_id = u.task_id
		AND EXISTS (SELECT 1 FROM pablo_records r WHERE r.task_id = u.task_id AND r.n = u.n AND r.digest = u.digest)`
	sqlIndexSessions = `INSERT INTO pablo_sessions (session_id, turn, task_id, n)
		SELECT u.session_id, u.turn, u.task_id, u.n
		FROM unnest($1::text[], $2::bigint[], $3::bytea[], $4::text[], $5::bigint[]) AS u(task_id, n, digest, session_id, turn)
		WHERE EXISTS (SELECT 1 FROM pablo_records r WHERE r.task_id = u.task_id AND r.n = u.n AND r.digest = u.digest)
		ON CONFLICT DO NOTHING`
	sqlIndexGroups = `INSERT INTO pablo_groups (task_id, n)
		SELECT u.task_id, u.n
		FROM unnest($1::text[], $2::bigint[], $3::bytea[]) AS u(task_id, n, digest)
		WHERE EXISTS (SELECT 1 FROM pablo_pending p WHERE p.task_id = u.task_id)
		AND EXISTS (SELECT 1 FROM pablo_records r WHERE r.task_id = u.task_id AND r.n = u.n AND r.digest = u.digest)
		ON CONFLICT DO NOTHING`
	sqlIndexFinished = `DELETE FROM pablo_pending p
		USING unnest($1::text[], $2::bigint[], $3::bytea[], $4::text[]) AS u(task_id, n, digest, agent)
		WHERE p.task_id = u.task_id AND p.root_agent = u.agent
		AND EXISTS (SELECT 1 FROM pablo_records r WHERE r.task_id = u.task_id AND r.n = u.n AND r.digest = u.digest)`
	sqlIndexEnded = `DELETE FROM pablo_groups g
		WHERE g.task_id = ANY($1::text[])
		AND NOT EXISTS (SELECT 1 FROM pablo_pending p WHERE p.task_id = g.task_id)`
)

// indexWrite gathers what one commit changes in the index, record by
// record, as arrays for the statements above.
type indexWrite struct {
	created []string
	// Each list is of (task, n, digest) and its own columns.
	rootTask, sessTask, groupTask, finTask []string
	rootN, sessN, groupN, finN             []int64
	rootDigest, sessDigest, groupDigest    [][]byte
	finDigest                              [][]byte
	root, sessID, finAgent                 []string
	sessTurn                               []int64
}

// add takes what it changes in the index; isNew is set when the commit
// takes the task's lease, so this is its first record.
func (x *indexWrite) add(it *item, isNew bool) {
	if isNew && it.n == 1 {
		x.created = append(x.created, it.task)
	}
	n := int64(it.n)
	if it.taskRecord {
		x.rootTask, x.rootN, x.rootDigest, x.root = append(x.rootTask, it.task), append(x.rootN, n), append(x.rootDigest, it.digest), append(x.root, it.rootAgent)
		if l := it.session; l != nil {
			x.sessTask, x.sessN, x.sessDigest = append(x.sessTask, it.task), append(x.sessN, n), append(x.sessDigest, it.digest)
			x.sessID, x.sessTurn = append(x.sessID, l.SessionID), append(x.sessTurn, int64(l.Turn))
		}
	}
	if it.group {
		x.groupTask, x.groupN, x.groupDigest = append(x.groupTask, it.task), append(x.groupN, n), append(x.groupDigest, it.digest)
	}
	if it.finish != "" || it.isFinish {
		x.finTask, x.finN, x.finDigest, x.finAgent = append(x.finTask, it.task), append(x.finN, n), append(x.finDigest, it.digest), append(x.finAgent, it.finish)
	}
}

// queue adds the index's statements to b, after the records' insert, in
// the order a fold applies them: a task starts pending, its task record
// names its root, its groups are live while it is pending, and its root's
// terminal record ends it and its groups.
func (x *indexWrite) queue(b *pgx.Batch) {
	if len(x.created) > 0 {
		b.Queue(sqlIndexCreated, x.created)
	}
	if len(x.rootTask) > 0 {
		b.Queue(sqlIndexRoot, x.rootTask, x.rootN, x.rootDigest, x.root)
	}
	if len(x.sessTask) > 0 {
		b.Queue(sqlIndexSessions, x.sessTask, x.sessN, x.sessDigest, x.sessID, x.sessTurn)
	}
	if len(x.groupTask) > 0 {
		b.Queue(sqlIndexGroups, x.groupTask, x.groupN, x.groupDigest)
	}
	if len(x.finTask) > 0 {
		b.Queue(sqlIndexFinished, x.finTask, x.finN, x.finDigest, x.finAgent)
		b.Queue(sqlIndexEnded, x.finTask)
	}
}

// Pending implements [ledger.IndexedStore].
func (s *Store) Pending(ctx context.Context) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		if s.isClosed() {
			yield("", ledger.ErrClosed)
			return
		}
		rows, err := s.pool.Query(ctx, `SELECT task_id FROM pablo_pending ORDER BY task_id`)
		if err != nil {
			yield("", readError(err))
			return
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			yield("", readError(err))
			return
		}
		for _, id := range ids {
			if !yield(id, nil) {
				return
			}
		}
	}
}

// ProcessGroups implements [ledger.IndexedStore].
func (s *Store) ProcessGroups(ctx context.Context) iter.Seq2[ledger.TaskProcessGroup, error] {
	return func(yield func(ledger.TaskProcessGroup, error) bool) {
		var out []ledger.TaskProcessGroup
		err := s.readIndex(ctx, `SELECT g.task_id, g.n, r.body, r.digest FROM pablo_groups g
			JOIN pablo_records r ON r.task_id = g.task_id AND r.n = g.n ORDER BY g.task_id, g.n`, nil,
			func(rows pgx.Rows) error {
				var id string
				var n int64
				var body, digest []byte
				if err := rows.Scan(&id, &n, &body, &digest); err != nil {
					return err
				}
				r, err := decodeRecord(id, uint64(n), body, digest)
				if err != nil {
					return err
				}
				if r.ProcessGroup == nil {
					return &TamperError{TaskID: id, N: uint64(n), Reason: "the index names it a process group, and it is not one"}
				}
				out = append(out, ledger.TaskProcessGroup{TaskID: id, N: uint64(n), ProcessGroupRecord: *r.ProcessGroup})
				return nil
			})
		if err != nil {
			yield(ledger.TaskProcessGroup{}, err)
			return
		}
		for _, g := range out {
			if !yield(g, nil) {
				return
			}
		}
	}
}

// ForgetProcessGroups implements [ledger.IndexedStore].
func (s *Store) ForgetProcessGroups(ctx context.Context, groups []ledger.TaskProcessGroup) error {
	if s.readOnly {
		return &ledger.StoreError{Op: "forget process groups", Err: ledger.ErrReadOnly}
	}
	if s.isClosed() {
		return ledger.ErrClosed
	}
	ids := make([]string, len(groups))
	ns := make([]int64, len(groups))
	for i, g := range groups {
		ids[i], ns[i] = g.TaskID, int64(g.N)
	}
	_, err := s.pool.Exec(ctx, `DELETE FROM pablo_groups g USING unnest($1::text[], $2::bigint[]) AS u(task_id, n)
		WHERE g.task_id = u.task_id AND g.n = u.n`, ids, ns)
	if err != nil {
		return &ledger.StoreError{Op: "forget process groups", Err: err}
	}
	return nil
}

// SessionTasks implements [ledger.IndexedStore]: one query reads the
// session's entries, each task's task record and its last record.
func (s *Store) SessionTasks(ctx context.Context, sessionID string) iter.Seq2[ledger.SessionTask, error] {
	return func(yield func(ledger.SessionTask, error) bool) {
		var out []ledger.SessionTask
		err := s.readIndex(ctx, `SELECT s.task_id, s.n, r.body, r.digest, l.n, l.body, l.digest
			FROM pablo_sessions s
			JOIN pablo_records r ON r.task_id = s.task_id AND r.n = s.n
			CROSS JOIN LATERAL (SELECT x.n, x.body, x.digest FROM pablo_records x WHERE x.task_id = s.task_id ORDER BY x.n DESC LIMIT 1) l
			WHERE $1 = '' OR s.session_id = $1
			ORDER BY s.session_id, s.turn, s.task_id, s.n`, []any{sessionID},
			func(rows pgx.Rows) error {
				var id string
				var n, ln int64
				var body, digest, lbody, ldigest []byte
				if err := rows.Scan(&id, &n, &body, &digest, &ln, &lbody, &ldigest); err != nil {
					return err
				}
				r, err := decodeRecord(id, uint64(n), body, digest)
				if err != nil {
					return err
				}
				last, err := decodeRecord(id, uint64(ln), lbody, ldigest)
				if err != nil {
					return err
				}
				if r.Task == nil || r.Task.Session == nil {
					return &TamperError{TaskID: id, N: uint64(n), Reason: "the index names it a session's task record, and it is not one"}
				}
				out = append(out, ledger.SessionTask{TaskID: id, Session: *r.Task.Session, Updated: last.Time})
				return nil
			})
		if err != nil {
			yield(ledger.SessionTask{}, err)
			return
		}
		for _, st := range out {
			if !yield(st, nil) {
				return
			}
		}
	}
}

// TasksAfter implements [ledger.TaskPager].
func (s *Store) TasksAfter(ctx context.Context, after string, limit int) ([]string, error) {
	if limit <= 0 {
		if s.isClosed() {
			return nil, ledger.ErrClosed
		}
		return nil, nil
	}
	return s.taskIDs(ctx, `SELECT task_id FROM pablo_leases WHERE task_id > $1 ORDER BY task_id LIMIT $2`, after, limit)
}

// readIndex runs one query of the index and calls each for every row.
func (s *Store) readIndex(ctx context.Context, sql string, args []any, each func(pgx.Rows) error) error {
	if s.isClosed() {
		return ledger.ErrClosed
	}
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return readError(err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := each(rows); err != nil {
			var te *TamperError
			if errors.As(err, &te) {
				return &ledger.StoreError{Op: "read", Err: err}
			}
			return readError(err)
		}
	}
	if err := rows.Err(); err != nil {
		return readError(err)
	}
	return nil
}

// The store keeps the index and lists its tasks a page at a time.
var (
	_ ledger.IndexedStore = (*Store)(nil)
	_ ledger.TaskPager    = (*Store)(nil)
)
