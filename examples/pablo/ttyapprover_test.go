package main

import (
	"strings"
	"testing"
	"unicode"

	"github.com/pabloagent/pablo"
)

// FuzzTerminalAnswer: whatever a terminal sends, the prompt's parser
// answers only with one of the four answers, and only for a line that is
// exactly one of their spellings; and nothing printable shows keeps a
// rune a terminal could act on.
func FuzzTerminalAnswer(f *testing.F) {
	for _, s := range []string{"o\n", "t", " r \n", "x", "allow for this task\n", "O", "yes", "", "\x1b[2J", "\u009b2J", "o\x00", "\xff\xfe", "reject\r\n"} {
		f.Add(s)
	}
	spellings := map[string]pablo.ApprovalAnswer{"o": pablo.ApprovalAllowOnce, "once": pablo.ApprovalAllowOnce, "allow once": pablo.ApprovalAllowOnce,
		"t": pablo.ApprovalAllowForTask, "task": pablo.ApprovalAllowForTask, "allow for task": pablo.ApprovalAllowForTask, "allow for this task": pablo.ApprovalAllowForTask,
		"r": pablo.ApprovalReject, "reject": pablo.ApprovalReject,
		"x": pablo.ApprovalRejectForTask, "reject for task": pablo.ApprovalRejectForTask, "reject for this task": pablo.ApprovalRejectForTask}
	f.Fuzz(func(t *testing.T, line string) {
		answer, ok := parseAnswer(line)
		want, spelled := spellings[strings.TrimSpace(line)]
		if ok != spelled || answer != want {
			t.Fatalf("parseAnswer(%q) = %q, %v; want %q, %v", line, answer, ok, want, spelled)
		}
		for _, r := range printable(line) {
			if r != ' ' && !unicode.IsPrint(r) {
				t.Fatalf("printable(%q) keeps %U", line, r)
			}
		}
	})
}

// TestPromptShowsTheExactCallEscaped: the prompt names every part of the
// request, and a terminal control in any of them is shown escaped.
func TestPromptShowsTheExactCallEscaped(t *testing.T) {
	req := pablo.ApprovalRequest{ID: "apr_1", AgentID: "agent\x1b]0;owned\x07", CallID: "c1", Tool: "shell.run", Effect: "execute",
		Arguments: []byte("{\"command\":\"rm \u009b2J\"}"), Resources: []pablo.Resource{{Kind: "executable", Value: "/bin/sh\u202e"}}}
	p := approvalPrompt(req)
	for _, w := range []string{"request    apr_1", `agent      agent\u001b]0;owned\u0007`, "call       c1", "capability shell.run", "effect     execute",
		`arguments  {"command":"rm \u009b2J"}`, `resource   executable /bin/sh\u202e`, answerChoices} {
		if !strings.Contains(p, w) {
			t.Errorf("the prompt lacks %q:\n%s", w, p)
		}
	}
	for _, r := range p {
		if r != '\n' && r != ' ' && !unicode.IsPrint(r) {
			t.Errorf("the prompt holds %U raw", r)
		}
	}
}
