package pablo

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/pabloagent/pablo/approval"
	"github.com/pabloagent/pablo/authority"
	"github.com/pabloagent/pablo/event"
	"github.com/pabloagent/pablo/ledger"
	"github.com/pabloagent/pablo/model"
)

// notRetainedWhy is what the ledger's not-retained marker says.
const notRetainedWhy = "the deployment's audit level for this tool is none, so the ledger did not retain the result"

// ledgerText is every record the store holds of task id, each as JSON
// and, for a stored result or an event's payload, also as itself, so a
// search sees content however it was escaped.
func ledgerText(t *testing.T, store ledger.Store, id string) string {
	t.Helper()
	recs, err := store.Records(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, r := range recs {
		j, _ := json.Marshal(r)
		b.Write(j)
		if r.Result != nil {
			b.Write(r.Result.Data)
			var s string
			if json.Unmarshal(r.Result.Data, &s) == nil {
				b.WriteString(s)
			}
		}
		b.Write(r.Event.Payload)
	}
	return b.String()
}

// TestAuditLevelsSideBySideInTheTraceAndTheLedger runs one task three
// times, fs.list at each audit level, and compares what the trace and
// the ledger keep of its call: at none the trace keeps its name and
// status and the ledger the not-retained marker in place of its
// arguments and result (its digests, sizes and status kept); at
// metadata the trace keeps the result's shape and the ledger the
// content a resume gives back; at content both keep the content.
func TestAuditLevelsSideBySideInTheTraceAndTheLedger(t *testing.T) {
	t.Parallel()
	script := `{"turns":[{"tool_calls":[{"id":"c1","name":"fs_list","arguments":{"path":"listed"}}]},{"text":["done"]}]}`
	type kept struct {
		traceArgs, traceResult string
		ledger                 string
		call                   ledger.CallRecord
	}
	got := map[string]kept{}
	for _, level := range []string{"none", "metadata", "content"} {
		dir := t.TempDir()
		ws := filepath.Join(dir, "work")
		os.MkdirAll(filepath.Join(ws, "listed"), 0o700)
		os.WriteFile(filepath.Join(ws, "listed", "quarterly-figures.txt"), []byte("x"), 0o600)
		d := scriptDeployment(t, dir, ws, script, "[options.shell]\nenabled = false\n[options.trace]\npath = { base = \"source\", path = \"trace.jsonl\" }\n"+
			"[options.audit]\ncapabilities = { \"fs.list\" = \""+level+"\" }\n")
		store := ledger.NewMemoryStore()
		sink, closer, err := d.TraceSink("")
		if err != nil {
			t.Fatal(err)
		}
		rt, err := d.NewRuntime(context.Background(), HostOptions{Store: store, Sink: sink})
		if err != nil {
			t.Fatal(err)
		}
		obj, events := runTask(t, rt, "list")
		rt.Close()
		closer.Close()
		if obj.Outcome.Status != event.StatusCompleted {
			t.Fatalf("%s: outcome %+v", level, obj.Outcome)
		}
		// The live events are the same at every level: the level is
		// about what is kept, not what the host's sink sees.
		for _, ev := range events {
			if ev.Type == event.ToolFinished && !strings.Contains(string(ev.Result), "quarterly-figures.txt") {
				t.Errorf("%s: the live tool.finished lacks the result: %s", level, ev.Result)
			}
		}
		var k kept
		raw, _ := os.ReadFile(filepath.Join(dir, "trace.jsonl"))
		for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
			var ev struct {
				Type   string          `json:"type"`
				Call   json.RawMessage `json:"call"`
				Result json.RawMessage `json:"result"`
			}
			json.Unmarshal([]byte(line), &ev)
			switch ev.Type {
			case "tool.started":
				var c struct {
					Arguments json.RawMessage `json:"arguments"`
				}
				json.Unmarshal(ev.Call, &c)
				k.traceArgs = string(c.Arguments)
			case "tool.finished":
				k.traceResult = string(ev.Result)
			}
		}
		k.ledger = ledgerText(t, store, *obj.RunID)
		recs, _ := store.Records(context.Background(), *obj.RunID)
		for _, r := range recs {
			if r.Kind == ledger.RecordCall && r.Call.Kind == ledger.ToolCallKind {
				c := *r.Call
				if c.State == ledger.CallAdmitted {
					k.call.ArgumentsDigest, k.call.InputBytes = c.ArgumentsDigest, c.InputBytes
				}
				if c.State == ledger.CallSettled {
					k.call.Status, k.call.OutputBytes, k.call.Result = c.Status, c.OutputBytes, c.Result
				}
			}
		}
		got[level] = k
	}

	// The trace.
	if k := got["none"]; k.traceArgs != "null" || k.traceResult != "null" {
		t.Errorf("none: the trace keeps arguments %s, result %s; want null, null", k.traceArgs, k.traceResult)
	}
	if k := got["metadata"]; k.traceArgs != "null" || k.traceResult == "null" || strings.Contains(k.traceResult, "quarterly-figures") {
		t.Errorf("metadata: the trace keeps arguments %s, result %s; want null and the result's shape", k.traceArgs, k.traceResult)
	}
	if k := got["content"]; !strings.Contains(k.traceArgs, "listed") || !strings.Contains(k.traceResult, "quarterly-figures.txt") {
		t.Errorf("content: the trace keeps arguments %s, result %s; want both", k.traceArgs, k.traceResult)
	}

	// The ledger.
	none := got["none"]
	for _, leak := range []string{"quarterly-figures", `\"path\":\"listed\"`, `"path":"listed"`} {
		if strings.Contains(none.ledger, leak) {
			t.Errorf("none: the ledger holds %s", leak)
		}
	}
	for _, marker := range []string{`"not_retained":{"audit_level":"none"}`, `\"not_retained\":{\"audit_level\":\"none\"}`, notRetainedWhy} {
		if !strings.Contains(none.ledger, marker) {
			t.Errorf("none: the ledger lacks the marker %s", marker)
		}
	}
	for _, level := range []string{"metadata", "content"} {
		k := got[level]
		if !strings.Contains(k.ledger, "quarterly-figures.txt") || !strings.Contains(k.ledger, `\"path\":\"listed\"`) || strings.Contains(k.ledger, "not_retained") {
			t.Errorf("%s: the ledger does not keep the call's content as a resume needs it", level)
		}
	}
	// What accounting and resume need is the same at every level: the
	// arguments' digest and size, the status and the result's size.
	for _, level := range []string{"none", "content"} {
		k, m := got[level].call, got["metadata"].call
		if k.ArgumentsDigest != m.ArgumentsDigest || k.InputBytes != m.InputBytes || k.Status != m.Status || k.OutputBytes != m.OutputBytes || k.Status != "completed" {
			t.Errorf("%s: the call's record %+v differs from metadata's %+v", level, k, m)
		}
	}
	if got["none"].call.Result == got["metadata"].call.Result || got["metadata"].call.Result != got["content"].call.Result {
		t.Errorf("the settlements' results: none %s, metadata %s, content %s; want the marker's at none, the result's otherwise",
			got["none"].call.Result, got["metadata"].call.Result, got["content"].call.Result)
	}
}

// stopsAfterSettledTool stands for a host killed right after the barrier
// that settles the task's first tool call: the call and its settlement
// are durable, nothing after them is.
type stopsAfterSettledTool struct {
	ledger.Store
	stopped atomic.Bool
}

func (s *stopsAfterSettledTool) Append(ctx context.Context, recs []ledger.Record) error {
	if s.stopped.Load() {
		return errors.New("the host stopped")
	}
	err := s.Store.Append(ctx, recs)
	for _, r := range recs {
		if r.Kind == ledger.RecordCall && r.Call.Kind == ledger.ToolCallKind && r.Call.State == ledger.CallSettled {
			s.stopped.Store(true)
		}
	}
	return err
}

// TestResumeOfACallWhoseResultWasNotRetained: fs.write at audit level
// none writes a note, and the host stops right after. The resumed task
// does not write again; its model gets the not-retained marker for the
// call (its arguments and result are nowhere in what it is sent), and
// the ledger's record of the result says why.
func TestResumeOfACallWhoseResultWasNotRetained(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws := filepath.Join(dir, "work")
	os.Mkdir(ws, 0o700)
	script := `{"turns":[{"tool_calls":[{"id":"w1","name":"fs_write","arguments":{"path":"note.txt","text":"confidential-draft\n","expected_revision":null}}]},{"text":["done"]}]}`
	d := scriptDeployment(t, dir, ws, script, "[options.shell]\nenabled = false\n[options.filesystem]\nwrite = true\n"+
		"[options.audit]\ncapabilities = { \"fs.write\" = \"none\" }\n")
	s, err := ParseScript([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	store := ledger.NewMemoryStore()
	first := &stopsAfterSettledTool{Store: store}
	rt, err := d.NewRuntime(context.Background(), HostOptions{Model: NewScriptModel(s), Store: first})
	if err != nil {
		t.Fatal(err)
	}
	task, err := rt.Start(context.Background(), "write the note")
	if err != nil {
		t.Fatal(err)
	}
	task.Wait()
	rt.Close()
	if !first.stopped.Load() {
		t.Fatal("the host never stopped")
	}
	os.WriteFile(filepath.Join(ws, "note.txt"), []byte("kept\n"), 0o600)

	mdl := &recordingModel{inner: NewScriptModel(s)}
	rt, err = d.NewRuntime(context.Background(), HostOptions{Model: mdl, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	resumed, err := rt.Resume(context.Background(), task.ID())
	if err != nil {
		t.Fatal(err)
	}
	obj := resumed.Wait()
	if obj.Outcome.Status != event.StatusCompleted || obj.Resume == nil || len(obj.Resume.Completed) != 1 {
		t.Fatalf("resumed %+v, resume %+v", obj.Outcome, obj.Resume)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "note.txt")); string(b) != "kept\n" {
		t.Fatalf("the settled write ran again: %q", b)
	}
	mdl.mu.Lock()
	reqs := mdl.reqs
	mdl.mu.Unlock()
	if len(reqs) != 1 {
		t.Fatalf("the resumed task made %d model requests, want 1", len(reqs))
	}
	var req struct {
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	json.Unmarshal([]byte(reqs[0]), &req)
	var toolMsg string
	for _, m := range req.Messages {
		if m.Role == "tool" {
			toolMsg = m.Content
		}
	}
	var marker struct {
		Status      string `json:"status"`
		NotRetained struct {
			AuditLevel   string `json:"audit_level"`
			ResultBytes  int    `json:"result_bytes"`
			ResultDigest string `json:"result_digest"`
			Message      string `json:"message"`
		} `json:"not_retained"`
	}
	if err := json.Unmarshal([]byte(toolMsg), &marker); err != nil || marker.Status != "completed" || marker.NotRetained.AuditLevel != "none" ||
		marker.NotRetained.ResultBytes == 0 || !strings.HasPrefix(marker.NotRetained.ResultDigest, "sha256:") || !strings.Contains(marker.NotRetained.Message, notRetainedWhy) {
		t.Fatalf("the model's tool message %q, want the not-retained marker", toolMsg)
	}
	if strings.Contains(reqs[0], "confidential-draft") {
		t.Errorf("the resumed model request holds the call's content: %s", reqs[0])
	}
	if l := ledgerText(t, store, task.ID()); strings.Contains(l, "confidential-draft") || !strings.Contains(l, notRetainedWhy) {
		t.Errorf("the ledger holds the content, or not the marker saying why")
	}
}

// streamingTool is a host tool that streams output before its result.
type streamingTool struct{ calls atomic.Int32 }

func (*streamingTool) Tools() []ToolSpec {
	return []ToolSpec{{ID: "notes.stream", Description: "Stream a note.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"note":{"type":"string"}},"required":["note"],"additionalProperties":false}`)}}
}

func (s *streamingTool) Call(ctx context.Context, call ToolInvocation) ToolResult {
	s.calls.Add(1)
	if out := ToolOutput(ctx); out != nil {
		out("stdout", []byte("streamed-chunk-of-the-note\n"))
	}
	return ToolCompleted(map[string]any{"text": "result-body-of-the-note"})
}

// noneFor is an audit-level function setting capability id at none and
// every other at metadata, as a deployment's options.audit would.
func noneFor(id string) func(string) string {
	return func(c string) string {
		if c == id {
			return "none"
		}
		return "metadata"
	}
}

// TestAuditNoneKeepsNoOutputOrApprovalArgumentsInTheLedger: a tool at
// audit level none that streams output and needs approval leaves
// neither its streamed text, its arguments (in its approval.requested
// event, its tool.started event and its model turn) nor its result in
// the ledger, while the host's sink and the approver see them all.
func TestAuditNoneKeepsNoOutputOrApprovalArgumentsInTheLedger(t *testing.T) {
	t.Parallel()
	set := notesNeedApproval(t)
	store := ledger.NewMemoryStore()
	var live strings.Builder
	var mu sync.Mutex
	opts := RuntimeOptions{Model: &turnModel{turns: []model.Response{calls(call("n1", "notes_stream", `{"note":"arguments-of-the-note"}`)), doneTurn}},
		Authority: set, Catalogs: []ToolCatalog{&streamingTool{}}, Store: store,
		Sink: func(ev event.Event) error {
			b, _ := json.Marshal(ev)
			mu.Lock()
			live.Write(b)
			mu.Unlock()
			return nil
		}}
	opts.auditLevel = noneFor("notes.stream")
	rt, err := NewRuntime(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ap := &recordingApprover{answer: approval.AllowOnce}
	task, err := rt.StartTask(context.Background(), TaskRequest{Input: "stream the note", Approver: ap})
	if err != nil {
		t.Fatal(err)
	}
	if obj := task.Wait(); obj.Outcome.Status != event.StatusCompleted {
		t.Fatalf("outcome %+v", obj.Outcome)
	}
	if len(ap.asked) != 1 || !strings.Contains(string(ap.asked[0].Arguments), "arguments-of-the-note") {
		t.Fatalf("the approver was asked %+v, want once with the arguments", ap.asked)
	}
	l := ledgerText(t, store, task.ID())
	mu.Lock()
	seen := live.String()
	mu.Unlock()
	for _, content := range []string{"arguments-of-the-note", "streamed-chunk-of-the-note", "result-body-of-the-note"} {
		if strings.Contains(l, content) {
			t.Errorf("the ledger holds %s", content)
		}
		if !strings.Contains(seen, content) {
			t.Errorf("the host's sink did not see %s", content)
		}
	}
	recs, _ := store.Records(context.Background(), task.ID())
	types := map[string]bool{}
	for _, r := range recs {
		if r.Kind == ledger.RecordEvent {
			types[r.Event.Type] = true
			if r.Event.Type == string(event.ApprovalRequested) && !strings.Contains(string(r.Event.Payload), `"arguments":{"not_retained":{"audit_level":"none"}}`) {
				t.Errorf("approval.requested in the ledger: %s", r.Event.Payload)
			}
		}
	}
	if !types[string(event.ToolOutput)] || !types[string(event.ApprovalRequested)] {
		t.Errorf("the ledger's events %v lack tool.output or approval.requested: the test tests nothing", types)
	}
}

// A call admitted at audit level none whose host stopped before it was
// sent is not sent by the resume: its arguments were not retained, so
// its model is answered arguments_not_retained and its tool never runs.
func TestResumeDoesNotSendACallWhoseArgumentsWereNotRetained(t *testing.T) {
	t.Parallel()
	set := notesNeedApproval(t)
	store := ledger.NewMemoryStore()
	tool := &streamingTool{}
	ds := &dyingStore{Store: store}
	opts := RuntimeOptions{Model: &turnModel{turns: []model.Response{calls(call("n1", "notes_stream", `{"note":"renew"}`)), doneTurn}}, Authority: set, Catalogs: []ToolCatalog{tool}, Store: ds}
	opts.auditLevel = noneFor("notes.stream")
	rt, err := NewRuntime(opts)
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

	mdl := &turnModel{turns: []model.Response{doneTurn}}
	opts = RuntimeOptions{Model: mdl, Authority: set, Catalogs: []ToolCatalog{tool}, Store: store}
	opts.auditLevel = noneFor("notes.stream")
	rt, err = NewRuntime(opts)
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
	if n := tool.calls.Load(); n != 0 {
		t.Fatalf("the tool ran %d times, want never", n)
	}
	reqs := mdl.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model requests", len(reqs))
	}
	msgs := reqs[0].Messages
	if last := msgs[len(msgs)-1]; last.Role != model.RoleTool || !strings.Contains(last.Content, "arguments_not_retained") {
		t.Fatalf("the model's last message %+v, want arguments_not_retained", last)
	}
	rep, err := ledger.RecoverTask(context.Background(), store, task.ID())
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range rep.Completed {
		found = found || c.Name == "notes.stream" && c.Error == "arguments_not_retained"
	}
	if !found {
		t.Errorf("no settlement records arguments_not_retained: %+v", rep.Completed)
	}
}

// Pablo's own answer to a call at audit level none that never left (its
// approver rejected it) holds nothing of the tool's: the ledger keeps it
// as the model saw it, not the not-retained marker.
func TestAuditNoneKeepsTheAnswerToACallNeverSent(t *testing.T) {
	t.Parallel()
	set := notesNeedApproval(t)
	store := ledger.NewMemoryStore()
	tool := &streamingTool{}
	opts := RuntimeOptions{Model: &turnModel{turns: []model.Response{calls(call("n1", "notes_stream", `{"note":"x"}`)), doneTurn}},
		Authority: set, Catalogs: []ToolCatalog{tool}, Store: store}
	opts.auditLevel = noneFor("notes.stream")
	rt, err := NewRuntime(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	task, err := rt.StartTask(context.Background(), TaskRequest{Input: "stream", Approver: &recordingApprover{answer: approval.Reject}})
	if err != nil {
		t.Fatal(err)
	}
	if obj := task.Wait(); obj.Outcome.Status != event.StatusCompleted || tool.calls.Load() != 0 {
		t.Fatalf("outcome %+v, %d calls", obj.Outcome, tool.calls.Load())
	}
	if l := ledgerText(t, store, task.ID()); !strings.Contains(l, "the approver rejected this call") || strings.Contains(l, notRetainedWhy) {
		t.Errorf("the ledger does not keep the rejection as the model saw it")
	}
}

// notesNeedApproval is an authority that allows notes.stream, each call
// asking its approver first (rule ops.notes).
func notesNeedApproval(t *testing.T) *authority.Set {
	t.Helper()
	set, err := authority.New(authority.Config{Host: []authority.ID{"notes.stream"}, Layers: []authority.Layer{{ID: "ops", Kind: authority.KindAuthority,
		Dimensions: map[authority.Dimension]*authority.Rules{authority.DimTools: {Default: authority.Deny,
			Allow: []authority.Rule{{ID: "ops.notes", Value: "notes.stream", Approval: authority.ApprovalRequired}}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	return set
}
