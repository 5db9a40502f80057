package children

import (
	"context"
	"time"
)

// Wait returns once any (WaitAny) or all (WaitAll) of the named children
// settled, once the timeout passed on the supervisor's clock (the result
// then lists who is still remaining; that is no error), or once ctx ends
// (with ctx's error). The timeout is cut to what remains of the root's
// deadline; zero polls. Wait never cancels anything.
func (t *Tree) Wait(ctx context.Context, req WaitRequest) (WaitResult, error) {
	if err := t.checkWait(req); err != nil {
		return WaitResult{}, err
	}
	timeout := req.Timeout
	if !t.opts.Deadline.IsZero() {
		timeout = min(timeout, max(t.opts.Deadline.Sub(t.clock.Now()), 0))
	}
	t.lock()
	for _, id := range req.AgentIDs {
		if _, err := t.lookupLocked("agent_ids", id); err != nil {
			t.unlock()
			return WaitResult{}, err
		}
	}
	t.unlock()

	var expired chan struct{}
	for {
		t.lock()
		res := t.waitResultLocked(req.AgentIDs)
		changed := t.changed
		t.unlock()
		if len(res.Remaining) == 0 || (req.Mode == WaitAny && len(res.Settled) > 0) || timeout <= 0 {
			return res, nil
		}
		if expired == nil {
			expired = make(chan struct{})
			timer := t.clock.AfterFunc(timeout, func() { close(expired) })
			defer timer.Stop()
		}
		select {
		case <-changed:
		case <-expired:
			t.lock()
			defer t.unlock()
			return t.waitResultLocked(req.AgentIDs), nil
		case <-ctx.Done():
			t.lock()
			defer t.unlock()
			return t.waitResultLocked(req.AgentIDs), ctx.Err()
		}
	}
}

// checkWait checks a wait request's shape: 1..WaitHandles distinct IDs, a
// mode, a timeout in 0..WaitTimeout.
func (t *Tree) checkWait(req WaitRequest) error {
	switch n := len(req.AgentIDs); {
	case n == 0:
		return errorf(CodeOutOfRange, "agent_ids", "name 1..%d children to wait for", t.capacity.WaitHandles)
	case n > t.capacity.WaitHandles:
		return errorf(CodeOutOfRange, "agent_ids", "at most %d children per wait, got %d", t.capacity.WaitHandles, n)
	}
	for i, id := range req.AgentIDs {
		for _, prev := range req.AgentIDs[:i] {
			if prev == id {
				return errorf(CodeDuplicateAgentID, "agent_ids", "agent %q is named twice", shorten(id))
			}
		}
	}
	if req.Mode != WaitAny && req.Mode != WaitAll {
		return errorf(CodeOutOfRange, "mode", "mode must be any or all, got %q", shorten(string(req.Mode)))
	}
	if req.Timeout < 0 || req.Timeout > t.capacity.WaitTimeout {
		return errorf(CodeOutOfRange, "timeout_ms", "timeout_ms must be 0..%d, got %d", t.capacity.WaitTimeout/time.Millisecond, req.Timeout/time.Millisecond)
	}
	return nil
}

func (t *Tree) waitResultLocked(agentIDs []string) WaitResult {
	res := WaitResult{Settled: []Snapshot{}, Remaining: []string{}}
	for _, id := range agentIDs {
		c := t.children[id]
		if c.state == StateSettled {
			res.Settled = append(res.Settled, t.snapshotLocked(c))
		} else {
			res.Remaining = append(res.Remaining, id)
		}
	}
	return res
}
