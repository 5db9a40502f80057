package pablo

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pabloagent/pablo/approval"
	"github.com/pabloagent/pablo/children"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/ledger/outcome"
	"github.com/pabloagent/pablo/model"
)

// treeModel is a root that spawns one child and waits for it (again, when
// the wait's outcome is unknown) and a child that writes two files, one a
// turn. It counts the child's requests by the tool results they carry.
type treeModel struct {
	mu sync.Mutex
	// childTurns are the numbers of tool results each of the child's
	// requests carried, in order.
	childTurns []int
	// spawned, when set, holds the child's first turn until it is closed
	// (when the root's spawn call has settled), so a kill at the child's
	// first write finds the spawn's result recorded.
	spawned chan struct{}
}

const childTask = "write the two child files"

var agentIDIn = regexp.MustCompile(`"agent_id":"([^"]+)"`)

func (*treeModel) Info() model.Info { return model.Info{Provider: "test", Model: "tree"} }

func (m *treeModel) Generate(_ context.Context, req *model.Request, _ func(string) error) (*model.Response, error) {
	var results []string
	for _, msg := range req.Messages {
		if msg.Role == model.RoleTool {
			results = append(results, msg.Content)
		}
	}
	if req.Messages[0].Content == childTask {
		m.mu.Lock()
		m.childTurns = append(m.childTurns, len(results))
		m.mu.Unlock()
		switch len(results) {
		case 0:
			if m.spawned != nil {
				select {
				case <-m.spawned:
				case <-time.After(30 * time.Second): // the kill below then fails the test
				}
			}
			r := calls(call("c1", "fs_write", `{"path":"child1.txt","text":"one\n","expected_revision":null}`))
			return &r, nil
		case 1:
			r := calls(call("c2", "fs_write", `{"path":"child2.txt","text":"two\n","expected_revision":null}`))
			return &r, nil
		}
		return &model.Response{Text: "child done", FinishReason: model.FinishStop}, nil
	}
	if len(results) == 0 {
		r := calls(call("s", "subagent", `{"action":"spawn","request":{"input":"`+childTask+`","capabilities":{"tools":["fs.write"]}}}`))
		return &r, nil
	}
	last := results[len(results)-1]
	if strings.Contains(last, `"settled":[{`) {
		return &doneTurn, nil
	}
	id := agentIDIn.FindStringSubmatch(results[0])
	if id == nil {
		return &model.Response{Text: "no spawn result", FinishReason: model.FinishStop}, nil
	}
	r := calls(call("w", "subagent", `{"action":"wait","agent_ids":["`+id[1]+`"],"mode":"all","timeout_ms":60000}`))
	return &r, nil
}

// crashInTheChild runs the tree and kills its host once the child's first
// write settled (the child starts writing only once the root's spawn call
// settled, so the child's request is in its parent's records), and
// returns the task ID and the child's agent ID.
func crashInTheChild(t *testing.T, f *resumeFixture) (string, string) {
	t.Helper()
	var write, spawn string // the child's first write and the root's spawn, by agent and call ID
	m := &treeModel{spawned: make(chan struct{})}
	var once sync.Once
	id := f.crash(m, killAt(true, func(c *ledger.CallRecord) bool {
		// A settled record names its call by ID only.
		if c.Name == "subagent" && c.State == ledger.CallAdmitted && spawn == "" {
			spawn = c.AgentID + "/" + c.CallID
		}
		if c.State == ledger.CallSettled && c.AgentID+"/"+c.CallID == spawn {
			once.Do(func() { close(m.spawned) })
		}
		if c.Name == "fs.write" && c.State == ledger.CallAdmitted && write == "" {
			write = c.AgentID + "/" + c.CallID
		}
		return c.State == ledger.CallSettled && c.AgentID+"/"+c.CallID == write
	}))
	rep := f.report(id)
	var child string
	for _, a := range rep.Agents {
		if a.ParentID != "" {
			if a.Outcome != nil {
				t.Fatalf("the child settled before the kill: %+v", a.Outcome)
			}
			child = a.AgentID
		}
	}
	if child == "" {
		t.Fatalf("no child at the kill: %+v", rep.Agents)
	}
	return id, child
}

// A child running when its host died is continued by the resume from its
// own records, as the root is: under its agent ID, its settled write kept
// (the file written once, its result given back to its model, which is
// not asked that turn again), its next write run, its outcome completed;
// the root's wait, unknown, is reported to the root's model, whose second
// wait sees the child settle.
func TestResumeContinuesARunningChildFromItsRecords(t *testing.T) {
	f := newResumeFixture(t, fsWrite+"[options.children]\nenabled = true\n")
	id, child := crashInTheChild(t, f)
	m := &treeModel{}
	obj, err := f.resume(m, id, ResumeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if obj.Outcome.Status != "completed" {
		t.Fatalf("resumed: %+v", obj.Outcome)
	}
	for _, name := range []string{"child1.txt", "child2.txt"} {
		if b, err := os.ReadFile(filepath.Join(f.ws, name)); err != nil || len(b) == 0 {
			t.Errorf("%s: %q %v", name, b, err)
		}
	}
	if len(m.childTurns) != 2 || m.childTurns[0] != 1 || m.childTurns[1] != 2 {
		t.Errorf("the resumed child's requests carried %v tool results, want [1 2]: its first turn is rebuilt, not asked again", m.childTurns)
	}
	rep := f.report(id)
	var children int
	for _, a := range rep.Agents {
		if a.ParentID == "" {
			continue
		}
		children++
		if a.AgentID != child || a.Outcome == nil || a.Outcome.Status != outcome.Completed {
			t.Errorf("child after the resume: %s %+v, want %s completed", a.AgentID, a.Outcome, child)
		}
	}
	if children != 1 {
		t.Errorf("%d children after the resume, want the one continued", children)
	}
	writes := map[string]int{}
	for _, c := range rep.Completed {
		if c.AgentID == child && c.Kind == ledger.ToolCallKind {
			writes[c.Status]++
		}
	}
	if writes[string(outcome.ToolCompleted)] != 2 || len(writes) != 1 {
		t.Errorf("the child's calls after the resume: %v, want its two writes completed once each", writes)
	}
	if len(rep.Retryable) != 0 || rep.Outcome == nil {
		t.Errorf("the resumed task leaves work open: %+v", rep)
	}
}

// The child's authority is recomputed from its parent's on resume: the
// deployment denies fs.write since the stop, so the parent cannot hand it
// on, and the child, whose request named it, is not continued: it settles
// cancelled saying why, and its parent's wait sees it so.
func TestResumeRecomputesAChildsAuthority(t *testing.T) {
	f := newResumeFixture(t, fsWrite+"[options.children]\nenabled = true\n")
	id, child := crashInTheChild(t, f)
	f.write(fsWrite + "[options.children]\nenabled = true\n[[authority]]\nid = \"ops\"\n[authority.policy.tools]\ndefault = \"allow\"\ndeny = [{ id = \"ops.nowrite\", value = \"fs.write\" }]\n")
	if _, err := f.resume(&treeModel{}, id, ResumeRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "child2.txt")); !os.IsNotExist(err) {
		t.Fatalf("the child wrote under a revoked authority (stat: %v)", err)
	}
	for _, a := range f.report(id).Agents {
		if a.AgentID == child && (a.Outcome == nil || a.Outcome.Status != outcome.Cancelled || !strings.Contains(a.Outcome.Reason, "fs.write")) {
			t.Errorf("child after the resume: %+v, want it cancelled for the write its parent no longer holds", a.Outcome)
		}
	}
	if n := writesOf(f, id, child); n != 1 {
		t.Errorf("the child's completed writes: %d, want the one before the stop", n)
	}
}

// writesOf counts the completed writes of agent in task id.
func writesOf(f *resumeFixture, id, agent string) int {
	n := 0
	for _, c := range f.report(id).Completed {
		if c.AgentID == agent && c.Name == "fs.write" && c.Status == string(outcome.ToolCompleted) {
			n++
		}
	}
	return n
}

// A child's spawn that needs approval when it is decided again on resume
// (options.approvals requires one for subagent since the stop) is asked
// through the resume's approver, bound to the spawn: rejected, or with no
// approver, the child is not continued (its second write never runs) and
// settles cancelled naming the rule that asked.
func TestResumeAsksAboutAChildsSpawnThatNowNeedsApproval(t *testing.T) {
	for _, ap := range []*recordingApprover{{answer: approval.Reject}, nil} {
		f := newResumeFixture(t, fsWrite+"[options.children]\nenabled = true\n")
		id, child := crashInTheChild(t, f)
		f.write(fsWrite + "[options.children]\nenabled = true\n[options.approvals]\nsubagent = \"required\"\n")
		req := ResumeRequest{}
		if ap != nil {
			req.Approver = ap
		}
		if _, err := f.resume(&treeModel{}, id, req); err != nil {
			t.Fatal(err)
		}
		if ap != nil && (len(ap.asked) != 1 || ap.asked[0].Tool != "subagent" || ap.asked[0].Delegation == nil) {
			t.Errorf("the approver was asked %+v, want once about the child's spawn", ap.asked)
		}
		if _, err := os.Stat(filepath.Join(f.ws, "child2.txt")); !os.IsNotExist(err) {
			t.Errorf("the child ran on without its spawn's approval (stat: %v)", err)
		}
		for _, a := range f.report(id).Agents {
			if a.AgentID == child && (a.Outcome == nil || a.Outcome.Status != outcome.Cancelled || !strings.Contains(a.Outcome.Reason, "options.approvals.subagent")) {
				t.Errorf("child after the resume: %+v, want it cancelled naming the rule", a.Outcome)
			}
		}
		if n := writesOf(f, id, child); n != 1 {
			t.Errorf("the child's completed writes: %d, want the one before the stop", n)
		}
		want := "approval.no_channel"
		if ap != nil {
			want = "approval.reject"
		}
		if got := approvalSteps(t, f, id); !strings.Contains(got, "event approval.requested") || !strings.Contains(got, want) {
			t.Errorf("the spawn's approval as recorded: %s, want its request and %s", got, want)
		}
	}
	// Allowed, the child goes on from its records.
	f := newResumeFixture(t, fsWrite+"[options.children]\nenabled = true\n")
	id, _ := crashInTheChild(t, f)
	f.write(fsWrite + "[options.children]\nenabled = true\n[options.approvals]\nsubagent = \"required\"\n")
	ap := &recordingApprover{answer: approval.AllowOnce}
	obj, err := f.resume(&treeModel{}, id, ResumeRequest{Approver: ap})
	if err != nil {
		t.Fatal(err)
	}
	if obj.Outcome.Status != "completed" || len(ap.asked) != 1 {
		t.Errorf("allowed: %+v after %d questions", obj.Outcome, len(ap.asked))
	}
	if _, err := os.Stat(filepath.Join(f.ws, "child2.txt")); err != nil {
		t.Errorf("the allowed child did not go on: %v", err)
	}
}

// approvalSteps lists task id's approval events and approval decisions
// as its ledger records them, one "event TYPE" or "decision RULE" each.
func approvalSteps(t *testing.T, f *resumeFixture, id string) string {
	t.Helper()
	b, err := ledger.OpenBolt(f.store, ledger.BoltOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	recs, err := b.Records(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range recs {
		switch {
		case r.Kind == ledger.RecordEvent && strings.HasPrefix(r.Event.Type, "approval."):
			out = append(out, "event "+r.Event.Type)
		case r.Kind == ledger.RecordDecision && r.Decision.Decision.Layer == "approval":
			out = append(out, "decision "+r.Decision.Decision.RuleID)
		}
	}
	return strings.Join(out, ", ")
}

// queueModel is a root that spawns two children in one turn, the second
// queued behind the first (one active child at a time), then waits for
// both (again, when the wait's outcome is unknown) and ends with the
// wait's result. Its first child is treeModel's.
type queueModel struct {
	treeModel
}

const queuedTask = "write the queued child's file"

func (m *queueModel) Generate(ctx context.Context, req *model.Request, send func(string) error) (*model.Response, error) {
	var results []string
	for _, msg := range req.Messages {
		if msg.Role == model.RoleTool {
			results = append(results, msg.Content)
		}
	}
	switch {
	case req.Messages[0].Content == childTask:
		return m.treeModel.Generate(ctx, req, send)
	case req.Messages[0].Content == queuedTask:
		if len(results) == 0 {
			r := calls(call("q", "fs_write", `{"path":"queued.txt","text":"q\n","expected_revision":null}`))
			return &r, nil
		}
		return &doneTurn, nil
	case len(results) == 0:
		r := calls(call("s1", "subagent", `{"action":"spawn","request":{"input":"`+childTask+`","capabilities":{"tools":["fs.write"]}}}`),
			call("s2", "subagent", `{"action":"spawn","request":{"input":"`+queuedTask+`","capabilities":{"tools":["fs.write"]}}}`))
		return &r, nil
	case len(results) == 2 || strings.Contains(results[len(results)-1], `"status":"unknown_outcome"`):
		// The wait again when the host stopped during the first.
		var ids []string
		for _, r := range results[:2] {
			if id := agentIDIn.FindStringSubmatch(r); id != nil {
				ids = append(ids, `"`+id[1]+`"`)
			}
		}
		r := calls(call("w", "subagent", `{"action":"wait","agent_ids":[`+strings.Join(ids, ",")+`],"mode":"all","timeout_ms":60000}`))
		return &r, nil
	}
	return &model.Response{Text: results[len(results)-1], FinishReason: model.FinishStop}, nil
}

// A child whose spawn its parent's records hold but which never started
// (queued behind its sibling when the host died) is decided again on
// resume like a running one; refused (its spawn's approval rejected, or
// no approver to ask), it does not start, and it is not left unknown: the
// ledger lists it cancelled naming the rule, and its parent's wait sees
// it settled so, as it sees its running sibling.
func TestResumeSettlesANeverStartedChildItsSpawnRefuses(t *testing.T) {
	for _, ap := range []*recordingApprover{{answer: approval.Reject}, nil} {
		f := newResumeFixture(t, fsWrite+"[options.children]\nenabled = true\n")
		f.capacity = &children.Capacity{Active: 1}
		var write string
		spawns := map[string]bool{}
		m := &queueModel{treeModel{spawned: make(chan struct{})}}
		id := f.crash(m, killAt(true, func(c *ledger.CallRecord) bool {
			if c.Name == "subagent" && c.State == ledger.CallAdmitted {
				spawns[c.AgentID+"/"+c.CallID] = false
			}
			if _, ok := spawns[c.AgentID+"/"+c.CallID]; ok && c.State == ledger.CallSettled {
				spawns[c.AgentID+"/"+c.CallID] = true
				if len(spawns) == 2 && spawns[c.AgentID+"/call_1_1"] && spawns[c.AgentID+"/call_1_2"] {
					close(m.spawned)
				}
			}
			if c.Name == "fs.write" && c.State == ledger.CallAdmitted && write == "" {
				write = c.AgentID + "/" + c.CallID
			}
			return c.State == ledger.CallSettled && c.AgentID+"/"+c.CallID == write
		}))
		if n := len(f.report(id).Agents); n != 2 {
			t.Fatalf("agents at the kill: %+v, want the root and its running child (the other queued)", f.report(id).Agents)
		}
		f.write(fsWrite + "[options.children]\nenabled = true\n[options.approvals]\nsubagent = \"required\"\n")
		req := ResumeRequest{}
		if ap != nil {
			req.Approver = ap
		}
		obj, err := f.resume(&queueModel{}, id, req)
		if err != nil {
			t.Fatal(err)
		}
		if ap != nil && len(ap.asked) != 2 {
			t.Errorf("the approver was asked %d times, want once about each child's spawn", len(ap.asked))
		}
		if _, err := os.Stat(filepath.Join(f.ws, "queued.txt")); !os.IsNotExist(err) {
			t.Errorf("the queued child ran without its spawn's approval (stat: %v)", err)
		}
		rep := f.report(id)
		var kids int
		for _, a := range rep.Agents {
			if a.ParentID == "" {
				continue
			}
			kids++
			if a.Outcome == nil || a.Outcome.Status != outcome.Cancelled || !strings.Contains(a.Outcome.Reason, "options.approvals.subagent") {
				t.Errorf("child %s after the resume: %+v, want it cancelled naming the rule", a.AgentID, a.Outcome)
			}
		}
		if kids != 2 || rep.Outcome == nil || len(rep.Retryable) != 0 {
			t.Errorf("after the resume: %d children in the ledger, want both settled; its agents %+v, outcome %+v, retryable %+v", kids, rep.Agents, rep.Outcome, rep.Retryable)
		}
		out := ""
		if obj.Outcome.Output != nil {
			out = *obj.Outcome.Output
		}
		if obj.Outcome.Status != "completed" || strings.Count(out, `"status":"cancelled"`) != 2 || strings.Contains(out, "unknown_agent") {
			t.Errorf("the parent's wait after the resume: %+v %s, want both children settled cancelled", obj.Outcome, out)
		}
	}
}

// spawnAgainModel is treeModel's root that, once its child settled,
// spawns the same child again (the same arguments) and waits for it.
type spawnAgainModel struct {
	treeModel
}

func (m *spawnAgainModel) Generate(ctx context.Context, req *model.Request, send func(string) error) (*model.Response, error) {
	var results []string
	for _, msg := range req.Messages {
		if msg.Role == model.RoleTool {
			results = append(results, msg.Content)
		}
	}
	if req.Messages[0].Content == childTask || len(results) == 0 {
		return m.treeModel.Generate(ctx, req, send)
	}
	settled := 0
	for _, r := range results {
		if strings.Contains(r, `"settled":[{`) {
			settled++
		}
	}
	last := results[len(results)-1]
	switch {
	case settled == 1 && strings.Contains(last, `"settled":[{`):
		r := calls(call("s2", "subagent", `{"action":"spawn","request":{"input":"`+childTask+`","capabilities":{"tools":["fs.write"]}}}`))
		return &r, nil
	case settled == 1 && agentIDIn.MatchString(last) && strings.Contains(last, `"action":"spawn"`):
		r := calls(call("w2", "subagent", `{"action":"wait","agent_ids":["`+agentIDIn.FindStringSubmatch(last)[1]+`"],"mode":"all","timeout_ms":60000}`))
		return &r, nil
	case settled >= 2 || settled == 1:
		return &model.Response{Text: last, FinishReason: model.FinishStop}, nil
	}
	return m.treeModel.Generate(ctx, req, send)
}

// "Allow for this task" answered to a resumed child's spawn that now
// needs approval is the grant the same answer to the spawn call records:
// the model's later spawn of the same shape runs without asking (the
// ledger records it covered by the task's grant), as it would in a task
// never stopped.
func TestResumeAllowForTaskOnAReaskedSpawnIsAGrant(t *testing.T) {
	f := newResumeFixture(t, fsWrite+"[options.children]\nenabled = true\n")
	id, _ := crashInTheChild(t, f)
	f.write(fsWrite + "[options.children]\nenabled = true\n[options.approvals]\nsubagent = \"required\"\n")
	ap := &recordingApprover{answer: approval.AllowForTask}
	obj, err := f.resume(&spawnAgainModel{}, id, ResumeRequest{Approver: ap})
	if err != nil {
		t.Fatal(err)
	}
	if obj.Outcome.Status != "completed" {
		t.Fatalf("resumed: %+v", obj.Outcome)
	}
	kids := 0
	for _, a := range f.report(id).Agents {
		if a.ParentID != "" {
			kids++
		}
	}
	if len(ap.asked) != 1 || kids != 2 {
		t.Errorf("the approver was asked %d times for %d children, want once: the second spawn is covered by the answer for the task", len(ap.asked), kids)
	}
	if got := approvalSteps(t, f, id); !strings.Contains(got, "decision approval.allow_for_task") || !strings.Contains(got, "decision approval.covered_by_task_grant") {
		t.Errorf("the approvals as recorded: %s, want the answer for the task, then the spawn it covered", got)
	}
}
