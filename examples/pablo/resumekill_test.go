package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestKillWhileAnApprovalWaitsLeavesTheCallRetryable: a call that needs an
// approval is admitted durably before the approver is asked (the runtime
// flushes before a wait that outlives its say), so a host killed while the
// question is open leaves the call retryable: admitted, never dispatched,
// its effect absent.
func TestKillWhileAnApprovalWaitsLeavesTheCallRetryable(t *testing.T) {
	bin, counter := crashBinaries(t)
	c := newCrashTask(t, counter, "[options.approvals]\nfilesystem_write = \"required\"\n")
	c.args = []string{"--approve", "fs.write"}
	store := filepath.Join(c.dir, "ledger.db")
	c.killAt(t, bin, store, "after-admit:tool:fs.write:1")
	rep := c.recover(t, bin, store)
	if len(rep.Tasks) != 1 {
		t.Fatalf("want one task: %+v", rep)
	}
	task := rep.Tasks[0]
	if len(task.Retryable) != 1 || task.Retryable[0].Name != "fs.write" || task.Retryable[0].IdempotencyKey == "" {
		t.Fatalf("want the fs.write waiting for its approval retryable, with its key: %+v", task)
	}
	if e := c.effects(t); e.out != "" {
		t.Fatalf("a call that was never dispatched wrote %q", e.out)
	}
}

// TestResumeAsksAgainTheApprovalTheDeadHostWaitedOn: the host is killed
// while the root's fs.write waits for its approval (admitted, never
// dispatched: retryable). On resume the call is decided again under the
// deployment and approver the resuming host has, and the question is
// asked again, bound to the same call (its request, call ID, arguments
// digest and idempotency key), never answered from the dead host's state:
// with an approver that allows it, the write happens once under the
// original key; with no approver it is denied (no_channel) and nothing is
// written; with fs.write revoked from the deployment meanwhile, it is
// denied by the configuration and nothing is written.
func TestResumeAsksAgainTheApprovalTheDeadHostWaitedOn(t *testing.T) {
	bin, counter := crashBinaries(t)
	for _, tc := range []struct {
		name     string
		args     []string
		revoke   bool
		answer   string // the approval's final answer
		status   string // the call's
		written  bool
		resolved bool // the task completes
	}{
		{name: "Allowed", args: []string{"--approve", "fs.write"}, answer: "allow_once", status: "completed", written: true, resolved: true},
		{name: "NoApprover", answer: "no_channel", status: "policy_denied"},
		{name: "Revoked", args: []string{"--approve", "fs.write"}, revoke: true, status: "policy_denied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newCrashTask(t, counter, "[options.approvals]\nfilesystem_write = \"required\"\n")
			c.args = []string{"--approve", "fs.write"}
			store := filepath.Join(c.dir, "ledger.db")
			c.killAt(t, bin, store, "after-admit:tool:fs.write:1")
			rep := c.recover(t, bin, store)
			task := rep.Tasks[0]
			if len(task.Retryable) != 1 || task.Retryable[0].Name != "fs.write" {
				t.Fatalf("want the waiting fs.write retryable: %+v", task)
			}
			asked, n := rootWrite(c.approvalsOf(t, bin, store, task.TaskID), task.RootAgentID)
			if n != 1 || asked.Answer != "" || asked.CallID != task.Retryable[0].CallID {
				t.Fatalf("want one open approval of the waiting call: %+v (%d)", asked, n)
			}
			c.args = tc.args
			if tc.revoke {
				b, _ := os.ReadFile(c.cfg)
				os.WriteFile(c.cfg, []byte(strings.Replace(string(b), "[options.filesystem]\nwrite = true", "[options.filesystem]\nwrite = false", 1)), 0o600)
			}
			_, obj := c.resume(t, bin, store, task.TaskID)
			if !slices.Equal(obj.Resume.Retried, []string{task.Retryable[0].CallID}) {
				t.Errorf("the resume retried %v, want the waiting call", obj.Resume.Retried)
			}
			if (obj.Outcome.Status == "completed") != tc.resolved {
				t.Errorf("resumed task: %s", obj.raw)
			}
			final, n := rootWrite(c.approvalsOf(t, bin, store, task.TaskID), task.RootAgentID)
			if n != 1 || final.RequestID != asked.RequestID || final.CallID != asked.CallID || final.ArgumentsDigest != asked.ArgumentsDigest || final.IdempotencyKey != task.Retryable[0].IdempotencyKey {
				t.Errorf("the approval after the resume is not the same call's: %+v (%d), asked before %+v", final, n, asked)
			}
			if final.Answer != tc.answer || final.CallStatus != tc.status {
				t.Errorf("the approval ended %q with the call %q, want %q and %q", final.Answer, final.CallStatus, tc.answer, tc.status)
			}
			if e := c.effects(t); (e.out == "one\n") != tc.written || (e.out != "" && e.out != "one\n") {
				t.Errorf("out.txt holds %q after the resume; written: %v", e.out, tc.written)
			}
		})
	}
}

// TestResumeHonoursOnceAnAnswerGivenBeforeTheCrash: the root's fs.write
// was approved and its write happened, and the host was killed before the
// call settled. The answer is in the ledger with the dispatch; a resume
// under a host with no approver at all neither asks again nor runs the
// write again: the call is an unknown outcome, its approval answered once.
func TestResumeHonoursOnceAnAnswerGivenBeforeTheCrash(t *testing.T) {
	bin, counter := crashBinaries(t)
	c := newCrashTask(t, counter, "[options.approvals]\nfilesystem_write = \"required\"\n")
	c.args = []string{"--approve", "fs.write"}
	store := filepath.Join(c.dir, "ledger.db")
	c.killAt(t, bin, store, "before-settle:tool:fs.write:1")
	rep := c.recover(t, bin, store)
	task := rep.Tasks[0]
	before, _ := rootWrite(c.approvalsOf(t, bin, store, task.TaskID), task.RootAgentID)
	if before.Answer != "allow_once" || len(task.Unknown) != 1 {
		t.Fatalf("want the approved fs.write unknown, its answer kept: %+v %+v", before, task)
	}
	c.args = nil
	_, obj := c.resume(t, bin, store, task.TaskID)
	if !slices.Equal(obj.Resume.Unknown, []string{before.CallID}) || len(obj.Resume.Retried) != 0 {
		t.Errorf("the resume's classes: %+v, want the approved call unknown", obj.Resume)
	}
	after, n := rootWrite(c.approvalsOf(t, bin, store, task.TaskID), task.RootAgentID)
	if n != 1 || after.RequestID != before.RequestID || after.Answer != "allow_once" {
		t.Errorf("the approval after the resume: %+v (%d of them), want the one answer given before the crash", after, n)
	}
	if e := c.effects(t); e.out != "one\n" {
		t.Errorf("out.txt holds %q, want the one write made before the crash", e.out)
	}
}

// TestResumeKeepsASettledChildSettled: the host is killed after the child
// finished (its terminal record is a barrier) while the root's wait for it
// was being settled. The resume runs no agent again: the child keeps its
// outcome and its completed write, no other child is started, and its
// file is written once; the root's wait, an unknown outcome, is reported
// to the model, which finishes.
func TestResumeKeepsASettledChildSettled(t *testing.T) {
	bin, counter := crashBinaries(t)
	c := newCrashTask(t, counter)
	store := filepath.Join(c.dir, "ledger.db")
	c.killAt(t, bin, store, "before-settle:tool:subagent:2")
	rep := c.recover(t, bin, store)
	task := rep.Tasks[0]
	var child string
	for _, a := range task.Agents {
		if a.ParentID != "" {
			if child != "" || a.Outcome == nil || a.Outcome.Status != "completed" {
				t.Fatalf("want one settled child at the kill: %+v", task.Agents)
			}
			child = a.AgentID
		}
	}
	_, childWrite := rep.class(func(c recoveredRef) bool { return c.AgentID == child && c.Name == "fs.write" })
	_, obj := c.resume(t, bin, store, task.TaskID)
	if obj.Outcome.Status != "completed" {
		t.Fatalf("resumed: %s", obj.raw)
	}
	after := c.recover(t, bin, store)
	var children int
	for _, a := range after.Tasks[0].Agents {
		if a.ParentID == "" {
			continue
		}
		children++
		if a.AgentID != child || a.Outcome == nil || a.Outcome.Status != "completed" {
			t.Errorf("after the resume the child is %+v, want %s completed as it was", a, child)
		}
	}
	if children != 1 {
		t.Errorf("%d children after the resume, want the one that settled before the crash", children)
	}
	class, w := after.class(func(c recoveredRef) bool { return c.AgentID == child && c.Name == "fs.write" })
	if class != "completed" || w.Result != childWrite.Result || w.CallID != childWrite.CallID {
		t.Errorf("the child's write is %s %+v after the resume, was %+v", class, w, childWrite)
	}
	if e := c.effects(t); e.child != "two\n" {
		t.Errorf("child.txt holds %q", e.child)
	}
}

// TestResumeDeniesAToolRevokedSinceTheCrash: the host is killed after the
// model proposed the MCP call and before the call's dispatch was durable,
// and the MCP server is removed from the deployment before the resume.
// The model call that was in flight is sent again and charged again (ten
// model calls where an uninterrupted run makes nine), the resume records
// that it runs under another fingerprint, and the MCP call the model
// proposes again is decided under the new deployment: denied, the server
// never sees a key, and the task goes on to complete.
func TestResumeDeniesAToolRevokedSinceTheCrash(t *testing.T) {
	bin, counter := crashBinaries(t)
	c := newCrashTask(t, counter)
	store := filepath.Join(c.dir, "ledger.db")
	c.killAt(t, bin, store, "before-dispatch:tool:mcp/counter/bump:1")
	rep := c.recover(t, bin, store)
	b, err := os.ReadFile(c.cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg, _, _ := strings.Cut(string(b), "[options.mcp.servers.counter]")
	if err := os.WriteFile(c.cfg, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	_, obj := c.resume(t, bin, store, rep.Tasks[0].TaskID)
	if obj.Outcome.Status != "completed" {
		t.Fatalf("resumed: %s", obj.raw)
	}
	if obj.Resume.ResentModelCalls != 1 || obj.Accounting.ModelCalls != "10" {
		t.Errorf("the model call in flight: resent %d, %s model calls charged; want it resent once and charged again (10)", obj.Resume.ResentModelCalls, obj.Accounting.ModelCalls)
	}
	if obj.Resume.Fingerprint == "" || obj.Resume.ResumedUnder == "" || obj.Resume.Fingerprint == obj.Resume.ResumedUnder {
		t.Errorf("the resume does not record the changed deployment: %s", obj.raw)
	}
	after := c.recover(t, bin, store)
	class, call := after.class(func(r recoveredRef) bool {
		return r.AgentID == after.Tasks[0].RootAgentID && r.Name == "mcp/counter/bump"
	})
	if class != "completed" || call.Status != "policy_denied" {
		t.Errorf("the revoked MCP call is %s %+v, want it denied", class, call)
	}
	e := c.effects(t)
	if len(e.calls) != 0 {
		t.Errorf("the MCP server removed from the deployment was called: %v", e.calls)
	}
	if e.out != "one\n" || e.appended != 1 || e.child != "two\n" {
		t.Errorf("the other effects: %+v, want each once", e)
	}
}
