package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pabloagent/pablo/approval"
	"github.com/pabloagent/pablo/children"
	"github.com/pabloagent/pablo/termtext"
)

// errTerminalClosed is the answer of a terminal that reached its end
// (the user typed ^D, or it hung up): an approver that could not answer,
// so the call is denied.
var errTerminalClosed = errors.New("pablo: the terminal closed before the approval was answered")

// maxAnswerTries bounds the unreadable answers to one question: past it
// the call is rejected, the safe answer.
const maxAnswerTries = 5

// ttyApprover is the approver of `pablo run` on a terminal: it shows the
// exact call that asks (request, agent, capability, effect, masked
// arguments and resources, what a subagent call delegates, the rule that
// asked) and reads one of the four
// answers from the terminal. One question is on the screen at a time: a
// child asking while another question waits waits its turn (its sibling
// runs on). Every shown value is escaped, so nothing a model wrote can
// drive the terminal.
type ttyApprover struct {
	mu  sync.Mutex // one question at a time
	tty *os.File   // the terminal, opened anew so a pending read can be interrupted
}

// ApprovalChannel implements pablo.ApprovalChannel.
func (*ttyApprover) ApprovalChannel() string { return "tty" }

// Close releases the terminal. No read is pending once Approve returned.
func (a *ttyApprover) Close() error { return a.tty.Close() }

// openTTYApprover returns the approver of a terminal stdin, or nil when
// stdin is not a terminal (no channel). The terminal is opened again, so
// its reads go through the runtime poller and a cancelled question's read
// can be interrupted and joined.
func openTTYApprover(stdin io.Reader) *ttyApprover {
	f, ok := stdin.(*os.File)
	if !ok || !isTerminal(f) {
		return nil
	}
	tty, err := os.OpenFile("/proc/self/fd/"+strconv.Itoa(int(f.Fd())), os.O_RDWR, 0)
	if err != nil {
		return nil
	}
	// A terminal the poller cannot watch could not be interrupted: no
	// channel rather than a question that could outlive its task.
	if tty.SetReadDeadline(time.Time{}) != nil {
		tty.Close()
		return nil
	}
	return &ttyApprover{tty: tty}
}

// Approve implements pablo.Approver.
func (a *ttyApprover) Approve(ctx context.Context, req approval.Request) (approval.Answer, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return approval.Reject, err
	}
	if _, err := io.WriteString(a.tty, approvalPrompt(req)); err != nil {
		return approval.Reject, err
	}
	for range maxAnswerTries {
		line, err := a.readLine(ctx)
		if err != nil {
			return approval.Reject, err
		}
		if answer, ok := parseAnswer(line); ok {
			fmt.Fprintf(a.tty, "pablo: %s: %s\n", termtext.Printable(req.ID), answer)
			return answer, nil
		}
		io.WriteString(a.tty, "pablo: not an answer. "+answerChoices)
	}
	io.WriteString(a.tty, "\npablo: no readable answer: rejected\n")
	return approval.Reject, nil
}

// readLine reads one line (a canonical-mode read returns at most one),
// or ends with ctx: the pending read is interrupted and joined before it
// returns, so no read of this question outlives it.
func (a *ttyApprover) readLine(ctx context.Context) (string, error) {
	type read struct {
		line string
		err  error
	}
	got := make(chan read, 1)
	go func() {
		var buf [512]byte
		n, err := a.tty.Read(buf[:])
		if n > 0 {
			err = nil
		} else if err == nil || errors.Is(err, io.EOF) {
			err = errTerminalClosed
		}
		got <- read{string(buf[:n]), err}
	}()
	select {
	case r := <-got:
		return r.line, r.err
	case <-ctx.Done():
		// Any past instant interrupts the read; nothing here is timed.
		a.tty.SetReadDeadline(time.Unix(1, 0))
		<-got
		a.tty.SetReadDeadline(time.Time{})
		io.WriteString(a.tty, "\npablo: the task ended before an answer: denied\n")
		return "", ctx.Err()
	}
}

// parseAnswer reads one answer: a letter or its word, any case but the
// letters', which are lower case.
func parseAnswer(line string) (approval.Answer, bool) {
	switch strings.TrimSpace(line) {
	case "o", "once", "allow once":
		return approval.AllowOnce, true
	case "t", "task", "allow for task", "allow for this task":
		return approval.AllowForTask, true
	case "r", "reject":
		return approval.Reject, true
	case "x", "reject for task", "reject for this task":
		return approval.RejectForTask, true
	}
	return "", false
}

// approvalPrompt is the question as the terminal shows it.
func approvalPrompt(req approval.Request) string {
	var b strings.Builder
	b.WriteString("\npablo: approval needed before this call runs\n")
	row := func(k, v string) { fmt.Fprintf(&b, "  %-11s%s\n", k, termtext.Printable(v)) }
	row("request", req.ID)
	row("agent", req.AgentID)
	row("call", req.CallID)
	row("capability", string(req.Tool))
	row("effect", string(req.Effect))
	row("arguments", string(req.Arguments))
	for _, r := range req.Resources {
		row("resource", string(r.Kind)+" "+r.Value)
	}
	if d := req.Delegation; d != nil {
		row("delegates", string(d.Action))
		if d.Remote != "" {
			row("remote", d.Remote)
		}
		if d.Action != children.ActionSpawnRemote {
			c := d.Capabilities
			row("tools", strings.Join(c.Tools, ", "))
			row("skills", strings.Join(c.Skills, ", "))
			row("servers", strings.Join(c.MCPServers, ", "))
			row("route", strings.Join(c.ModelRoute, ", "))
		}
		for _, h := range d.Handoffs {
			row("handoff", string(h.Kind)+" "+h.ResultID+" of "+h.SourceAgentID)
		}
		row("input", d.InputDigest+" ("+strconv.Itoa(d.InputBytes)+" bytes)")
	}
	by := req.Decision.ApprovalBy
	if by != nil {
		row("asked by", by.Layer+" rule "+by.RuleID)
	}
	b.WriteString("Allow? " + answerChoices)
	return b.String()
}

// answerChoices ends every question, asked or asked again.
const answerChoices = "o = allow once, t = allow for this task, r = reject, x = reject for this task: "
