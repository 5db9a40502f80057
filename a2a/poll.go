package a2a

import (
	"context"
	"io"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
)

// The polling of a task a blocking send left unsettled: one GetTask at
// once (an agent that finishes quickly is not kept waiting), then after
// PollInterval, the wait doubling to at most MaxPollInterval, on the
// package's clock, until the task settles or the child's context (which
// holds the root deadline) ends.
const (
	PollInterval    = 250 * time.Millisecond
	MaxPollInterval = 5 * time.Second
)

// getParams are GetTask's params.
type getParams struct {
	ID string `json:"id"`
}

// sendContext returns the context a send runs on. It carries ctx's values
// but not, at first, its end: a child stopped after its request left waits
// at most CancelTimeout on the clock for the remote to bind the task, so
// that it learns the ID its one CancelTask needs. Once the task is bound
// (or was when ctx ended) ctx's end ends the send at once. stop releases
// it. The returned bind must be called by the tracker when it binds the
// task ID.
func sendContext(ctx context.Context, clock Clock) (sctx context.Context, bind func(), stop func()) {
	sctx, abort := context.WithCancelCause(context.WithoutCancel(ctx))
	var bound atomic.Bool
	var mu sync.Mutex
	var grace Timer
	stopAfter := context.AfterFunc(ctx, func() {
		if bound.Load() {
			abort(context.Cause(ctx))
			return
		}
		mu.Lock()
		grace = clock.AfterFunc(CancelTimeout, func() { abort(context.Cause(ctx)) })
		mu.Unlock()
	})
	bind = func() {
		bound.Store(true)
		// ctx ended before the bind: the ID is known now, so the send
		// ends and the cancel goes out.
		if ctx.Err() != nil {
			abort(context.Cause(ctx))
		}
	}
	stop = func() {
		stopAfter()
		mu.Lock()
		if grace != nil {
			grace.Stop()
		}
		mu.Unlock()
		abort(context.Canceled)
	}
	return sctx, bind, stop
}

// sleep waits d on clock, or until ctx ends (its error then).
func sleep(ctx context.Context, clock Clock, d time.Duration) error {
	done := make(chan struct{})
	t := clock.AfterFunc(d, func() { close(done) })
	defer t.Stop()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// poll follows a task the blocking send left unsettled: GetTask with the
// bounded backoff, each answer folded into t by the same rules as the
// send's, until the task settles or ctx ends.
func (r *Runner) poll(ctx context.Context, call rpcCall, t *tracker) error {
	clock := r.c.opts.clock()
	wait := time.Duration(0)
	for !settled(t.state) {
		if wait > 0 {
			if err := sleep(ctx, clock, wait); err != nil {
				return err
			}
		}
		wait = min(max(2*wait, PollInterval), MaxPollInterval)
		get := rpcCall{remote: call.remote, card: call.card, method: methodsOf(call.card).get, params: getParams{ID: t.taskID}, id: r.c.opts.newID()}
		t.method = get.method
		task, err := r.getTask(ctx, get)
		if err != nil {
			return err
		}
		if err := t.apply(task); err != nil {
			return err
		}
	}
	return nil
}

// getTask is one GetTask exchange: its result is exactly the task.
func (r *Runner) getTask(ctx context.Context, call rpcCall) (*sdk.Task, error) {
	resp, err := r.c.post(ctx, call)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	env, err := r.c.envelope(call, data)
	if err != nil {
		return nil, err
	}
	task, ok := decodeTask(call, env.Result)
	if !ok {
		return nil, &ProtocolError{Remote: call.remote.Name, Method: call.method, Detail: "the result is not a task"}
	}
	return task, nil
}
