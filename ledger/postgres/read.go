package postgres

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/pabloagent/pablo/ledger"
)

// ErrTampered: a row read from the database does not match what was
// written: a record whose bytes no longer match their digest, or a result
// whose bytes no longer match its content address. Also matches
// ledger.ErrStore.
var ErrTampered = errors.New("ledger/postgres: stored data does not match its digest")

// TamperError reports a row that failed its check on read: record N of
// TaskID, or the result Ref.
type TamperError struct {
	TaskID string
	N      uint64
	Ref    ledger.ResultRef
	Reason string
}

func (e *TamperError) Error() string {
	if e.Ref != "" && e.TaskID == "" {
		return fmt.Sprintf("ledger/postgres: result %s: %s; the row was changed after it was written: restore it from a backup", e.Ref, e.Reason)
	}
	return fmt.Sprintf("ledger/postgres: task %q record %d: %s; the row was changed after it was written: restore it from a backup", e.TaskID, e.N, e.Reason)
}

// Is matches ErrTampered.
func (e *TamperError) Is(target error) bool { return target == ErrTampered }

func readError(err error) error {
	var te *TamperError
	if errors.As(err, &te) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return &ledger.StoreError{Op: "read", Err: err}
}

// Records implements [ledger.Store]: a task's records in N order, each
// checked against its digest (and a result record against its content
// address) before it is decoded.
func (s *Store) Records(ctx context.Context, taskID string) ([]ledger.Record, error) {
	if s.isClosed() {
		return nil, ledger.ErrClosed
	}
	rows, err := s.pool.Query(ctx, `SELECT n, body, digest FROM pablo_records WHERE task_id = $1 ORDER BY n`, taskID)
	if err != nil {
		return nil, readError(err)
	}
	defer rows.Close()
	var recs []ledger.Record
	for rows.Next() {
		var n int64
		var body, digest []byte
		if err := rows.Scan(&n, &body, &digest); err != nil {
			return recs, readError(err)
		}
		r, err := decodeRecord(taskID, uint64(n), body, digest)
		if err != nil {
			return recs, &ledger.StoreError{Op: "read", Err: err}
		}
		recs = append(recs, r)
	}
	if err := rows.Err(); err != nil {
		return recs, readError(err)
	}
	if len(recs) == 0 {
		return nil, ledger.NotFoundError("task", taskID)
	}
	return recs, nil
}

func decodeRecord(taskID string, n uint64, body, digest []byte) (ledger.Record, error) {
	sum := sha256.Sum256(body)
	if !bytes.Equal(sum[:], digest) {
		return ledger.Record{}, &TamperError{TaskID: taskID, N: n, Reason: "its bytes do not match their SHA-256 digest"}
	}
	var r ledger.Record
	if err := json.Unmarshal(body, &r); err != nil {
		return ledger.Record{}, &TamperError{TaskID: taskID, N: n, Reason: "it does not decode: " + err.Error()}
	}
	if r.TaskID != taskID || r.N != n {
		return ledger.Record{}, &TamperError{TaskID: taskID, N: n, Reason: fmt.Sprintf("it says it is task %q record %d", r.TaskID, r.N)}
	}
	if r.Kind == ledger.RecordResult && r.Result != nil && ledger.RefOf(r.Result.Data) != r.Result.ID {
		return ledger.Record{}, &TamperError{TaskID: taskID, N: n, Ref: r.Result.ID, Reason: "its result does not match its content address"}
	}
	return r, nil
}

// Tasks implements [ledger.Store]: every task ID, in ascending (bytewise)
// order.
func (s *Store) Tasks(ctx context.Context) ([]string, error) {
	return s.taskIDs(ctx, `SELECT task_id FROM pablo_leases ORDER BY task_id`)
}

// taskIDs runs a query whose rows are task IDs and collects them.
func (s *Store) taskIDs(ctx context.Context, sql string, args ...any) ([]string, error) {
	if s.isClosed() {
		return nil, ledger.ErrClosed
	}
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, readError(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, readError(err)
	}
	return ids, nil
}

// Result implements [ledger.Store]: the result's canonical JSON, checked
// against its content address.
func (s *Store) Result(ctx context.Context, ref ledger.ResultRef) (json.RawMessage, error) {
	if s.isClosed() {
		return nil, ledger.ErrClosed
	}
	var data []byte
	err := s.pool.QueryRow(ctx, `SELECT data FROM pablo_results WHERE ref = $1`, string(ref)).Scan(&data)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ledger.NotFoundError("result", string(ref))
	}
	if err != nil {
		return nil, readError(err)
	}
	if ledger.RefOf(data) != ref {
		return nil, &ledger.StoreError{Op: "read", Err: &TamperError{Ref: ref, Reason: "its bytes do not match its content address"}}
	}
	return data, nil
}
