package ledger

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Lease errors.
var (
	// ErrLeaseLost: the store refused a write because this process no
	// longer owns the task: its lease expired or another process claimed
	// it, and the write's fencing token is not the current one. The
	// records of that write were not kept. Also matches ErrStore when it
	// comes from an Append.
	ErrLeaseLost = errors.New("ledger: task lease lost")
	// ErrLeaseLive: a task's lease is still live, so another process may be
	// running it: recovery refuses to report its work as abandoned.
	ErrLeaseLive = errors.New("ledger: task lease is live")
)

// Lease is the ownership of one task by one process of a store that
// several processes share. Owner identifies the process; Token is the
// fencing token every write of the owner carries (it grows each time the
// task changes hands); Expires is when the lease ends unless its owner
// renews it. A released lease (the task settled, or its store closed)
// ends at once.
type Lease struct {
	TaskID   string    `json:"task_id"`
	Owner    string    `json:"owner"`
	Token    uint64    `json:"token"`
	Expires  time.Time `json:"expires"`
	Released bool      `json:"released"`
	// Live is whether the lease still holds, by the store's clock.
	Live bool `json:"live"`
}

// LeaseStore is an optional interface of a [Store] that several
// processes share (the PostgreSQL store): each task is owned by one
// process through a lease, and the store refuses a write whose fencing
// token is not the task's current one, with an error matching
// [ErrLeaseLost]. [Recover] and [RecoverTask] detect it and refuse to
// report a task whose lease is live ([ErrLeaseLive]): its work is not
// abandoned, only in flight elsewhere.
//
// It is optional so that a host's own Store keeps compiling; a wrapper
// that embeds a Store hides it, so forward Lease too. A store one process
// holds whole needs no leases: the bolt store implements it trivially,
// since the file lock already makes its writer the owner of every task.
type LeaseStore interface {
	Store
	// Lease returns the task's lease; a task the store has never leased
	// is an error matching [ErrNotFound].
	Lease(ctx context.Context, taskID string) (Lease, error)
}

// LeaseError reports a lease that stopped an operation: lost by the
// writer ([ErrLeaseLost]) or live when recovery needed it ended
// ([ErrLeaseLive]).
type LeaseError struct {
	Lease Lease
	// Lost is set when the lease was lost by the writer; otherwise it is
	// live.
	Lost bool
}

func (e *LeaseError) Error() string {
	if e.Lost {
		return fmt.Sprintf("ledger: task %q is no longer owned by this process (fencing token %d is not the current one): the write was refused; the task must end here", e.Lease.TaskID, e.Lease.Token)
	}
	return fmt.Sprintf("ledger: task %q is owned by %s until %s (lease live): recover it once the lease has expired", e.Lease.TaskID, e.Lease.Owner, e.Lease.Expires.UTC().Format(time.RFC3339Nano))
}

// Is matches ErrLeaseLost or ErrLeaseLive.
func (e *LeaseError) Is(target error) bool {
	return (target == ErrLeaseLost && e.Lost) || (target == ErrLeaseLive && !e.Lost)
}

// checkAbandoned returns a *LeaseError when store leases tasks and
// taskID's lease is live.
func checkAbandoned(ctx context.Context, store Store, taskID string) error {
	ls, ok := store.(LeaseStore)
	if !ok {
		return nil
	}
	l, err := ls.Lease(ctx, taskID)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if l.Live {
		return &LeaseError{Lease: l}
	}
	return nil
}

// Lease implements [LeaseStore] trivially: one process holds the file
// (its lock is exclusive), so no task of it is ever in flight in another
// process while this one reads it, and no task is ever leased: the answer
// is always an error matching [ErrNotFound].
func (b *Bolt) Lease(_ context.Context, taskID string) (Lease, error) {
	return Lease{}, &StateError{What: "lease of task", ID: taskID, Op: "read", Reason: reasonUnknown}
}

// NotFoundError returns the error a [Store] reports for an ID it does not
// hold (what names its kind: "task", "result", ...): a [*StateError]
// matching [ErrNotFound], as the stores of this package report it.
func NotFoundError(what, id string) *StateError {
	return &StateError{What: what, ID: id, Op: "read", Reason: reasonUnknown}
}
