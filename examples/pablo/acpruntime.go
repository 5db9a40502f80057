package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/pabloagent/pablo"
)

// acpRuntimes is the runtime source of one `pablo acp` process: at every
// prompt it re-reads the deployment and returns the runtime it built last
// when neither the deployment's fingerprint nor its credential references
// changed, so the HTTP pool, the compiled tools and the span pipeline live
// across prompts. When either changed it builds a new runtime; the one it
// replaces is closed once every prompt it was handed to has settled.
//
// Each Runtime call is a lease on the runtime it returns, taken before the
// caller starts its task, so a rebuild racing with a prompt never closes
// the runtime under it; the task's run.finished event returns the lease.
// The session handler starts a task after every successful call; if the
// task is refused at admission the lease is never returned, and that
// runtime, once replaced, stays open until the process exits.
type acpRuntimes struct {
	// load re-reads the deployment; build makes a runtime of it, with the
	// hooks that let this source count the runtime's running tasks.
	load  func(ctx context.Context) (*pablo.Deployment, error)
	build func(ctx context.Context, d *pablo.Deployment, hooks runtimeHooks) (*pablo.Runtime, func(context.Context) error, error)
	// warn reports what an operator should know and the prompt's client
	// cannot be told: a deployment that no longer loads, a replaced
	// runtime that failed to close. Nil discards them.
	warn func(error)

	// buildMu makes the check and the build one step, so prompts that
	// race past a change build one runtime, not one each.
	buildMu sync.Mutex

	mu      sync.Mutex
	current *builtRuntime
	retired []*builtRuntime
	builds  int // how many runtimes were built, for tests and diagnostics
}

// runtimeHooks are what a built runtime reports to its source: a root
// task settled (its run.finished event).
type runtimeHooks struct {
	finished func()
}

// builtRuntime is one runtime and what it is keyed by.
type builtRuntime struct {
	key   string
	rt    *pablo.Runtime
	close func(context.Context) error

	// active counts the leases on rt not yet returned: prompts handed rt
	// whose tasks have not settled. Guarded by the source's mu.
	active int
}

// runtimeKey is what decides reuse: the deployment's fingerprint and its
// credential references (names, consumers and sources, never values).
func runtimeKey(d *pablo.Deployment) string {
	refs, _ := json.Marshal(d.Credentials()) // a map marshals in key order
	sum := sha256.Sum256(refs)
	return d.Fingerprint + " " + hex.EncodeToString(sum[:])
}

// Runtime returns the runtime the next prompt runs on. It is the
// SessionOptions.Runtime of the process.
func (s *acpRuntimes) Runtime(ctx context.Context) (*pablo.Runtime, error) {
	d, err := s.load(ctx)
	if err != nil {
		if s.warn != nil {
			s.warn(fmt.Errorf("re-reading the deployment: %w", err))
		}
		return nil, err
	}
	key := runtimeKey(d)
	s.buildMu.Lock()
	defer s.buildMu.Unlock()
	s.mu.Lock()
	cur := s.current
	s.mu.Unlock()
	if cur == nil || cur.key != key {
		return s.rebuild(ctx, d, key)
	}
	s.mu.Lock()
	cur.active++
	s.mu.Unlock()
	s.closeIdle(ctx)
	return cur.rt, nil
}

// rebuild builds the runtime of d and makes it current, retiring the one
// it replaces.
func (s *acpRuntimes) rebuild(ctx context.Context, d *pablo.Deployment, key string) (*pablo.Runtime, error) {
	b := &builtRuntime{key: key, active: 1} // the caller's lease
	hooks := runtimeHooks{finished: func() { s.mu.Lock(); b.active--; s.mu.Unlock() }}
	rt, closeRT, err := s.build(ctx, d, hooks)
	if err != nil {
		return nil, err
	}
	b.rt, b.close = rt, closeRT
	s.mu.Lock()
	if prev := s.current; prev != nil {
		s.retired = append(s.retired, prev)
	}
	s.current = b
	s.builds++
	s.mu.Unlock()
	s.closeIdle(ctx)
	return rt, nil
}

// release returns the lease of a Runtime call that started no task.
func (s *acpRuntimes) release() {
	s.mu.Lock()
	if s.current != nil {
		s.current.active--
	}
	s.mu.Unlock()
}

// closeIdle closes the retired runtimes none of whose tasks still runs.
// It runs at each prompt, never from a task's own event sink.
func (s *acpRuntimes) closeIdle(ctx context.Context) {
	s.mu.Lock()
	var idle []*builtRuntime
	kept := s.retired[:0]
	for _, b := range s.retired {
		if b.active == 0 {
			idle = append(idle, b)
		} else {
			kept = append(kept, b)
		}
	}
	clear(s.retired[len(kept):])
	s.retired = kept
	s.mu.Unlock()
	for _, b := range idle {
		if err := b.close(ctx); err != nil && s.warn != nil {
			s.warn(fmt.Errorf("closing a replaced runtime: %w", err))
		}
	}
}

// idle reports whether no task of the source's runtimes is running.
func (s *acpRuntimes) idle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.retired) == 0 && (s.current == nil || s.current.active == 0)
}

// Close closes every runtime the source built. The session handler has
// joined every task by then.
func (s *acpRuntimes) Close(ctx context.Context) error {
	s.mu.Lock()
	all := s.retired
	if s.current != nil {
		all = append(all, s.current)
	}
	s.retired, s.current = nil, nil
	s.mu.Unlock()
	var errs []error
	for _, b := range all {
		errs = append(errs, b.close(ctx))
	}
	return errors.Join(errs...)
}
