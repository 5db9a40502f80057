package children

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/internal/clock"
	"github.com/pabloagent/pablo/internal/ids"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/ledger/outcome"
)

// fakeRunner is a Runner whose children a test settles by hand.
type fakeRunner struct {
	mu       sync.Mutex
	starts   []Spec
	remote   []RemoteSpec
	handles  map[string]*fakeHandle
	startErr error
	// holdOnCancel keeps a cancelled child running until the test settles
	// it (a child slow to join).
	holdOnCancel bool
	started      chan *fakeHandle
	seen         map[string]*fakeHandle // read from started by await
	remotes      []string
}

func newFakeRunner() *fakeRunner {
	return &fakeRunner{handles: map[string]*fakeHandle{}, started: make(chan *fakeHandle, 64), seen: map[string]*fakeHandle{}}
}

func (r *fakeRunner) Start(ctx context.Context, spec Spec) (Handle, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.startErr != nil {
		return nil, r.startErr
	}
	r.starts = append(r.starts, spec)
	h := &fakeHandle{id: spec.AgentID, spec: spec, done: make(chan struct{}), cancelled: make(chan struct{}), hold: r.holdOnCancel}
	r.handles[spec.AgentID] = h
	r.started <- h
	return h, nil
}

func (r *fakeRunner) Remotes() []string { return r.remotes }

func (r *fakeRunner) StartRemote(ctx context.Context, spec RemoteSpec) (Handle, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.remote = append(r.remote, spec)
	h := &fakeHandle{id: spec.AgentID, done: make(chan struct{}), cancelled: make(chan struct{})}
	r.handles[spec.AgentID] = h
	r.started <- h
	return h, nil
}

// waitBound bounds every wait of these tests on what another goroutine
// does (a child starting, settling, seeing its cancellation): a broken
// rule fails its test within seconds, naming what never happened, instead
// of hanging until the suite's timeout. It is no timing assumption: each
// wait ends as soon as what it waits for happens.
const waitBound = 10 * time.Second

// within waits for ch to close or deliver, at most waitBound, and fails
// the test naming what did not happen.
func within[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	select {
	case v := <-ch:
		return v
	case <-ctx.Done():
		t.Fatalf("%s: not within %s", what, waitBound)
		panic("unreachable")
	}
}

// await returns the handle of child id once it started. Only the test's
// goroutine calls it.
func (r *fakeRunner) await(t testing.TB, id string) *fakeHandle {
	t.Helper()
	for {
		if h, ok := r.seen[id]; ok {
			return h
		}
		h := within(t, r.started, "child "+id+" never started")
		r.seen[h.id] = h
	}
}

// next returns the next child to start.
func (r *fakeRunner) next(t testing.TB) *fakeHandle {
	t.Helper()
	return within(t, r.started, "no child started")
}

func (r *fakeRunner) startCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.starts) + len(r.remote)
}

// fakeHandle is a started child a test settles with settle.
type fakeHandle struct {
	id         string
	spec       Spec
	hold       bool
	done       chan struct{}
	cancelled  chan struct{}
	settleOnce sync.Once
	cancelOnce sync.Once
	res        Result
}

func (h *fakeHandle) Done() <-chan struct{} { return h.done }
func (h *fakeHandle) Result() Result        { return h.res }

func (h *fakeHandle) Cancel() {
	h.cancelOnce.Do(func() { close(h.cancelled) })
	if !h.hold {
		h.settle(Result{Outcome: event.Outcome{Status: outcome.Cancelled}})
	}
}

func (h *fakeHandle) settle(res Result) {
	h.settleOnce.Do(func() { h.res = res; close(h.done) })
}

func (h *fakeHandle) wasCancelled() bool {
	select {
	case <-h.cancelled:
		return true
	default:
		return false
	}
}

// completed is a completed result with text output.
func completed(out string) Result {
	return Result{Outcome: event.Outcome{Status: outcome.Completed}, Output: out,
		Accounting: ledger.Accounting{ModelCalls: ledger.Count{N: 1}}, TraceID: "trace-1"}
}

// validStructured is a completed result with a schema-valid structured
// output and its receipt.
func validStructured(out string) Result {
	r := completed(out)
	r.StructuredOutput = json.RawMessage(out)
	r.Validation = json.RawMessage(`{"schema_version":"output-validation-v1","schema_sha256":"sha256:00","status":"valid","diagnostics":[]}`)
	return r
}

// fakeClock is the module's one test clock: time moves only when a test
// advances it.
type fakeClock = clock.Manual

func newFakeClock() *fakeClock { return clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) }

// parentScope is a parent with a little of everything.
func parentScope() Scope {
	return Scope{
		Capabilities: Capabilities{
			Tools:      []string{"fs.read", "fs.list", "fs.write", "subagent", "mcp/records/get", "mcp/records/put", "mcp/files/list"},
			Skills:     []string{"team/review", "team/release"},
			MCPServers: []string{"records", "files"},
			ModelRoute: []string{"primary", "fallback", "cheap"},
		},
		Ceilings: Ceilings{MaxModelCalls: ledger.Max(20), MaxToolCalls: ledger.Max(50), MaxDurationMillis: ledger.Max(600_000),
			MaxContextBytes: ledger.Max(32 << 20), MaxOutputBytes: ledger.Max(1 << 20), MaxTotalTokens: ledger.Unlimited(), MaxCostMicroUSD: ledger.Max(1_000_000)},
	}
}

// newTree returns a tree over a fake runner and clock, closed at the
// test's end.
func newTree(t *testing.T, mod func(*Options)) (*Tree, *fakeRunner, *fakeClock) {
	t.Helper()
	r, clk := newFakeRunner(), newFakeClock()
	opts := Options{RootRunID: "run-1", ParentID: "root-agent", Parent: parentScope(), Runner: r, Remote: r, Clock: clk, IDs: ids.NewSequential(0)}
	if mod != nil {
		mod(&opts)
	}
	tr, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tr.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return tr, r, clk
}

func spawn(t *testing.T, tr *Tree, input string) Snapshot {
	t.Helper()
	s, err := tr.Spawn(context.Background(), Request{Input: input})
	if err != nil {
		t.Fatalf("spawn %q: %v", input, err)
	}
	return s
}

func wantCode(t *testing.T, err error, code Code) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("want an *Error of code %s, got %v", code, err)
	}
	if e.Code != code {
		t.Fatalf("want code %s, got %s (%v)", code, e.Code, err)
	}
}

// settledSnapshot waits for the child to settle and returns its snapshot.
func settledSnapshot(t *testing.T, tr *Tree, id string) Snapshot {
	t.Helper()
	tr.lock()
	c, ok := tr.children[id]
	tr.unlock()
	if !ok {
		t.Fatalf("no child %s", id)
	}
	within(t, c.settled, "child "+id+" never settled")
	s, err := tr.Inspect(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
