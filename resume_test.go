package pablo

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pabloagent/pablo/approval"
	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/children"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/internal/clock"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/ledger/outcome"
	"github.com/pabloagent/pablo/model"
)

// errHostDied is what a dyingStore answers once its host "died".
var errHostDied = errors.New("test: the host died")

// dyingStore is a store whose host dies in the middle of a task: once
// dead, it keeps nothing more, so what it holds is exactly what a kill -9
// at that point would have left durable. kill decides, before each
// append, whether the host dies right after it (after: the append is
// kept) or right before it.
type dyingStore struct {
	ledger.Store
	dead atomic.Bool
	mu   sync.Mutex
	kill func(recs []ledger.Record) (die, after bool)
}

func (s *dyingStore) Append(ctx context.Context, recs []ledger.Record) error {
	if s.dead.Load() {
		return errHostDied
	}
	s.mu.Lock()
	die, after := false, false
	if s.kill != nil {
		die, after = s.kill(recs)
	}
	s.mu.Unlock()
	if die && !after {
		s.dead.Store(true)
		return errHostDied
	}
	err := s.Store.Append(ctx, recs)
	if die {
		s.dead.Store(true)
	}
	return err
}

// killAt dies at the first append holding a call record for which match
// is true (after it, when after is set).
func killAt(after bool, match func(c *ledger.CallRecord) bool) func([]ledger.Record) (bool, bool) {
	return func(recs []ledger.Record) (bool, bool) {
		for i := range recs {
			if c := recs[i].Call; recs[i].Kind == ledger.RecordCall && c != nil && match(c) {
				return true, after
			}
		}
		return false, false
	}
}

// turnModel answers its turns in order, one per request, and counts the
// requests it was sent.
type turnModel struct {
	mu    sync.Mutex
	turns []model.Response
	reqs  []model.Request
}

func (m *turnModel) Info() model.Info { return model.Info{Provider: "test", Model: "turns"} }

func (m *turnModel) Generate(_ context.Context, req *model.Request, _ func(string) error) (*model.Response, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reqs = append(m.reqs, *req)
	r := m.turns[min(len(m.reqs)-1, len(m.turns)-1)]
	return &r, nil
}

func (m *turnModel) requests() []model.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.reqs)
}

// resumeFixture is a deployment with the workspace tools over a fresh
// workspace, and a bbolt store that outlives the runtimes opened on it.
type resumeFixture struct {
	t     *testing.T
	dir   string
	ws    string
	store string
	// clock, when set, is every runtime's clock.
	clock ledger.Clock
	// loopback admits remotes on the loopback interface (a fixture peer).
	loopback bool
	// capacity, when set, lowers the children's capacity (a deployment
	// cannot).
	capacity *children.Capacity
}

func newResumeFixture(t *testing.T, body string) *resumeFixture {
	t.Helper()
	dir := t.TempDir()
	f := &resumeFixture{t: t, dir: dir, ws: filepath.Join(dir, "work"), store: filepath.Join(dir, "ledger.db")}
	os.Mkdir(f.ws, 0o700)
	f.write(body)
	return f
}

// write replaces the deployment (a host that changed it between the stop
// and the resume).
func (f *resumeFixture) write(body string) {
	os.WriteFile(filepath.Join(f.dir, "deployment.toml"), []byte("schema_version = 1\n[options.shell]\nenabled = false\n"+body), 0o600)
}

// runtime opens the store and a runtime on it; both close with the test
// step (close).
func (f *resumeFixture) runtime(m model.Model, wrap func(ledger.Store) ledger.Store) (*Runtime, func()) {
	f.t.Helper()
	d, err := Load(LoadOptions{Config: filepath.Join(f.dir, "deployment.toml"), Bindings: map[string]string{"workspace": f.ws}, LoopbackHTTP: f.loopback})
	if err != nil {
		f.t.Fatal(err)
	}
	b, err := ledger.OpenBolt(f.store, ledger.BoltOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	var store ledger.Store = b
	if wrap != nil {
		store = wrap(b)
	}
	ro, err := d.runtimeOptions(context.Background(), HostOptions{Model: m, Store: store, Clock: f.clock})
	if err != nil {
		f.t.Fatal(err)
	}
	if f.capacity != nil && ro.Children != nil {
		*ro.Children = *f.capacity
	}
	rt, err := NewRuntime(ro)
	if err != nil {
		f.t.Fatal(err)
	}
	return rt, func() { rt.Close(); b.Close() }
}

// crash runs input on a runtime whose host dies where kill says, and
// returns the task ID.
func (f *resumeFixture) crash(m model.Model, kill func([]ledger.Record) (bool, bool)) string {
	f.t.Helper()
	ds := &dyingStore{kill: kill}
	rt, done := f.runtime(m, func(s ledger.Store) ledger.Store { ds.Store = s; return ds })
	defer done()
	task, err := rt.Start(context.Background(), "write the note")
	if err != nil {
		f.t.Fatal(err)
	}
	task.Wait()
	if !ds.dead.Load() {
		f.t.Fatal("the host never died: the kill point was not reached")
	}
	return task.ID()
}

// resume resumes id on a fresh runtime and returns its task object.
func (f *resumeFixture) resume(m model.Model, id string, req ResumeRequest) (*TaskObject, error) {
	f.t.Helper()
	rt, done := f.runtime(m, nil)
	defer done()
	task, err := rt.ResumeTask(context.Background(), id, req)
	if err != nil {
		return nil, err
	}
	return task.Wait(), nil
}

// report is what `ledger recover` says of the task now.
func (f *resumeFixture) report(id string) ledger.TaskReport {
	f.t.Helper()
	b, err := ledger.OpenBolt(f.store, ledger.BoltOptions{ReadOnly: true})
	if err != nil {
		f.t.Fatal(err)
	}
	defer b.Close()
	rep, err := ledger.RecoverTask(context.Background(), b, id)
	if err != nil {
		f.t.Fatal(err)
	}
	return rep
}

const writeNote = `{"path":"note.txt","text":"hello\n","expected_revision":null}`

func writeTurns() []model.Response {
	return []model.Response{calls(call("w1", "fs_write", writeNote)), doneTurn}
}

func callIDs(cs []ledger.CallReport, kind ledger.CallKind) []string {
	var out []string
	for _, c := range cs {
		if c.Kind == kind {
			out = append(out, c.CallID)
		}
	}
	return out
}

// A tool call settled before the stop is never sent again: its recorded
// result goes back to the model, and the task completes from there.
func TestResumeUsesACompletedCallsRecordedResult(t *testing.T) {
	f := newResumeFixture(t, fsWrite)
	// The host dies at the barrier of the next model call's dispatch,
	// after fs.write settled: the write is durable, the answer is not.
	var models atomic.Int32
	id := f.crash(&turnModel{turns: writeTurns()}, killAt(false, func(c *ledger.CallRecord) bool {
		return c.Kind == ledger.ModelCallKind && c.State == ledger.CallDispatched && models.Add(1) == 2
	}))
	if err := os.WriteFile(filepath.Join(f.ws, "note.txt"), []byte("changed by a person\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m := &turnModel{turns: []model.Response{doneTurn}}
	obj, err := f.resume(m, id, ResumeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if obj.Outcome.Status != event.StatusCompleted {
		t.Fatalf("outcome = %+v, want completed", obj.Outcome)
	}
	if b, _ := os.ReadFile(filepath.Join(f.ws, "note.txt")); string(b) != "changed by a person\n" {
		t.Fatalf("the write ran again: note.txt = %q", b)
	}
	reqs := m.requests()
	if len(reqs) != 1 {
		t.Fatalf("the resumed model got %d requests, want 1", len(reqs))
	}
	msgs := reqs[0].Messages
	last := msgs[len(msgs)-1]
	if last.Role != model.RoleTool || last.ToolCallID != "w1" || !strings.Contains(last.Content, `"status":"completed"`) {
		t.Fatalf("the model was not given the recorded result: %+v", last)
	}
	if obj.Resume == nil || !slices.Equal(obj.Resume.Completed, []string{"call_1_1"}) || len(obj.Resume.Unknown) != 0 || len(obj.Resume.Retried) != 0 {
		t.Fatalf("resume record = %+v", obj.Resume)
	}
	if n := obj.Accounting.ToolCalls.N; n != 1 {
		t.Fatalf("tool_calls = %d, want 1 (charged before the stop, kept)", n)
	}
	rep := f.report(id)
	if rep.Outcome == nil || rep.Outcome.Status != outcome.Completed {
		t.Fatalf("ledger outcome = %+v", rep.Outcome)
	}
}

// fsWrite turns the workspace's writes on.
const fsWrite = "[options.filesystem]\nwrite = true\n"

// crashAfterToolDispatch dies right after the barrier that dispatches the
// first tool call: the call left, its settlement never became durable.
func crashAfterToolDispatch() func([]ledger.Record) (bool, bool) {
	return killAt(true, func(c *ledger.CallRecord) bool {
		return c.Kind == ledger.ToolCallKind && c.State == ledger.CallDispatched
	})
}

// A call dispatched and never settled is never run again: the model gets
// a typed unknown_outcome result naming the call, its idempotency key and
// that its effect may have happened, and decides.
func TestResumeNeverReplaysAnUnknownCall(t *testing.T) {
	f := newResumeFixture(t, fsWrite)
	id := f.crash(&turnModel{turns: writeTurns()}, crashAfterToolDispatch())
	before := f.report(id)
	if got := callIDs(before.Unknown, ledger.ToolCallKind); !slices.Equal(got, []string{"call_1_1"}) {
		t.Fatalf("unknown before the resume = %v", got)
	}
	key := before.Unknown[0].IdempotencyKey
	// Whatever the write did, it is not done again: remove its effect
	// and see that the resume does not restore it.
	os.Remove(filepath.Join(f.ws, "note.txt"))
	m := &turnModel{turns: []model.Response{doneTurn}}
	obj, err := f.resume(m, id, ResumeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if obj.Outcome.Status != event.StatusCompleted {
		t.Fatalf("outcome = %+v", obj.Outcome)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "note.txt")); !os.IsNotExist(err) {
		t.Fatalf("the unknown write was replayed (stat: %v)", err)
	}
	msgs := m.requests()[0].Messages
	last := msgs[len(msgs)-1]
	for _, want := range []string{`"status":"unknown_outcome"`, `"idempotency_key":"` + key + `"`, `"effect_may_have_happened":true`, `"call_id":"call_1_1"`, `"tool":"fs.write"`} {
		if !strings.Contains(last.Content, want) {
			t.Fatalf("the model's result lacks %s: %s", want, last.Content)
		}
	}
	if !slices.Equal(obj.Resume.Unknown, []string{"call_1_1"}) {
		t.Fatalf("resume record = %+v", obj.Resume)
	}
	after := f.report(id)
	if got := callIDs(after.Unknown, ledger.ToolCallKind); !slices.Equal(got, []string{"call_1_1"}) {
		t.Fatalf("the final ledger does not keep the call unknown: %v", got)
	}
	if n := obj.Accounting.ToolCalls.N; n != 1 {
		t.Fatalf("tool_calls = %d, want 1", n)
	}
}

// options.resume.unknown = "fail" ends the task at an unknown call,
// failed with delivery may_have_been_sent and a reason naming the call.
func TestResumeUnknownPolicyFailEndsTheTask(t *testing.T) {
	f := newResumeFixture(t, fsWrite+"[options.resume]\nunknown = \"fail\"\n")
	id := f.crash(&turnModel{turns: writeTurns()}, crashAfterToolDispatch())
	m := &turnModel{turns: []model.Response{doneTurn}}
	obj, err := f.resume(m, id, ResumeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	o := obj.Outcome
	if o.Status != event.StatusFailed || o.Delivery != outcome.MayHaveBeenSent || !strings.Contains(o.Reason, "unknown_outcome") || !strings.Contains(o.Reason, "call_1_1") {
		t.Fatalf("outcome = %+v", o)
	}
	if n := len(m.requests()); n != 0 {
		t.Fatalf("the model was asked %d times after the unknown call", n)
	}
}

// recordingApprover answers every request with answer and keeps them.
type recordingApprover struct {
	mu     sync.Mutex
	answer approval.Answer
	asked  []approval.Request
	// onAsk, when set, runs before the answer (a host dying while a
	// person thinks).
	onAsk func()
}

func (a *recordingApprover) Approve(_ context.Context, req approval.Request) (approval.Answer, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, req)
	if a.onAsk != nil {
		a.onAsk()
	}
	return a.answer, nil
}

// options.resume.unknown = "ask" asks the task's approver about the
// unknown call: allowed, the model is told and the task goes on.
func TestResumeUnknownPolicyAskAsksTheApprover(t *testing.T) {
	f := newResumeFixture(t, fsWrite+"[options.resume]\nunknown = \"ask\"\n")
	id := f.crash(&turnModel{turns: writeTurns()}, crashAfterToolDispatch())
	ap := &recordingApprover{answer: approval.AllowOnce}
	obj, err := f.resume(&turnModel{turns: []model.Response{doneTurn}}, id, ResumeRequest{Approver: ap})
	if err != nil {
		t.Fatal(err)
	}
	if obj.Outcome.Status != event.StatusCompleted || len(ap.asked) != 1 || ap.asked[0].CallID != "call_1_1" {
		t.Fatalf("outcome %+v after %d questions", obj.Outcome, len(ap.asked))
	}
	// Without an approver the task ends.
	id = f.crash(&turnModel{turns: writeTurns()}, crashAfterToolDispatch())
	obj, err = f.resume(&turnModel{turns: []model.Response{doneTurn}}, id, ResumeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if obj.Outcome.Status != event.StatusFailed {
		t.Fatalf("without an approver: outcome %+v", obj.Outcome)
	}
}

// A model call in flight when the host stopped is sent again (a model
// call has no side effect) and charged again: the stopped call stays
// charged, and the resume record counts it.
func TestResumeResendsAModelCallInFlightAndChargesItAgain(t *testing.T) {
	f := newResumeFixture(t, fsWrite)
	var models atomic.Int32
	id := f.crash(&turnModel{turns: writeTurns()}, killAt(true, func(c *ledger.CallRecord) bool {
		return c.Kind == ledger.ModelCallKind && c.State == ledger.CallDispatched && models.Add(1) == 2
	}))
	m := &turnModel{turns: []model.Response{doneTurn}}
	obj, err := f.resume(m, id, ResumeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if obj.Outcome.Status != event.StatusCompleted || len(m.requests()) != 1 {
		t.Fatalf("outcome %+v after %d requests", obj.Outcome, len(m.requests()))
	}
	if obj.Resume.ResentModelCalls != 1 {
		t.Fatalf("resent_model_calls = %d, want 1", obj.Resume.ResentModelCalls)
	}
	if n := obj.Accounting.ModelCalls.N; n != 3 {
		t.Fatalf("model_calls = %d, want 3 (the first, the one in flight, the one sent again)", n)
	}
	rep := f.report(id)
	var stopped int
	for _, c := range rep.Unknown {
		if c.Kind == ledger.ModelCallKind && c.Error == "host_stopped" {
			stopped++
		}
	}
	if stopped != 1 {
		t.Fatalf("the ledger does not say which model call the stop cut: %+v", rep.Unknown)
	}
}

// approvalFixture is a deployment whose writes need approval: the
// admission of a write is durable before the approver is asked, so a host
// that dies while a person thinks leaves a retryable call.
const approvalWrites = fsWrite + "[options.approvals]\nfilesystem_write = \"required\"\n"

// crashWhileApproving runs the write task on a host that dies while its
// approver is asked, and returns the task ID and the call's key.
func (f *resumeFixture) crashWhileApproving() (string, string) {
	f.t.Helper()
	ds := &dyingStore{}
	rt, done := f.runtime(&turnModel{turns: writeTurns()}, func(s ledger.Store) ledger.Store { ds.Store = s; return ds })
	ap := &recordingApprover{answer: approval.AllowOnce, onAsk: func() { ds.dead.Store(true) }}
	task, err := rt.StartTask(context.Background(), TaskRequest{Input: "write the note", Approver: ap})
	if err != nil {
		f.t.Fatal(err)
	}
	task.Wait()
	done()
	if _, err := os.Stat(filepath.Join(f.ws, "note.txt")); !os.IsNotExist(err) {
		f.t.Fatalf("the write left a host that was dead (stat: %v)", err)
	}
	rep := f.report(task.ID())
	if got := callIDs(rep.Retryable, ledger.ToolCallKind); !slices.Equal(got, []string{"call_1_1"}) {
		f.t.Fatalf("retryable = %v", got)
	}
	return task.ID(), rep.Retryable[0].IdempotencyKey
}

// A call admitted and provably never dispatched is decided again on
// resume: its approval is asked again (no answer of the dead host is
// reused), and it runs once, with its original idempotency key.
func TestResumeDecidesARetryableCallAgain(t *testing.T) {
	f := newResumeFixture(t, approvalWrites)
	id, key := f.crashWhileApproving()
	ap := &recordingApprover{answer: approval.AllowOnce}
	obj, err := f.resume(&turnModel{turns: []model.Response{doneTurn}}, id, ResumeRequest{Approver: ap})
	if err != nil {
		t.Fatal(err)
	}
	if obj.Outcome.Status != event.StatusCompleted || len(ap.asked) != 1 || ap.asked[0].CallID != "call_1_1" {
		t.Fatalf("outcome %+v after %d questions", obj.Outcome, len(ap.asked))
	}
	if b, _ := os.ReadFile(filepath.Join(f.ws, "note.txt")); string(b) != "hello\n" {
		t.Fatalf("note.txt = %q", b)
	}
	rep := f.report(id)
	if len(rep.Completed) == 0 {
		t.Fatal("nothing completed")
	}
	var found bool
	for _, c := range rep.Completed {
		if c.CallID == "call_1_1" {
			found = true
			if c.IdempotencyKey != key || c.Status != string(outcome.ToolCompleted) {
				t.Fatalf("the retried call: %+v, want key %s", c, key)
			}
		}
	}
	if !found || !slices.Equal(obj.Resume.Retried, []string{"call_1_1"}) {
		t.Fatalf("resume record %+v", obj.Resume)
	}
	if n := obj.Accounting.ToolCalls.N; n != 1 {
		t.Fatalf("tool_calls = %d, want 1", n)
	}
}

// A tool revoked between the stop and the resume is denied on resume:
// the retryable call is decided under the current deployment, never the
// one it was admitted under, and the settlement records the decision.
func TestResumeDeniesAToolRevokedSinceTheStop(t *testing.T) {
	f := newResumeFixture(t, approvalWrites)
	id, _ := f.crashWhileApproving()
	f.write(approvalWrites + "[[authority]]\nid = \"ops\"\n[authority.policy.tools]\ndefault = \"allow\"\ndeny = [{ id = \"ops.nowrite\", value = \"fs.write\" }]\n")
	ap := &recordingApprover{answer: approval.AllowOnce}
	obj, err := f.resume(&turnModel{turns: []model.Response{doneTurn}}, id, ResumeRequest{Approver: ap})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "note.txt")); !os.IsNotExist(err) {
		t.Fatalf("the revoked write ran (stat: %v)", err)
	}
	if len(ap.asked) != 0 {
		t.Fatalf("a revoked call was put to the approver: %+v", ap.asked)
	}
	if obj.Resume.ResumedUnder == "" || obj.Resume.ResumedUnder == obj.Resume.Fingerprint {
		t.Fatalf("the changed deployment is not recorded: %+v", obj.Resume)
	}
	rep := f.report(id)
	for _, c := range rep.Completed {
		if c.CallID == "call_1_1" {
			if c.Status != string(outcome.ToolPolicyDenied) || c.Decision == nil || c.Decision.Allowed {
				t.Fatalf("the revoked call settled %+v", c)
			}
			return
		}
	}
	t.Fatalf("the revoked call is not settled: %+v", rep)
}

// Resuming a task that settled is a typed error, task_settled.
func TestResumeOfASettledTaskIsTaskSettled(t *testing.T) {
	f := newResumeFixture(t, fsWrite)
	rt, done := f.runtime(&turnModel{turns: writeTurns()}, nil)
	task, err := rt.Start(context.Background(), "write the note")
	if err != nil {
		t.Fatal(err)
	}
	task.Wait()
	done()
	_, err = f.resume(&turnModel{turns: []model.Response{doneTurn}}, task.ID(), ResumeRequest{})
	var se *ledger.SettledError
	if !errors.Is(err, ledger.ErrTaskSettled) || !errors.As(err, &se) || se.Outcome.Status != outcome.Completed {
		t.Fatalf("err = %v", err)
	}
}

// Ceilings hold across the stop: the duration ceiling counts from the
// task's first start, so the time the host was down is spent (and
// reported), unless the host passes a new deadline.
func TestResumeKeepsTheOriginalDeadlineUnlessGivenOne(t *testing.T) {
	f := newResumeFixture(t, fsWrite+"[options.limits]\nmax_run_duration_ms = 60000\n")
	c := clock.NewManual(time.Now())
	f.clock = c
	var models atomic.Int32
	stopAtAnswer := func() func([]ledger.Record) (bool, bool) {
		models.Store(0)
		return killAt(false, func(r *ledger.CallRecord) bool {
			return r.Kind == ledger.ModelCallKind && r.State == ledger.CallDispatched && models.Add(1) == 2
		})
	}
	id := f.crash(&turnModel{turns: writeTurns()}, stopAtAnswer())
	c.Move(2 * time.Minute) // the host was down two minutes
	m := &turnModel{turns: []model.Response{doneTurn}}
	obj, err := f.resume(m, id, ResumeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if obj.Outcome.Status != event.StatusTimedOut || len(m.requests()) != 0 {
		t.Fatalf("outcome %+v after %d requests, want timed_out before any", obj.Outcome, len(m.requests()))
	}
	if obj.Resume.DowntimeMS < 120000 || obj.Resume.NewDeadline {
		t.Fatalf("resume record %+v, want two minutes of downtime", obj.Resume)
	}

	id = f.crash(&turnModel{turns: writeTurns()}, stopAtAnswer())
	c.Move(2 * time.Minute)
	obj, err = f.resume(m, id, ResumeRequest{Deadline: c.Now().Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if obj.Outcome.Status != event.StatusCompleted || !obj.Resume.NewDeadline {
		t.Fatalf("with a new deadline: outcome %+v, resume %+v", obj.Outcome, obj.Resume)
	}
}

// A mistake the model was told about before the stop (a tool it may not
// call) is given back to it as it was: the rebuilt history holds the
// recorded result, and the task goes on.
func TestResumeGivesBackARecoveredMistake(t *testing.T) {
	f := newResumeFixture(t, fsWrite)
	turns := []model.Response{calls(call("n1", "no_such_tool", `{}`)), calls(call("w1", "fs_write", writeNote)), doneTurn}
	var models atomic.Int32
	id := f.crash(&turnModel{turns: turns}, killAt(false, func(c *ledger.CallRecord) bool {
		return c.Kind == ledger.ModelCallKind && c.State == ledger.CallDispatched && models.Add(1) == 3
	}))
	m := &turnModel{turns: []model.Response{doneTurn}}
	obj, err := f.resume(m, id, ResumeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if obj.Outcome.Status != event.StatusCompleted || len(m.requests()) != 1 {
		t.Fatalf("outcome %+v after %d requests", obj.Outcome, len(m.requests()))
	}
	var told []string
	for _, msg := range m.requests()[0].Messages {
		if msg.Role == model.RoleTool {
			told = append(told, msg.ToolCallID)
			if msg.ToolCallID == "n1" && !strings.Contains(msg.Content, `"status":"tool_unavailable"`) {
				t.Fatalf("the mistake's result: %s", msg.Content)
			}
		}
	}
	if !slices.Equal(told, []string{"n1", "w1"}) {
		t.Fatalf("tool results in the rebuilt history: %v", told)
	}
}

// keyedTool records the idempotency key of every call it runs.
type keyedTool struct {
	mu   sync.Mutex
	keys []string
}

func (*keyedTool) Tools() []ToolSpec {
	return []ToolSpec{{ID: "tickets.open", Description: "Open a ticket.", InputSchema: []byte(`{"type":"object","additionalProperties":false}`)}}
}

func (k *keyedTool) Call(_ context.Context, call ToolInvocation) ToolResult {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.keys = append(k.keys, call.IdempotencyKey)
	return ToolCompleted(map[string]any{"ticket": "T-1"})
}

// The call a resume decides again reaches its tool once, with the
// idempotency key its admission recorded before the stop.
func TestResumeDispatchesARetriedCallWithItsOriginalKey(t *testing.T) {
	set, err := authority.New(authority.Config{Host: []authority.ID{"tickets.open"}, Layers: []authority.Layer{{ID: "ops", Kind: authority.KindAuthority,
		Dimensions: map[authority.Dimension]*authority.Rules{authority.DimTools: {Default: authority.Deny,
			Allow: []authority.Rule{{ID: "ops.tickets", Value: "tickets.open", Approval: authority.ApprovalRequired}}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	store := ledger.NewMemoryStore()
	tool := &keyedTool{}
	turns := []model.Response{calls(call("k1", "tickets_open", `{}`)), doneTurn}
	ds := &dyingStore{Store: store}
	rt, err := NewRuntime(RuntimeOptions{Model: &turnModel{turns: turns}, Authority: set, Catalogs: []ToolCatalog{tool}, Store: ds})
	if err != nil {
		t.Fatal(err)
	}
	ap := &recordingApprover{answer: approval.AllowOnce, onAsk: func() { ds.dead.Store(true) }}
	task, err := rt.StartTask(context.Background(), TaskRequest{Input: "open a ticket", Approver: ap})
	if err != nil {
		t.Fatal(err)
	}
	task.Wait()
	rt.Close()
	rep, err := ledger.RecoverTask(context.Background(), store, task.ID())
	if err != nil || len(rep.Retryable) != 1 || len(tool.keys) != 0 {
		t.Fatalf("before the resume: %v, retryable %+v, keys %v", err, rep.Retryable, tool.keys)
	}
	key := rep.Retryable[0].IdempotencyKey

	rt, err = NewRuntime(RuntimeOptions{Model: &turnModel{turns: []model.Response{doneTurn}}, Authority: set, Catalogs: []ToolCatalog{tool}, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	resumed, err := rt.ResumeTask(context.Background(), task.ID(), ResumeRequest{Approver: &recordingApprover{answer: approval.AllowOnce}})
	if err != nil {
		t.Fatal(err)
	}
	if obj := resumed.Wait(); obj.Outcome.Status != event.StatusCompleted {
		t.Fatalf("outcome %+v", obj.Outcome)
	}
	if !slices.Equal(tool.keys, []string{key}) {
		t.Fatalf("the tool saw keys %v, want once the original %s", tool.keys, key)
	}
}
